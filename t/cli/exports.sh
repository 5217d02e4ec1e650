#!/bin/sh
# exports.sh: libmallocshim.so exports exactly the malloc family, the C++
# operators and the mallocshim_ API; the embedded jemalloc stays hidden and
# does not start unless it is the chosen backend.
. "$TOP_SRCDIR/t/lib.sh"

cat >"$TMP/want" <<'EOF2'
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
valloc
EOF2
nm -D --defined-only "$SHIM" | awk '$2 ~ /^[TWVDBi]$/ {print $3}' | sed 's/@.*//' | LC_ALL=C sort >"$TMP/got"
LC_ALL=C sort -o "$TMP/want" "$TMP/want"
diff "$TMP/want" "$TMP/got" >&2
ok $? "exported symbols are exactly the malloc family, C++ operators and mallocshim_*"

! nm -D "$SHIM" | grep -Eq 'msje_|je_|mallctl|mallocx'
ok $? "nothing of the embedded jemalloc is exported"

! readelf -d "$SHIM" | grep -q 'NEEDED.*\(jemalloc\|tcmalloc\|stdc++\)'
ok $? "no allocator and no C++ runtime is a load-time dependency"

# jemalloc prints its statistics at exit when MALLOC_CONF asks, but only if
# it started: it must stay asleep under the other backends.
for b in $(backends); do
    MALLOC_CONF=stats_print:true check shim "$b" /bin/true
    if [ "$b" = jemalloc ]; then
        grep -q 'jemalloc statistics' "$TMP/err"
        ok $? "jemalloc starts when it is the backend"
    else
        ! grep -q 'jemalloc statistics' "$TMP/err"
        ok $? "$b: the embedded jemalloc never starts"
    fi
done
done_testing
