#!/bin/sh
# parked.sh: the shim's own memory does not grow with the thread count. 256
# threads that each took 1000 stacks (sample:1, stacks:16) cost at most
# 8 MiB of anonymous RSS more than the same run with stacks:0 (libunwind's
# 256 KiB cache per thread made that 65-70 MiB; now only 16 hot threads use
# it and the others libgcc's unwinder), and at the default sampling at most
# 2 MiB more, under every backend.
. "$TOP_SRCDIR/t/lib.sh"

# rss CONF: the anonymous RSS (KiB) of 256 parked threads under $b
rss() {
    EXTRA_CONF=$1
    check shim "$b" "$T/parked" 256 1000 && sed -n 's/^rss_anon_kib \([0-9]*\)$/\1/p' "$TMP/out"
    EXTRA_CONF=
}

for b in $(backends); do
    for s in sample:1 sample:256; do
        bound=$([ $s = sample:1 ] && echo 8192 || echo 2048)
        without=$(rss "$s,stacks:0") && with=$(rss "$s,stacks:16") &&
            [ -n "$without" ] && [ -n "$with" ] &&
            echo "# $b $s: RssAnon $without KiB with stacks:0, $with KiB with stacks:16" >&2 &&
            [ $((with - without)) -le $bound ]
        ok $? "$b $s: 256 threads with stacks cost at most $bound KiB more than without"
    done
done
done_testing
