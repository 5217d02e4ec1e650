#!/bin/sh
# tuning.sh: the arena count and the backends' knobs take effect, each
# checked by what it does: glibc's arenas, mmap_threshold, top_pad,
# trim_threshold and arena_test; jemalloc's narenas and pass-through
# options (read back from its own statistics); tcmalloc's properties (read
# back from tcmalloc).
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

# Each knob by its effect. The blocks come from the main heap (brk) under
# mmap_threshold:32m. top_pad: the extra the heap takes each time it grows
# (record:off, so that the shim's own start-up has not grown it already).
EXTRA_CONF="record:off,mmap_threshold:32m" check shim glibc "$T/knobs" pad
pad0=$(sed -n 's/^grew=//p' "$TMP/out")
EXTRA_CONF="record:off,mmap_threshold:32m,top_pad:16m" check shim glibc "$T/knobs" pad
pad16=$(sed -n 's/^grew=//p' "$TMP/out")
[ -n "$pad0" ] && [ -n "$pad16" ] && [ "$pad0" -lt $((16 << 20)) ] && [ "$pad16" -ge $((16 << 20)) ]
ok $? "glibc top_pad:16m: a 1 MiB block grows the heap by $pad16 bytes (default: $pad0)"
# trim_threshold: a free 4 MiB top is given back by default (128 KiB), kept
# under trim_threshold:64m. (record:off: were the block tracked, the
# sampler thread started then would put its own memory above it.)
EXTRA_CONF="record:off,mmap_threshold:32m" check shim glibc "$T/knobs" trim
trim0=$(sed -n 's/^trimmed=//p' "$TMP/out")
EXTRA_CONF="record:off,mmap_threshold:32m,trim_threshold:64m" check shim glibc "$T/knobs" trim
trim64=$(sed -n 's/^trimmed=//p' "$TMP/out")
[ -n "$trim0" ] && [ "$trim0" -ge $((3 << 20)) ] && [ "$trim64" = 0 ]
ok $? "glibc trim_threshold:64m: freeing a 4 MiB top gives back $trim64 bytes (default: $trim0)"
# arena_test: glibc computes its arena limit (8 per CPU) only once there
# are more arenas than arena_test; below that every thread that finds none
# free gets a new one. Threads beyond the limit, all at once: capped by
# default, one arena each under a large arena_test.
cpus=$(getconf _NPROCESSORS_ONLN)
nt=$((8 * cpus + 16))
if [ "$nt" -le 200 ]; then
    check shim glibc "$T/probe" "$nt" 200
    a0=$(heaps)
    EXTRA_CONF="arena_test:$((nt + 10))" check shim glibc "$T/probe" "$nt" 200
    a1=$(heaps)
    [ "$a0" -le $((8 * cpus + 1)) ] && [ "$a1" -gt $((8 * cpus + 1)) ]
    ok $? "glibc arena_test:$((nt + 10)): $nt threads at once get $a1 arenas (default: $a0, limit $((8 * cpus)) on $cpus CPUs)"
else
    skip "glibc arena_test by its effect" "$cpus CPUs: the limit needs more than 200 threads"
fi

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
    p=tcmalloc.max_total_thread_cache_bytes
    check shim tcmalloc "$T/knobs" tcprop $p
    v0=$(sed -n "s/^$p=//p" "$TMP/out")
    EXTRA_CONF="$p:64m" check shim tcmalloc "$T/knobs" tcprop $p && [ ! -s "$TMP/err" ]
    v64=$(sed -n "s/^$p=//p" "$TMP/out")
    [ "$v64" = 67108864 ] && [ -n "$v0" ] && [ "$v0" != 67108864 ]
    ok $? "tcmalloc.max_total_thread_cache_bytes:64m: tcmalloc reports $v64 (default: $v0)"
    EXTRA_CONF="tcmalloc.no_such_property:1" check shim tcmalloc "$T/probe" 2 100
    [ "$(grep -c 'tcmalloc rejected tcmalloc.no_such_property:1' "$TMP/err")" -eq 1 ]
    ok $? "a property tcmalloc does not know: one line on stderr"
fi
done_testing
