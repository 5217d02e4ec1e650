#!/bin/sh
# config.sh: MALLOCSHIM_CONF, the config file, and what bad input gives: one
# line on stderr naming the problem, the default used, the program unharmed.
. "$TOP_SRCDIR/t/lib.sh"

run() {  # run CONF: /bin/echo hello under the shim with MALLOCSHIM_CONF=CONF
    MALLOCSHIM_CONF="$1" LD_PRELOAD="$SHIM" /bin/echo hello >"$TMP/out" 2>"$TMP/err"
    echo $? >"$TMP/rc"
}
lines() { wc -l <"$TMP/err"; }
ran() { [ "$(cat "$TMP/rc")" = 0 ] && [ "$(cat "$TMP/out")" = hello ]; }

run "backend:glibc"
ran && [ "$(lines)" -eq 0 ]
ok $? "a good config prints nothing"

run "backend:glibc,frobnicate:3"
ran && [ "$(lines)" -eq 1 ] && grep -q "^mallocshim: MALLOCSHIM_CONF: unknown key 'frobnicate' (ignored)$" "$TMP/err"
ok $? "unknown key: one line naming it"

run "arenas:lots,verbose:1"
ran && grep -q "bad value 'lots' for 'arenas'" "$TMP/err" && grep -Eq 'config backend:glibc,verbose:1[,;]' "$TMP/err" \
    && [ "$(lines)" -eq 2 ]
ok $? "bad value: one line naming key and value, default kept"

run "top_pad:2g,trim_threshold:3g"
ran && [ "$(lines)" -eq 2 ] && grep -q "bad value '2g' for 'top_pad'" "$TMP/err"
ok $? "glibc knobs of 2g or more are refused: mallopt takes an int"

run "backend:ptmalloc3,verbose:1"
ran && grep -q "unknown backend 'ptmalloc3' (expected glibc, jemalloc or tcmalloc; using glibc)" "$TMP/err" \
    && grep -q 'backend glibc ' "$TMP/err"
ok $? "unknown backend: one line, then glibc"

if [ "$HAVE_TCMALLOC" = yes ]; then
    run "backend:tcmalloc,tcmalloc_lib:/nonexistent/libtcmalloc.so,verbose:1"
    ran && grep -q '^mallocshim: backend tcmalloc unavailable: cannot load /nonexistent/libtcmalloc.so: .*; using glibc$' "$TMP/err" \
        && grep -q 'backend glibc ' "$TMP/err"
    ok $? "a tcmalloc library that cannot be loaded: one line, then glibc"
    run "backend:tcmalloc,tcmalloc_lib:libm.so.6"
    ran && grep -q 'libm.so.6 has no tc_malloc' "$TMP/err" && [ "$(lines)" -eq 1 ]
    ok $? "a library that is not tcmalloc: one line, then glibc"
    check env MALLOCSHIM_CONF="backend:tcmalloc,tcmalloc_lib:libm.so.6" LD_PRELOAD="$SHIM" "$T/api" glibc
    ok $? "after that fallback, glibc serves everything correctly"
fi
if [ "$HAVE_JEMALLOC" != yes ]; then
    run "backend:jemalloc"
    ran && grep -q 'jemalloc is not built into' "$TMP/err"
    ok $? "jemalloc not built in: one line, then glibc"
fi

# The file: comments, blanks, '=' and ':'; the environment wins over it.
cat >"$TMP/my.conf" <<'CONF'
# mallocshim.conf for the test
backend = jemalloc     # the backend
  arenas: 2

verbose=1
CONF
[ "$HAVE_JEMALLOC" = yes ] || sed -i 's/jemalloc/glibc/' "$TMP/my.conf"
want=$(sed -n 's/^backend = \([a-z]*\).*/\1/p' "$TMP/my.conf")
MALLOCSHIM_CONF_FILE="$TMP/my.conf" run ""
ran && grep -q "backend $want .*config backend:$want,arenas:2,verbose:1;" "$TMP/err"
ok $? "the config file's keys are used ($want, arenas:2)"
MALLOCSHIM_CONF_FILE="$TMP/my.conf" run "arenas:3,backend:glibc"
ran && grep -q "backend glibc .*config backend:glibc,arenas:3,verbose:1;" "$TMP/err"
ok $? "MALLOCSHIM_CONF wins over the file"
printf 'verbose=1\nnot_a_key = 1\n' >"$TMP/bad.conf"
MALLOCSHIM_CONF_FILE="$TMP/bad.conf" run ""
ran && grep -q "^mallocshim: $TMP/bad.conf:2: unknown key 'not_a_key' (ignored)$" "$TMP/err"
ok $? "a bad line in the file is reported with its line number"
MALLOCSHIM_CONF_FILE="$TMP/missing.conf" run ""
ran && [ "$(lines)" -eq 1 ] && grep -q "missing.conf: cannot open config file: No such file or directory" "$TMP/err"
ok $? "a named config file that does not exist: one line"

# Reading the config allocates nothing: the bootstrap buffer, which serves
# every allocation made while the shim starts, is used the same with a big
# config file and a long MALLOCSHIM_CONF as with none.
run "verbose:1"
base=$(sed -n 's/.*bootstrap used \([0-9]*\) bytes.*/\1/p' "$TMP/err")
{ i=0; while [ $i -lt 200 ]; do echo "# comment line $i"; echo "arenas = $((i % 8))"; i=$((i + 1)); done
  echo "trim_threshold = 1m"; echo "jemalloc.dirty_decay_ms = 100"; } >"$TMP/big.conf"
MALLOCSHIM_CONF_FILE="$TMP/big.conf" run "verbose:1,top_pad:4k,mmap_threshold:1m,arena_test:4,unknown_key:1"
big=$(sed -n 's/.*bootstrap used \([0-9]*\) bytes.*/\1/p' "$TMP/err")
[ -n "$base" ] && [ "$base" = "$big" ]
ok $? "config is read without allocating (bootstrap used $base bytes either way)"

# verbose:1: one line with the backend, its version and the effective config.
for b in $(backends); do
    run "backend:$b,verbose:1"
    ran && [ "$(lines)" -eq 1 ] && grep -Eq "^mallocshim: pid [0-9]+: backend $b [^ ]+.*; config backend:$b,verbose:1(,[^;]*)?; segment [^;]*/mallocshim\.[0-9]+; bootstrap used [0-9]+ bytes$" "$TMP/err"
    ok $? "$b: verbose:1 prints one line: $(cut -c1-60 "$TMP/err")"
done

# Hostile input (issue 32): a FIFO named as the config file must not hold
# the program in the shim's constructor, and a bad pair repeated 20,000
# times must not write 20,000 lines.
mkfifo "$TMP/fifo.conf"
MALLOCSHIM_CONF_FILE="$TMP/fifo.conf" timeout 20 env LD_PRELOAD="$SHIM" /bin/echo hello >"$TMP/out" 2>"$TMP/err"
echo $? >"$TMP/rc"
ran && [ "$(lines)" -eq 1 ] && grep -q "fifo.conf: config file is not a regular file (ignored)$" "$TMP/err"
ok $? "a FIFO as MALLOCSHIM_CONF_FILE: one line, the program runs ($(cat "$TMP/rc"): $(head -c 100 "$TMP/err"))"
MALLOCSHIM_CONF_FILE=/dev/zero run ""
ran && [ "$(lines)" -eq 1 ] && grep -q "/dev/zero: config file is not a regular file (ignored)$" "$TMP/err"
ok $? "a device as MALLOCSHIM_CONF_FILE: one line, not read"
MALLOCSHIM_CONF_FILE=/dev/null run ""
ran && [ "$(lines)" -eq 0 ]
ok $? "/dev/null as MALLOCSHIM_CONF_FILE: no file, nothing said"
bogus=$(awk 'BEGIN { for (i = 0; i < 20000; i++) printf "bogus,"; printf "verbose:1" }')
run "$bogus"
ran && [ "$(grep -c "'bogus' is not a key:value pair" "$TMP/err")" -eq 10 ] \
    && grep -q "^mallocshim: and 19990 more problems in the configuration (ignored)$" "$TMP/err" \
    && grep -q 'config backend:glibc,verbose:1' "$TMP/err" && [ "$(lines)" -eq 12 ]
ok $? "20,000 bad pairs: 10 lines, one for the rest, the good pair still applied ($(lines) lines)"

# Where the config file is looked for by default.
grep -qa "$(sed -n 's/^sysconfdir = //p' "$TOP_BUILDDIR/Makefile" | sed "s|\${prefix}|$(sed -n 's/^prefix = //p' "$TOP_BUILDDIR/Makefile")|")/mallocshim.conf" "$SHIM"
ok $? "the default config file is \$(sysconfdir)/mallocshim.conf"
done_testing
