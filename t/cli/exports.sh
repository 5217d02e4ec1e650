#!/bin/sh
# exports.sh: libmallocshim.so exports exactly the malloc family, the C++
# operators, the mallocshim_ API and guard.c's twelve wrapped calls; the embedded
# jemalloc stays hidden and does not start unless it is the chosen backend.
. "$TOP_SRCDIR/t/lib.sh"

cat >"$TMP/want" <<'EOF2'
__register_frame
__register_frame_info
__register_frame_info_bases
__register_frame_info_table
__register_frame_info_table_bases
__register_frame_table
_ZdaPv
_ZdaPvRKSt9nothrow_t
_ZdaPvSt11align_val_t
_ZdaPvSt11align_val_tRKSt9nothrow_t
_ZdaPvm
_ZdaPvmSt11align_val_t
_ZdlPv
_ZdlPvRKSt9nothrow_t
_ZdlPvSt11align_val_t
_ZdlPvSt11align_val_tRKSt9nothrow_t
_ZdlPvm
_ZdlPvmSt11align_val_t
_Znam
_ZnamRKSt9nothrow_t
_ZnamSt11align_val_t
_ZnamSt11align_val_tRKSt9nothrow_t
_Znwm
_ZnwmRKSt9nothrow_t
_ZnwmSt11align_val_t
_ZnwmSt11align_val_tRKSt9nothrow_t
aligned_alloc
calloc
close
close_range
closefrom
dup2
dup3
free
mallinfo
mallinfo2
malloc
malloc_info
malloc_stats
malloc_trim
malloc_usable_size
mallocshim_backend
mallocshim_version
mallopt
memalign
posix_memalign
pvalloc
realloc
reallocarray
sigaltstack
valloc
EOF2
nm -D --defined-only "$SHIM" | awk '$2 ~ /^[TWVDBi]$/ {print $3}' | sed 's/@.*//' | LC_ALL=C sort >"$TMP/got"
LC_ALL=C sort -o "$TMP/want" "$TMP/want"
diff "$TMP/want" "$TMP/got" >&2
ok $? "exported symbols are exactly the malloc family, C++ operators, mallocshim_* and guard.c's twelve"

! nm -D "$SHIM" | grep -Eq 'msje_|je_|mallctl|mallocx'
ok $? "nothing of the embedded jemalloc is exported"

! readelf -d "$SHIM" | grep -q 'NEEDED.*\(jemalloc\|tcmalloc\|stdc++\|zstd\)'
ok $? "no allocator, no C++ runtime and no libzstd is a load-time dependency"

# libzstd is loaded at the first capture, on its own (src/trace.c): no
# symbol of it may be left for the loader to bind (with -z now, a process
# would not even start), nor bind to a program's own zstd.
! nm -D --undefined-only "$SHIM" | grep -q 'ZSTD_'
ok $? "no zstd symbol is left undefined for the loader"

# The embedded jemalloc starts only when it is the backend: its start reads
# /proc/sys/vm/overcommit_memory, which nothing else here opens.
if command -v strace >/dev/null; then
    for b in $(backends); do
        MALLOCSHIM_CONF="backend:$b" strace -f -e trace=open,openat -o "$TMP/trace" \
            env LD_PRELOAD="$SHIM" /bin/true 2>/dev/null
        n=$(grep -c overcommit_memory "$TMP/trace")
        if [ "$b" = jemalloc ]; then
            [ "$n" -ge 1 ]
            ok $? "jemalloc starts when it is the backend"
        else
            [ "$n" -eq 0 ]
            ok $? "$b: the embedded jemalloc never starts"
        fi
    done
else
    skip "the embedded jemalloc starts only when chosen" "strace is not installed"
fi

# jemalloc's own config sources are closed: MALLOC_CONF cannot override the
# shim's config, nor abort the process.
if [ "$HAVE_JEMALLOC" = yes ]; then
    MALLOC_CONF=narenas:2,abort_conf:true,bogus:1 EXTRA_CONF=arenas:5 check shim jemalloc "$T/probe" 0 100 stats
    grep -q 'opt.narenas: 5$' "$TMP/err" && grep -q 'MALLOC_CONF is ignored' "$TMP/err"
    ok $? "MALLOC_CONF is ignored (with one line) and the shim's arenas:5 holds"
fi
done_testing
