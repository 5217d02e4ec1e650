#!/bin/sh
# fdsteal.sh: a program that closes the shim's descriptor of its segment
# copy behind the wrappers' back, and is given the number for a file of its
# own in the middle of a rewrite of the copy (libwritehook does it at a
# chosen write), never finds a byte of the shim's in that file. Before the
# copy has its name (the first rewrite, on seg_fd) the copy is given up, in
# one line; after (a rewrite's own descriptor, opened by name) that rewrite
# fails, in one line, and the next one writes the copy again. The program
# runs on and exits 0; shimdump reads it.
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
        1) want='mallocshim: cannot write' ;;
        3) want='mallocshim: .* is written again' ;;
        esac
        w=0
        while ! grep -q "$want" "$d/err" && kill -0 $pid 2>/dev/null && [ $w -lt 3000 ]; do
            sleep 0.02
            w=$((w + 1))
        done
        grep -q "^fdsteal: descriptor [0-9]* (.*) is $d/victim now" "$d/err"
        ok $? "$what: the program was given the copy's descriptor number for its own file"
        if [ $at = 3 ]; then
            "$TOP_BUILDDIR/tools/shimdump" --dir "$shm" --json "$pid" >"$d/json" 2>"$d/dumperr" &&
                grep -q '"copy_stale": false' "$d/json"
            ok $? "$what: shimdump reads the copy, current again"
            [ $? -eq 0 ] || diag "$d/dumperr"
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
            grep -q "^mallocshim: cannot write .*: the program closed the shim's descriptor of it;" "$d/lines" ;;
        3) [ "$(wc -l <"$d/lines")" -eq 2 ] &&
            grep -q "^mallocshim: cannot write $shm/mallocshim.$pid: the program closed the shim's descriptor of it;" "$d/lines" &&
            grep -q "^mallocshim: $shm/mallocshim.$pid is written again" "$d/lines" ;;
        esac
        ok $? "$what: the shim says so ($( [ $at = 1 ] && echo one line || echo two lines))"
        [ $? -eq 0 ] || diag "$d/err"
    done
done
done_testing
