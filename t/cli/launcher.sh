#!/bin/sh
# launcher.sh: the mallocshim command runs a program under the shim.
. "$TOP_SRCDIR/t/lib.sh"

L="$TOP_BUILDDIR/tools/mallocshim"
export MALLOCSHIM_LIB="$SHIM"

# The installed script must work without MALLOCSHIM_LIB: its library path
# is fully expanded at build time.
grep -q '^lib="\${MALLOCSHIM_LIB:-/[^$]*}"$' "$L" && \
    env -u MALLOCSHIM_LIB "$L" --version >/dev/null
ok $? "the library path is expanded at build time; --version runs without MALLOCSHIM_LIB"

"$L" --help >"$TMP/out" 2>&1 && grep -q '^Usage: mallocshim' "$TMP/out"
ok $? "--help"
[ "$("$L" --version)" = "mallocshim $(sed -n 's/^PACKAGE_VERSION = //p' "$TOP_BUILDDIR/Makefile")" ]
ok $? "--version"

for b in $(backends); do
    check "$L" --backend="$b" -- "$T/api" "$b"
    ok $? "--backend=$b runs the program on $b"
done
check "$L" -b glibc -a 2 -v -c trim_threshold:1m "$T/probe" 16 100
grep -Eq 'config backend:glibc,arenas:2,trim_threshold:1048576,verbose:1[,;]' "$TMP/err" && \
    [ "$(grep -c '<heap nr=' "$TMP/out")" -le 2 ]
ok $? "-b -a -v -c: short options, arenas applied"
MALLOCSHIM_CONF=backend:tcmalloc,arenas:4 check "$L" --arenas=1 --verbose /bin/true
grep -q 'arenas:1' "$TMP/err"
ok $? "options are added after MALLOCSHIM_CONF and win"
MALLOCSHIM_CONF='arenas:2 # a comment' check "$L" -b glibc -v /bin/true
grep -Eq 'backend glibc .*arenas:2,verbose:1[,;]' "$TMP/err"
ok $? "a '#' comment in MALLOCSHIM_CONF does not swallow the options"
"$L" --verbose=0 true 2>"$TMP/err"
[ $? -eq 125 ] && grep -q 'takes no value' "$TMP/err"
ok $? "--verbose=0: exit 125, it takes no value"
(cd "$TOP_BUILDDIR" && MALLOCSHIM_LIB=.libs/libmallocshim.so "$L" -b glibc -v sh -c 'cd / && /bin/true') 2>"$TMP/err"
grep -q 'backend glibc' "$TMP/err"
ok $? "a relative MALLOCSHIM_LIB is made absolute, so children that chdir keep the shim"

"$L" --backend=bogus true 2>"$TMP/err"
[ $? -eq 125 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^mallocshim: --backend: unknown backend 'bogus'" "$TMP/err"
ok $? "unknown backend: exit 125, one line"
"$L" --arenas=x true 2>/dev/null
[ $? -eq 125 ]
ok $? "bad --arenas: exit 125"
"$L" --frob true 2>/dev/null
[ $? -eq 125 ]
ok $? "unknown option: exit 125"
"$L" 2>/dev/null
[ $? -eq 125 ]
ok $? "no command: exit 125"
"$L" -- /nonexistent/prog 2>/dev/null
[ $? -eq 127 ]
ok $? "command not found: exit 127"
"$L" sh -c 'exit 42'
[ $? -eq 42 ]
ok $? "the command's exit status is passed through"
MALLOCSHIM_LIB=/nonexistent/libmallocshim.so "$L" true 2>"$TMP/err"
[ $? -eq 125 ] && grep -q 'cannot read the shim library' "$TMP/err"
ok $? "missing library: exit 125, one line"
done_testing
