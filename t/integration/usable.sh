#!/bin/sh
# usable.sh: the usable size of a freed block, read the cheapest way each
# backend allows (glibc's chunk header, jemalloc's radix tree, tcmalloc's
# GetAllocatedSize called directly), each checked at start against
# malloc_usable_size: taken where it answers the same, with every count
# exact; and where the check cannot be made (process_vm_readv refused, as a
# hardened service's seccomp filter may), one line and the call instead,
# with every count still exact.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

shm="$TMP/shm"
mkdir -p "$shm"
for b in $(backends); do
    EXTRA_CONF="shm_dir:$shm,sample:1" check shim "$b" "$T/pattern" "$shm"
    ok $? "$b: exact counts and live bytes with every block tracked"
    ! grep -q "is asked of" "$TMP/err"
    ok $? "$b: the fast lookup passed its check at start (no line on stderr)"
    EXTRA_CONF="shm_dir:$shm,sample:1" check shim "$b" "$T/bigfree" "$shm"
    ok $? "$b: aligned blocks (64 B to 2 MiB), large ones and one of 5 GiB: every byte freed is counted ($(cat "$TMP/out"))"
    EXTRA_CONF="shm_dir:$shm" check shim "$b" "$T/xthreads" "$shm" cxx
    ok $? "$b: 16 threads, operator new, sized delete and free of each other's blocks count exactly"
done

if [ "$HAVE_JEMALLOC" = yes ]; then
    if ! "$T/nopipe" true 2>"$TMP/err"; then
        skip "jemalloc, its check refused a pipe: exact counts still" "no seccomp here: $(cat "$TMP/err")"
        skip "and one line says why" "no seccomp here"
    else
        EXTRA_CONF="shm_dir:$shm,sample:1" check shim jemalloc "$T/nopipe" "$T/pattern" "$shm"
        ok $? "jemalloc, its check refused a pipe: exact counts and live bytes still"
        [ "$(grep -c "jemalloc's radix tree is not read inline (it could not be checked: pipe: Operation not permitted): the usable size of each freed block is asked of malloc_usable_size" "$TMP/err")" -eq 1 ]
        ok $? "and one line says why the lookup is the call: $(head -c 300 "$TMP/err")"
    fi
fi
done_testing
