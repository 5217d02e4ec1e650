#!/bin/sh
# bootstrap.sh: allocations made while a backend is starting come from the
# shim's static buffer, and free, realloc and malloc_usable_size recognise
# them afterwards. Real tcmalloc's own start exercises the buffer too.
. "$TOP_SRCDIR/t/lib.sh"

if [ "$HAVE_TCMALLOC" != yes ]; then
    skip "bootstrap buffer through a dlopen'ed backend" "tcmalloc backend not built"
    done_testing
    exit
fi
probe="$T/.libs/libbootprobe.so"
EXTRA_CONF="tcmalloc_lib:$probe,verbose:1" check shim tcmalloc "$T/bootcheck" "$probe"
ok $? "blocks from a backend's constructor: exact usable size, zeroed calloc, aligned, realloc moves them"
used=$(sed -n 's/.*bootstrap used \([0-9]*\) bytes.*/\1/p' "$TMP/err")
[ "${used:-0}" -ge 1400 ]
ok $? "the bootstrap buffer served them ($used bytes used)"

EXTRA_CONF=verbose:1 check shim tcmalloc "$T/threads" 2 5000
used=$(sed -n 's/.*bootstrap used \([0-9]*\) bytes.*/\1/p' "$TMP/err")
[ "${used:-0}" -gt 0 ] && [ "$used" -lt 1048576 ]
ok $? "real tcmalloc: its start used $used bytes of the buffer, and the program ran"
done_testing
