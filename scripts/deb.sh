#!/bin/sh
# deb.sh: build the Debian package, mallocshim_VERSION_ARCH.deb, into the
# build directory, with dpkg-buildpackage and debhelper (debian/), from a
# clean copy of the distribution (`make distdir`, outside the tree), so that
# neither the tree's build products reach it nor its build touches them.
# Then lintian, which must find no error. Run it where the tree was
# configured (scripts/build.sh does that), or as `make deb`.
# Environment: DEB_BUILD_OPTIONS as dpkg-buildpackage takes it (nocheck to
# skip the suite in the package's build, parallel=N).
set -eu
srcdir=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f Makefile ]; then
    cd "$srcdir"
    sh scripts/build.sh >/dev/null
fi
die() { echo "deb.sh: $*" >&2; exit 1; }
for tool in dpkg-buildpackage dh lintian; do
    command -v "$tool" >/dev/null || die "$tool: not found (scripts/deps.sh installs it)"
done

version=$(sed -n 's/^AC_INIT(\[mallocshim\], \[\([^]]*\)\].*/\1/p' "$srcdir/configure.ac")
logged=$(dpkg-parsechangelog -l "$srcdir/debian/changelog" -S Version)
[ "$version" = "$logged" ] ||
    die "debian/changelog: its version is $logged, configure.ac's $version (add an entry: dch -v $version)"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
deb="mallocshim_${version}_${arch}.deb"

work=$(mktemp -d "${TMPDIR:-/tmp}/mallocshim-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
make -s distdir distdir="$work/mallocshim-$version" >/dev/null
# The caller's make (make deb, make check) passes nothing into the build.
(cd "$work/mallocshim-$version" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 ||
    { tail -n 40 "$work/build.log" >&2; die "dpkg-buildpackage failed (the last 40 lines above)"; }
cp "$work/$deb" .

# Errors fail; the warnings that stay are explained in
# debian/mallocshim.lintian-overrides, or listed here for a person to read.
lintian --fail-on error "$deb" >"$work/lintian.log" 2>&1 ||
    { cat "$work/lintian.log" >&2; die "lintian: errors in $deb"; }
sed 's/^/lintian: /' "$work/lintian.log"
echo "deb.sh: $deb"
