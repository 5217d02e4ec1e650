#!/bin/sh
# fdsteal.sh: a program that closes the shim's descriptor of its segment
# copy behind the wrappers' back, and is given the number for a file of its
# own in the middle of a rewrite of the copy (libwritehook does it at a
# chosen write), never finds a byte of the shim's in that file. Before the
# copy has its name (the first rewrite, on seg_fd) the copy is given up, in
# one line; after (a rewrite's own descriptor, opened by name) that rewrite
# fails, in one line, and the next one writes the copy again. The program
# runs on and exits 0, its file still open at the number; the copy's
# header says it is current again.
. "$TOP_SRCDIR/t/lib.sh"

steal="$T/.libs/libwritehook.so"
[ -e "$steal" ] || { echo "1..0 # SKIP libwritehook.so is not built"; exit 0; }

n=0
for b in $(backends); do
    for at in 1 3; do
        n=$((n + 1))
        case $at in
        1) what="$b: during the first rewrite (before the name)" ;;
        3) what="$b: during a later rewrite (by name)" ;;
        esac
        d="$TMP/s.$n"
        shm="$TMP/shm.$n"
        mkdir -p "$d" "$shm"
        head -c 65536 /dev/zero | tr '\0' V >"$d/victim"
        cp "$d/victim" "$d/victim.orig"
        FDSTEAL_DIR="$shm" FDSTEAL_VICTIM="$d/victim" FDSTEAL_AT=$at \
            MALLOCSHIM_CONF="backend:$b,shm_dir:$shm,interval_ms:100" LD_PRELOAD="$steal $SHIM" \
            "$T/shmfault" "$d" 4 >"$d/out" 2>"$d/err" &
        pid=$!
        touch "$d/go"
        case $at in
        1) want='mallocshim: the program closed the shim' ;;
        3) want='mallocshim: .* is written again' ;;
        esac
        w=0
        while ! grep -q "$want" "$d/err" && kill -0 $pid 2>/dev/null && [ $w -lt 3000 ]; do
            sleep 0.02
            w=$((w + 1))
        done
        grep -q "^fdsteal: descriptor [0-9]* (.*) is $d/victim now" "$d/err"
        ok $? "$what: the program was given the copy's descriptor number for its own file"
        n_fd=$(sed -n "s/^fdsteal: descriptor \([0-9]*\) .*/\1/p" "$d/err")
        [ "$(readlink "/proc/$pid/fd/${n_fd:-x}")" = "$d/victim" ]
        ok $? "$what: the program's file is still open at that number (the shim closed nothing of it)"
        if [ $at = 3 ]; then
            # The copy itself (shimdump would read the live segment): its
            # header's flags (src/seg.h: magic, then the fixed fields, flags
            # at byte 56) say copy (bit 5), and not stale (bit 6).
            /usr/bin/python3 -c '
import struct, sys
h = open(sys.argv[1], "rb").read(60)
magic, = struct.unpack_from("<Q", h, 0)
flags, = struct.unpack_from("<I", h, 56)
assert magic == 0x314d48534c4c414d, hex(magic)
assert flags & (1 << 5) and not flags & (1 << 6), hex(flags)
' "$shm/mallocshim.$pid" 2>"$d/py"
            ok $? "$what: the copy is current again (its header says copy, not stale)"
            [ $? -eq 0 ] || diag "$d/py"
        fi
        touch "$d/stop"
        wait $pid
        ok $? "$what: the program exits 0"
        cmp -s "$d/victim" "$d/victim.orig"
        ok $? "$what: the program's file has none of the shim's bytes"
        [ $? -eq 0 ] || echo "# $(stat -c %s "$d/victim") bytes, was 65536"
        grep '^mallocshim: ' "$d/err" >"$d/lines"
        case $at in
        1) [ "$(wc -l <"$d/lines")" -eq 1 ] &&
            grep -q "^mallocshim: the program closed the shim's descriptor of its segment's copy before the copy was named; $shm/mallocshim.$pid is not created" "$d/lines" ;;
        3) [ "$(wc -l <"$d/lines")" -eq 2 ] &&
            grep -q "^mallocshim: cannot write $shm/mallocshim.$pid: the program closed the shim's descriptor of it;" "$d/lines" &&
            grep -q "^mallocshim: $shm/mallocshim.$pid is written again" "$d/lines" ;;
        esac
        ok $? "$what: the shim says so ($( [ $at = 1 ] && echo one line || echo two lines))"
        [ $? -eq 0 ] || diag "$d/err"
    done
done
done_testing
