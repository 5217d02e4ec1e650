#!/bin/sh
# deb.sh: the Debian package as a host gets it: built by scripts/deb.sh
# (lintian finds no error), installed with apt, run from its installed
# paths, and purged, leaving the system as it was. It installs into the
# system, so it runs as root only (scripts/test.sh runs it after the suite
# with `make check TESTS=t/pkg/deb.sh`), and skips where the package is
# already installed or dpkg-buildpackage, apt-get or lintian is missing.
. "$TOP_SRCDIR/t/lib.sh"

for tool in dpkg-buildpackage apt-get lintian setpriv; do
    command -v "$tool" >/dev/null || { skip "the package" "$tool not found"; done_testing; exit $?; }
done
if [ "$(id -u)" -ne 0 ]; then
    skip "the package" "needs root: it installs and purges it"
    done_testing
    exit $?
fi
if dpkg-query -W -f='${Status}' mallocshim 2>/dev/null | grep -q 'installed'; then
    skip "the package" "mallocshim is installed here already"
    done_testing
    exit $?
fi

version=$(sed -n 's/^AC_INIT(\[mallocshim\], \[\([^]]*\)\].*/\1/p' "$TOP_SRCDIR/configure.ac")
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb="mallocshim_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb"
LIB=/usr/lib/$ma/libmallocshim.so
CONF=/etc/mallocshim.conf
# apt reads the file as _apt: a directory it may enter.
chmod 755 "$TMP"

# The files of the system a package can touch, to compare after the purge.
snapshot() {
    find /etc /usr /lib/systemd /var/lib/systemd /var/lib/dpkg/info -xdev 2>/dev/null | LC_ALL=C sort
}
install_deb() {
    apt-get install -y -q -o DPkg::Lock::Timeout=120 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        "$TMP/$deb" </dev/null >"$TMP/apt.log" 2>&1
}
purge_deb() {
    dpkg -L mallocshim >"$TMP/listed" 2>/dev/null
    apt-get purge -y -q -o DPkg::Lock::Timeout=120 mallocshim </dev/null >"$TMP/apt.log" 2>&1
}
# gone: every file the package listed is gone, and the system's files
# are those of before the install.
gone() {
    rc=0
    while read -r f; do
        if [ -e "$f" ] && [ ! -d "$f" ]; then echo "left: $f" >&2; rc=1; fi
    done <"$TMP/listed"
    snapshot >"$TMP/after"
    if ! diff "$TMP/before" "$TMP/after" >"$TMP/diff"; then
        sed 's/^/changed: /' "$TMP/diff" | head -n 20 >&2
        rc=1
    fi
    return $rc
}
# An admin's own /etc/mallocshim.conf, made outside dpkg, is kept aside for
# the test and put back at its end.
saved=""
if [ -e "$CONF" ]; then
    saved="$TMP/admin.conf"
    cp -p "$CONF" "$saved"
    rm -f "$CONF"
fi
restore() {
    [ -z "$saved" ] || cp -p "$saved" "$CONF"
}
trap 'restore; rm -rf "$TMP"' EXIT

# 1. The build, from a clean copy of the distribution.
(cd "$TOP_BUILDDIR" && DEB_BUILD_OPTIONS="nocheck parallel=2" sh "$TOP_SRCDIR/scripts/deb.sh") \
    >"$TMP/deb.out" 2>"$TMP/deb.err" && mv "$TOP_BUILDDIR/$deb" "$TMP/$deb"
rc=$?
[ $rc -eq 0 ] || diag "$TMP/deb.err"
sed 's/^/# /' "$TMP/deb.out"
ok $rc "scripts/deb.sh builds $deb, and lintian finds no error" || { done_testing; exit 1; }

# 2. Install it with apt and run it from where it is installed.
snapshot >"$TMP/before"
install_deb
rc=$?
[ $rc -eq 0 ] || diag "$TMP/apt.log"
ok $rc "apt-get installs it" || { done_testing; exit 1; }

dpkg -L mallocshim >"$TMP/files"
missing=""
for f in "$LIB" /usr/bin/shimdump /usr/bin/shimreplay /usr/bin/mallocshim /usr/bin/bcsim \
         /usr/share/man/man1/shimdump.1.gz /usr/share/man/man1/shimreplay.1.gz \
         /usr/share/man/man1/mallocshim.1.gz /usr/share/man/man1/bcsim.1.gz \
         /usr/share/man/man5/mallocshim.conf.5.gz /lib/systemd/system/shimdump.service \
         /usr/share/doc/mallocshim/examples/mariadb-malloc.conf $CONF; do
    grep -qx "$f" "$TMP/files" && [ -e "$f" ] || missing="$missing $f"
done
[ -z "$missing" ] || echo "# missing:$missing"
ok $([ -z "$missing" ]; echo $?) "the library in the multiarch libdir, the programs, man pages, unit, example"

dpkg-query -W -f='${Conffiles}\n' mallocshim | grep -q "^ $CONF " && cmp -s "$CONF" "$TOP_SRCDIR/debian/mallocshim.conf"
ok $? "$CONF is a conffile, every key at its default"

grep -qx "Environment=LD_PRELOAD=$LIB" /usr/share/doc/mallocshim/examples/mariadb-malloc.conf
ok $? "the MariaDB drop-in names the installed library"

/usr/bin/shimdump --version >"$TMP/out" 2>&1 && grep -q "^shimdump $version " "$TMP/out"
ok $? "shimdump --version says $version"

# MALLOCSHIM_CONF_FILE: the packaged conffile is what the shim reads by
# default, and says nothing; the test's own file only moves the segments.
# MALLOCSHIM_LIB unset: the launcher's own default path.
unset MALLOCSHIM_LIB
env -u MALLOCSHIM_CONF_FILE /usr/bin/mallocshim -b jemalloc -- true >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/err" ]
rc=$?
[ $rc -eq 0 ] || diag "$TMP/err"
ok $rc "mallocshim -b jemalloc -- true, with the packaged config: exit 0, nothing on stderr"

for b in glibc jemalloc tcmalloc; do
    /usr/bin/mallocshim -b "$b" -v -- true 2>"$TMP/err" &&
        grep -q "^mallocshim: pid [0-9]*: backend $b " "$TMP/err"
    rc=$?
    [ $rc -eq 0 ] || diag "$TMP/err"
    ok $rc "mallocshim -b $b -v -- true: $LIB serves with $b"
done

# A short bcsim under the installed library, read by the installed shimdump
# as root, and as a user of its own with the unit's one capability (what
# shimdump.service reads), and without it (nothing).
# --hold: after its report, bcsim keeps its heap (and its segment) until
# SIGTERM, so the reads below never race its end.
/usr/bin/mallocshim -b jemalloc -- /usr/bin/bcsim --json --duration=1 --hold=120 --threads=2 \
    --cache=4M --block=16K --memtable=1M --seed=7 >"$TMP/bcsim.json" 2>"$TMP/bcsim.err" &
pid=$!
wait_line "$TMP/bcsim.json" '"live_requested"'
/usr/bin/shimdump --json "$pid" >"$TMP/dump.json" 2>"$TMP/dump.err" &&
    grep -q '"backend": "jemalloc"' "$TMP/dump.json" && grep -q "\"pid\": $pid," "$TMP/dump.json"
rc=$?
[ $rc -eq 0 ] || diag "$TMP/dump.err"
ok $rc "shimdump --json reads the running bcsim's segment: backend jemalloc"

as_unit() {  # as_unit [CAPS] -- what shimdump.service's user can do
    caps=$1
    shift
    if [ -n "$caps" ]; then
        setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="+$caps" --ambient-caps="+$caps" \
            --bounding-set="-all,+$caps" --no-new-privs "$@"
    else
        setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs "$@"
    fi
}
unit_caps=$(sed -n 's/^AmbientCapabilities=CAP_\(.*\)$/\1/p' /lib/systemd/system/shimdump.service |
    tr 'A-Z' 'a-z')
as_unit "$unit_caps" /usr/bin/shimdump --json "$pid" >"$TMP/unit.json" 2>"$TMP/unit.err" &&
    grep -q "\"pid\": $pid," "$TMP/unit.json"
rc=$?
[ $rc -eq 0 ] || diag "$TMP/unit.err"
ok $rc "uid 65534 with the unit's capability ($unit_caps) reads root's bcsim"
# The unit's command, as its user, on a port of its own: /metrics has bcsim.
as_unit "$unit_caps" /usr/bin/shimdump --serve=127.0.0.1:0 2>"$TMP/serve.err" &
sub=$!   # the shell that runs as_unit: the server is its child
wait_line "$TMP/serve.err" "serving http://"
srv=$(cut -d' ' -f1 "/proc/$sub/task/$sub/children" 2>/dev/null)
[ -n "$srv" ] || srv=$sub   # (the shell may have exec'ed it)
port=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/serve.err")
curl -fsS "http://127.0.0.1:$port/metrics" >"$TMP/metrics" 2>>"$TMP/serve.err" &&
    grep -q "^mallocshim_live_usable_bytes{.*pid=\"$pid\"" "$TMP/metrics"
rc=$?
kill -TERM "$srv" 2>/dev/null
wait "$sub"
[ $rc -eq 0 ] || diag "$TMP/serve.err"
ok $rc "shimdump --serve as the unit's user: /metrics has root's bcsim (port ${port:-none})"
as_unit "" /usr/bin/shimdump --json "$pid" >/dev/null 2>"$TMP/unit.err"
rc=$?
[ $rc -eq 3 ] || diag "$TMP/unit.err"
ok $([ $rc -eq 3 ]; echo $?) "uid 65534 without it: permission denied, exit 3 (got $rc)"

kill -TERM "$pid"
wait "$pid"
rc=$?
[ $rc -eq 0 ] && grep -q '"live_requested"' "$TMP/bcsim.json"
rc=$?
[ $rc -eq 0 ] || diag "$TMP/bcsim.err"
ok $rc "bcsim under the installed library: exit 0, its JSON report"

if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify --man=no /lib/systemd/system/shimdump.service >"$TMP/verify" 2>&1
    sed 's/^/# systemd-analyze: /' "$TMP/verify"
    ok $? "systemd-analyze verify reads the unit"
else
    skip "systemd-analyze verify" "systemd-analyze not found"
fi
[ ! -e /etc/systemd/system/multi-user.target.wants/shimdump.service ]
ok $? "the unit is not enabled"

# 3. Purge: nothing of the package stays.
purge_deb
rc=$?
[ $rc -eq 0 ] || diag "$TMP/apt.log"
ok $rc "apt-get purge" || { done_testing; exit 1; }
gone && [ ! -e "$CONF" ] && ! dpkg-query -W mallocshim >/dev/null 2>&1
ok $? "after the purge: no file of the package, no $CONF, dpkg knows it no more, the rest as before"

# 4. An admin's own /etc/mallocshim.conf, there before the package: the
# install keeps it (the question dpkg asks defaults to keeping it;
# --force-confold answers so), and the purge removes it, as dpkg does
# every conffile it owns.
printf '# the admin'"'"'s own\nverbose = 0\n' >"$CONF"
cp "$CONF" "$TMP/mine.conf"
snapshot >"$TMP/before"
install_deb && cmp -s "$CONF" "$TMP/mine.conf"
rc=$?
[ $rc -eq 0 ] || diag "$TMP/apt.log"
ok $rc "installing over an admin's $CONF keeps it"
purge_deb
rc=$?
sed -i '\|^/etc/mallocshim.conf$|d' "$TMP/before"
[ $rc -eq 0 ] && gone && [ ! -e "$CONF" ]
ok $? "purging removes it with the rest"

done_testing
