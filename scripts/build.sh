#!/bin/sh
# build.sh: configure (once) and build mallocshim in the source tree.
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure --sysconfdir=/etc ${CONFIGURE_FLAGS:-}
make -j"$(nproc)"
