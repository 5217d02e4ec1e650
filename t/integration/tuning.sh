#!/bin/sh
# tuning.sh: the arena count and the backends' knobs take effect: glibc's
# arenas and mmap threshold, jemalloc's narenas and pass-through options,
# tcmalloc's properties.
. "$TOP_SRCDIR/t/lib.sh"

heaps() { grep -c '<heap nr=' "$TMP/out"; }

# glibc: 16 threads allocating at once on this machine make several arenas
# by default; arenas:N caps them at N (counted in malloc_info's <heap>s).
check shim glibc "$T/probe" 16 200
default=$(heaps)
for n in 1 2; do
    EXTRA_CONF="arenas:$n" check shim glibc "$T/probe" 16 200
    got=$(heaps)
    [ "$got" -le "$n" ] && [ "$got" -ge 1 ]
    ok $? "glibc arenas:$n: $got heap(s) with 16 threads (default gave $default)"
done
[ "$default" -gt 2 ]
ok $? "glibc default: more than 2 arenas with 16 threads ($default), so the cap is what limits"

# glibc's mmap threshold: a 1 MiB block is mmapped by default (the
# threshold starts at 128 KiB), and comes from the heap once it is 32 MiB.
check shim glibc "$T/probe" 0 1048576
grep -q '^hblks_delta=1$' "$TMP/out"
ok $? "glibc default: a 1 MiB block is mmapped"
EXTRA_CONF="mmap_threshold:32m" check shim glibc "$T/probe" 0 1048576
grep -q '^hblks_delta=0$' "$TMP/out"
ok $? "glibc mmap_threshold:32m: a 1 MiB block comes from the heap"
EXTRA_CONF="trim_threshold:1m,top_pad:64k,arena_test:2,verbose:1" check shim glibc "$T/probe" 2 100
! grep -q rejected "$TMP/err" && grep -q 'trim_threshold:1048576,top_pad:65536,arena_test:2' "$TMP/err"
ok $? "glibc trim_threshold, top_pad and arena_test are accepted and shown"

if [ "$HAVE_JEMALLOC" = yes ]; then
    EXTRA_CONF="arenas:3" check shim jemalloc "$T/probe" 8 100 stats
    grep -q 'opt.narenas: 3$' "$TMP/err"
    ok $? "jemalloc arenas:3 becomes opt.narenas: 3"
    EXTRA_CONF="arenas:3,jemalloc.narenas:5,jemalloc.dirty_decay_ms:1234" check shim jemalloc "$T/probe" 8 100 stats
    grep -q 'opt.narenas: 5$' "$TMP/err" && grep -q 'opt.dirty_decay_ms: 1234 ' "$TMP/err"
    ok $? "jemalloc.* pairs pass through to malloc_conf, and jemalloc.narenas wins over arenas"
    EXTRA_CONF="jemalloc.no_such_opt:1" check shim jemalloc "$T/probe" 0 100
    grep -q 'Invalid conf pair: no_such_opt:1' "$TMP/err"
    ok $? "jemalloc itself reports an option it does not know"
fi

if [ "$HAVE_TCMALLOC" = yes ]; then
    EXTRA_CONF="tcmalloc.max_total_thread_cache_bytes:64m" check shim tcmalloc "$T/probe" 2 100
    [ ! -s "$TMP/err" ]
    ok $? "tcmalloc.max_total_thread_cache_bytes is accepted by tcmalloc"
    EXTRA_CONF="tcmalloc.no_such_property:1" check shim tcmalloc "$T/probe" 2 100
    [ "$(grep -c 'tcmalloc rejected tcmalloc.no_such_property:1' "$TMP/err")" -eq 1 ]
    ok $? "a property tcmalloc does not know: one line on stderr"
fi
done_testing
