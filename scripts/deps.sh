#!/bin/sh
# deps.sh: install the Debian packages that building and testing mallocshim
# need, if any is missing. Needs root (or sudo) only when something is missing.
# With --list, only prints the list (.ci/run installs from it).
set -eu

PACKAGES="gcc g++ make autoconf automake libtool pkg-config binutils
libjemalloc-dev libgoogle-perftools-dev libunwind-dev libelf-dev libdw-dev
libzstd-dev libc6-dbg check python3 util-linux bsdutils strace clang libclang-rt-14-dev
mariadb-server mariadb-plugin-rocksdb sysbench chromium prometheus libmicrohttpd-dev curl
libprotobuf-c-dev protobuf-c-compiler zlib1g-dev golang-go
debhelper dpkg-dev lintian systemd"

if [ "${1:-}" = --list ]; then
    echo $PACKAGES
    exit 0
fi

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        missing="$missing $p"
done
[ -n "$missing" ] || exit 0

echo "deps.sh: installing:$missing"
as_root=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps.sh: need root (or sudo) to install:$missing" >&2; exit 1; }
    as_root=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -q
# shellcheck disable=SC2086
$as_root apt-get install -y -q --no-install-recommends $missing
