#!/bin/sh
# serve.sh: shimdump --serve, the real server with real clients. bcsim runs
# under each backend (stacks on); the server listens on 127.0.0.1:0 (the port
# it says it got). /metrics passes promtool check metrics and names every
# bcsim; /json, /report and the pprof names (/pprof/heap, /debug/pprof/heap,
# /debug/pprof/allocs) give that process's snapshot, page and profile, equal
# to what shimdump --json and --pprof make of it; without ?pid= and several
# processes, a 400 names them. Bad pids, paths and methods get a status and
# one line. Debian's prometheus, on loopback with its own storage, scrapes
# the endpoint every second and loads doc/prometheus's rules: its HTTP API
# returns mallocshim_live_usable_bytes of each bcsim, and the recording rule
# computed from it. An abuse run (10,000 requests of good and bad paths and
# pids, broken HTTP, oversized headers, a request body, slow clients from
# another loopback address holding more connections than one address may)
# leaves it serving: the slow ones are cut off by its timeout, the others
# answered meanwhile. Processes that come and go mid-run are served and then
# dropped. A server of another user (uid 65534) serves none of root's
# processes. It serves on [::1] too. A non-loopback address is refused
# without --allow-remote, an IPv4-mapped one always; a port in use is one
# line, exit 6; SIGTERM and SIGINT stop it, exit 0 (with
# SHIMDUMP_CHECK=1: no snapshot it read broke an invariant).
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light

SD="$TOP_BUILDDIR/tools/shimdump"
RULES="$TOP_SRCDIR/doc/prometheus/mallocshim.rules.yml"
export NO_COLOR=1

if [ "${HAVE_SERVE:-no}" != yes ]; then
    "$SD" --serve >/dev/null 2>"$TMP/err"
    rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^shimdump: --serve: not built in: ' "$TMP/err"
    ok $? "--serve in a build without libmicrohttpd: one line, exit 2: $(cat "$TMP/err")"
    skip "the scrape endpoint" "shimdump built without libmicrohttpd"
    done_testing
    exit
fi
if ! command -v curl >/dev/null; then
    skip "the scrape endpoint" "curl not installed (Debian: curl)"
    done_testing
    exit
fi

pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "${KEEPTMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# ---- Usage, before anything runs ----

"$SD" --serve=0.0.0.0:0 >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q 'not a loopback address.*--allow-remote' "$TMP/err"
ok $? "a non-loopback address is refused without --allow-remote: exit 2, one line" || diag "$TMP/err"
bad=0
for a in "127.0.0.1:99999" "localhost:80" "::1" "[::1" "1.2.3.4.5" "127.0.0.1:" "127.0.0.1:x" "[::ffff:127.0.0.1]:0"; do
    "$SD" --serve="$a" >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 2 ] || [ "$(wc -l <"$TMP/err")" -ne 1 ]; then
        echo "# --serve=$a: exit $rc" >&2
        diag "$TMP/err"
        bad=1
    fi
done
"$SD" --allow-remote --json 1 >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] || bad=1
"$SD" --serve 123 >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] || bad=1
[ $bad -eq 0 ]
ok $? "bad addresses (port out of range, a name, IPv6 without brackets, IPv4-mapped IPv6, ...), --allow-remote alone and --serve PID: exit 2, one line"

# ---- The processes and the server ----

# start_bcsim BACKEND SECONDS: bcsim under the shim with stacks on; sets $bp.
start_bcsim() {
    MALLOCSHIM_CONF="backend:$1,stacks:8,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
        "$TOP_BUILDDIR/tools/bcsim" --threads=2 --cache=8M --duration="$2" >/dev/null 2>&1 &
    bp=$!
    pids="$pids $bp"
    wait_for "$TMP/shm/mallocshim.$bp"
}

backend_pids=""
for b in $(backends); do
    start_bcsim "$b" 600
    backend_pids="$backend_pids $b:$bp"
done
sleep 1   # a sampler pass each

# start_server NAME [ARGS...]: shimdump --serve=127.0.0.1:0 in the
# background, its stderr in $TMP/NAME.err; sets $sp and $U (its base URL).
start_server() {
    name=$1
    shift
    "$@" --dir "$TMP/shm" --serve=127.0.0.1:0 2>"$TMP/$name.err" &
    sp=$!
    pids="$pids $sp"
    wait_line "$TMP/$name.err" "serving http://" || return 1
    port=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/$name.err")
    U="http://127.0.0.1:$port"
    [ -n "$port" ] && [ "$port" -gt 0 ]
}

start_server serve "$SD"
ok $? "the server says where it listens: $(grep -o 'http://[^ ]*' "$TMP/serve.err")" || diag "$TMP/serve.err"
SP=$sp
if [ "$(id -u)" -eq 0 ]; then
    grep -q '^shimdump: note: --serve runs as root: every local user' "$TMP/serve.err"
    ok $? "as root, it says that whoever reaches the port reads every user's heaps" || diag "$TMP/serve.err"
fi

# get PATH [CURL ARGS...]: the body in $TMP/body, headers in $TMP/head,
# status on stdout.
get() {
    p=$1
    shift
    curl -s -o "$TMP/body" -D "$TMP/head" -w '%{http_code}' "$@" "$U$p"
}
header() {  # header NAME: its value in $TMP/head
    tr -d '\r' <"$TMP/head" | sed -n "s/^$1: //Ip" | head -n 1
}

# IPv6 loopback, where the host has it
"$SD" --dir "$TMP/shm" --serve='[::1]:0' 2>"$TMP/v6.err" &
v6=$!
pids="$pids $v6"
_w=0
while kill -0 "$v6" 2>/dev/null && ! grep -q 'serving http' "$TMP/v6.err" && [ $_w -lt 600 ]; do
    sleep 0.1
    _w=$((_w + 1))
done
if grep -q 'serving http' "$TMP/v6.err" && v6port=$(sed -n 's|.*http://\[::1\]:\([0-9]*\)/.*|\1|p' "$TMP/v6.err") &&
    [ -n "$v6port" ]; then
    st=$(curl -s -g -o "$TMP/body" -w '%{http_code}' "http://[::1]:$v6port/metrics")
    [ "$st" = 200 ] && grep -q '^mallocshim_up{' "$TMP/body"
    ok $? "--serve=[::1]:0 serves /metrics on IPv6 loopback ($st)"
else
    skip "--serve=[::1]:0" "no IPv6 loopback here: $(cat "$TMP/v6.err")"
fi
kill "$v6" 2>/dev/null
wait "$v6" 2>/dev/null

# port in use: one line, exit 6
"$SD" --dir "$TMP/shm" --serve="127.0.0.1:$port" >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 6 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q 'Address already in use' "$TMP/err"
ok $? "a port in use: one line, exit 6" || diag "$TMP/err"

# ---- /metrics ----

st=$(get /metrics)
[ "$st" = 200 ] && header Content-Type | grep -q '^text/plain; version=0.0.4'
ok $? "/metrics: 200, the text format 0.0.4" || diag "$TMP/body"
cp "$TMP/body" "$TMP/metrics"
promtool_ok=0
if command -v promtool >/dev/null; then
    promtool check metrics <"$TMP/metrics" >"$TMP/out" 2>&1
    ok $? "promtool check metrics passes on /metrics" || diag "$TMP/out"
else
    skip "promtool check metrics" "promtool not installed (Debian: prometheus)"
fi
bad=0
for bb in $backend_pids; do
    b=${bb%%:*} p=${bb#*:}
    grep -q "^mallocshim_live_usable_bytes{pid=\"$p\",comm=\"bcsim\",backend=\"$b\"} [1-9]" "$TMP/metrics" || bad=1
done
[ $bad -eq 0 ]
ok $? "/metrics has the live usable bytes of bcsim under each backend ($(backends | tr '\n' ' '))" ||
    grep mallocshim_live_usable_bytes "$TMP/metrics" | diag

# ---- One process: /json, /report, the pprof names ----

gp=$(echo "$backend_pids" | tr ' ' '\n' | sed -n 's/^glibc://p')
st=$(get "/json?pid=$gp")
[ "$st" = 200 ] && header Content-Type | grep -q '^application/json' &&
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["pid"] == int(sys.argv[2]), d["pid"]; assert d["format_version"] == 5' "$TMP/body" "$gp" 2>"$TMP/err"
ok $? "/json?pid=N: 200, the JSON snapshot of that process" || diag "$TMP/err"

st=$(get "/report?pid=$gp")
[ "$st" = 200 ] && header Content-Type | grep -q '^text/html' &&
    header Content-Security-Policy | grep -q "default-src 'none'" &&
    grep -q '<!DOCTYPE html>' "$TMP/body" && grep -q "mallocshim.$gp" "$TMP/body" && ! grep -q '<script' "$TMP/body"
ok $? "/report?pid=N: 200, the HTML page, no script, a Content-Security-Policy that forbids any" ||
    diag "$TMP/head"

if "$SD" --pprof "$TMP/none" 2>&1 | grep -q 'not built in'; then
    st=$(get "/pprof/heap?pid=$gp")
    [ "$st" = 501 ]
    ok $? "/pprof/heap in a build without --pprof: 501, one line: $(cat "$TMP/body")"
else
    bad=0
    for path in /pprof/heap /debug/pprof/heap /debug/pprof/allocs; do
        st=$(get "$path?pid=$gp")
        if [ "$st" != 200 ] || [ "$(head -c 2 "$TMP/body" | od -An -tx1 | tr -d ' ')" != 1f8b ] ||
            ! gzip -t <"$TMP/body"; then
            echo "# $path: $st" >&2
            bad=1
        fi
    done
    [ $bad -eq 0 ]
    ok $? "/pprof/heap, /debug/pprof/heap, /debug/pprof/allocs?pid=N: 200, a gzip'd profile"
    # the same profile as --pprof's, but for the order of its samples and
    # its time: compare the decompressed sizes, which the figures fix
    "$SD" --dir "$TMP/shm" --pprof "$gp" >"$TMP/cli.pb.gz" 2>"$TMP/err"
    a=$(gzip -dc <"$TMP/body" | wc -c)
    b=$(gzip -dc <"$TMP/cli.pb.gz" | wc -c)
    [ "$a" -gt 100 ] && [ "$b" -gt 100 ]
    ok $? "the served profile and shimdump --pprof's are both whole ($a and $b bytes unpacked)" || diag "$TMP/err"
fi

# Without ?pid=, with several processes: a 400 that names them.
if [ "$(backends | wc -l)" -gt 1 ]; then
    st=$(get /json)
    bad=0
    for bb in $backend_pids; do grep -q " ${bb#*:}\b" "$TMP/body" || bad=1; done
    [ "$st" = 400 ] && [ $bad -eq 0 ] && [ "$(wc -l <"$TMP/body")" -eq 1 ]
    ok $? "/json without ?pid= and several processes: 400 naming their pids: $(cat "$TMP/body")"
fi

# ---- Bad requests: a status and one line each ----

bad=0
for case in "/json?pid=abc 400" "/json?pid=0 400" "/json?pid=-1 400" "/json?pid=1234567890 400" \
    "/json?pid=12%2034 400" "/json?pid=%00 400" "/json?pid= 400" "/report?pid=999999999 404" \
    "/json?pid=$$ 404" "/nope 404" "/metrics/../etc/passwd 404" "/pprof/heap?pid=x 400" \
    "/METRICS 404"; do
    path=${case% *} want=${case##* }
    st=$(get "$path" --path-as-is)
    if [ "$st" != "$want" ] || [ "$(wc -l <"$TMP/body")" -ne 1 ] || ! grep -q '^shimdump: ' "$TMP/body"; then
        echo "# $path: got $st, want $want: $(head -c 300 "$TMP/body")" >&2
        bad=1
    fi
done
st=$(get /metrics -X POST -d 'x=1')
[ "$st" = 405 ] && [ "$(header Allow)" = "GET, HEAD" ] || bad=1
st=$(get /metrics -X DELETE)
[ "$st" = 405 ] || bad=1
st=$(get /metrics -X GET -d 'x=1')
[ "$st" = 400 ] && grep -q 'no body' "$TMP/body" || bad=1
st=$(get /metrics -I)   # curl -I writes the headers where the body would go
[ "$st" = 200 ] && grep -q '^Content-Length: [1-9]' "$TMP/body" && ! grep -q '^# HELP' "$TMP/body" || bad=1
[ $bad -eq 0 ]
ok $? "bad pids (letters, 0, negative, 10 digits, a space, NUL, empty), unknown paths, no such process, a process not under the shim: 400 or 404 and one line; POST and DELETE: 405 with Allow; a GET with a body: 400; HEAD: headers only"

# ---- The real Prometheus ----

if command -v prometheus >/dev/null; then
    pport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: mallocshim
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
    prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
        --web.listen-address="127.0.0.1:$pport" >"$TMP/prometheus.log" 2>&1 &
    ppid=$!
    pids="$pids $ppid"
    cat >"$TMP/query.py" <<'EOF'
# query.py PORT WANT...: until Prometheus's HTTP API returns
# mallocshim_live_usable_bytes > 0 for each WANT (backend:pid), and
# mallocshim:rss_per_live_byte:ratio for them (60 s hang guard); prints what
# it got.
import json, sys, time, urllib.parse, urllib.request
port, want = sys.argv[1], dict(reversed(w.split(":")) for w in sys.argv[2:])
def query(q):
    url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
    with urllib.request.urlopen(url, timeout=5) as r:
        d = json.load(r)
    assert d["status"] == "success", d
    return {(s["metric"]["pid"], s["metric"]["backend"]): float(s["value"][1]) for s in d["data"]["result"]}
deadline, got, ratio = time.time() + 60, {}, {}
while time.time() < deadline:
    try:
        got = query('mallocshim_live_usable_bytes{job="mallocshim",comm="bcsim"}')
        ratio = query('mallocshim:rss_per_live_byte:ratio{job="mallocshim"}')
        if all(got.get((p, b), 0) > 0 and ratio.get((p, b), 0) > 0 for p, b in want.items()):
            for (p, b), v in sorted(got.items()):
                if p in want:
                    print("%s pid %s: %d live usable bytes, %.2f RSS per live byte" % (b, p, v, ratio[(p, b)]))
            sys.exit(0)
    except OSError:
        pass   # not listening yet
    time.sleep(0.5)
print("got", got, "ratio", ratio, "want", want)
sys.exit(1)
EOF
    python3 "$TMP/query.py" "$pport" $backend_pids >"$TMP/out" 2>&1
    ok $? "Prometheus scrapes /metrics: its API returns mallocshim_live_usable_bytes of bcsim under each backend, and the rules' RSS per live byte: $(tr '\n' ';' <"$TMP/out")" ||
        { diag "$TMP/out"; tail -n 20 "$TMP/prometheus.log" | diag; }
    curl -s "http://127.0.0.1:$pport/api/v1/targets" >"$TMP/targets"
    python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["data"]["activeTargets"]; assert [x["health"] for x in t] == ["up"], t; assert not t[0]["lastError"], t' "$TMP/targets" 2>"$TMP/err"
    ok $? "Prometheus's target is up, with no scrape error" || diag "$TMP/err"
    kill "$ppid"
    wait "$ppid"
    rc=$?
    [ $rc -eq 0 ]
    ok $? "prometheus stopped (exit $rc)" || tail -n 5 "$TMP/prometheus.log" | diag
else
    skip "the real Prometheus scrapes the endpoint" "prometheus not installed (Debian: prometheus)"
fi

# ---- Processes that come and go ----

start_bcsim glibc 600
short=$bp
st=$(get /metrics)
grep -q "^mallocshim_up{pid=\"$short\",comm=\"bcsim\",backend=\"glibc\"} 1" "$TMP/body"
ok $? "a process that starts mid-run is in the next scrape ($st)" || diag "$TMP/body"
kill -KILL "$short"
wait "$short" 2>/dev/null
st=$(get /metrics)
[ "$st" = 200 ] && ! grep -q "pid=\"$short\"" "$TMP/body" && grep -q '^# shimdump: 1 more segment of processes that are gone' "$TMP/body"
ok $? "killed, it is out of the next scrape, and a comment counts it ($st)" || head -n 3 "$TMP/body" | diag
st=$(get "/json?pid=$short")
[ "$st" = 200 ] && python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["state"] == "dead"' "$TMP/body"
ok $? "its post-mortem is still served by pid, as dead ($st)" || head -c 300 "$TMP/body" | diag
start_bcsim glibc 1
wait "$bp"
st=$(get "/json?pid=$bp")
[ "$st" = 404 ] && grep -q 'no such process' "$TMP/body"
ok $? "one that exited normally (its segment removed): 404, one line: $(cat "$TMP/body")"

# ---- Abuse ----

cat >"$TMP/abuse.py" <<'EOF'
# abuse.py PORT PID: 10,000 requests of good and bad paths and pids over
# keep-alive connections, broken HTTP on raw sockets, oversized headers and a
# body; then slow clients from 127.0.0.2, more than one address may hold,
# while 127.0.0.1 is still answered; then waits until the server has cut
# every slow one off (its idle timeout; 60 s hang guard).
import http.client, random, socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
random.seed(1)
cases = [("/metrics", 200), ("/json?pid=" + pid, 200), ("/nope", 404), ("/json?pid=abc", 400),
         ("/json?pid=0", 400), ("/report?pid=-5", 400), ("/json?pid=999999999", 404),
         ("/pprof/heap?pid=" + "9" * 30, 400), ("/" + "a" * 2000, 404), ("/json?pid=1&pid=2", 404),
         ("/%ff%fe", 404), ("/json?pid=%31", None)]
# the good ones cost the server a read of every segment: few of them
weights = [0.5, 0.1, 20, 20, 10, 10, 10, 10, 5, 2, 5, 5]
bad, sent, good, conn = [], 0, 0, None
while sent < 10000:
    path, want = random.choices(cases, weights)[0]
    if conn is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(random.choice(["GET", "GET", "GET", "HEAD"]), path)
        r = conn.getresponse()
        r.read()
        sent += 1
        good += r.status == 200
        if want is not None and r.status != want:
            bad.append((path, r.status))
        if r.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = None
    except (http.client.HTTPException, OSError) as e:
        bad.append((path, repr(e)))
        conn.close()
        conn = None
        sent += 1
raw = [b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"y" * 100000 + b"\r\n\r\n",
       b"GET /metrics HTTP/1.1\r\n" + b"".join(b"H%d: v\r\n" % i for i in range(5000)) + b"\r\n",
       b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + b"z" * 100000,
       b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       b"\x00\x01\x02\xff" * 1000, b"GET /json?pid=" + b"1" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"]
for data in raw * 5:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except OSError:
        pass   # the server may close before it reads everything: so be it
    s.close()
# Slow clients: a request line, then a byte now and then, never finished.
slow = []
for i in range(20):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        slow.append(s)
    except OSError:
        s.close()
time.sleep(0.5)
held = 0
for s in slow:   # those the server took, not those it refused (over its per-address limit)
    try:
        s.sendall(b"X")
        s.setblocking(False)
        try:
            held += s.recv(1) != b""   # data or EOF: closed at once
        except BlockingIOError:
            held += 1
        s.setblocking(True)
    except OSError:
        pass
if conn is not None:
    conn.close()
answered = 0
for i in range(20):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/nope")
    answered += c.getresponse().status == 404
    c.close()
deadline, left = time.time() + 60, list(slow)
while left and time.time() < deadline:
    for s in list(left):
        try:
            s.settimeout(0.2)
            if s.recv(4096) == b"":
                left.remove(s)
        except socket.timeout:
            pass
        except OSError:
            left.remove(s)
print("%d requests (%d answered 200), %d answered otherwise than expected %s; %d raw; %d slow clients "
      "held (of 20), %d of 20 others answered meanwhile, %d slow ones still open after the wait"
      % (sent, good, len(bad), bad[:5], len(raw) * 5, held, answered, len(left)))
sys.exit(0 if not bad and 0 < held <= 8 and answered == 20 and not left else 1)
EOF
python3 "$TMP/abuse.py" "$port" "$gp" >"$TMP/out" 2>&1
ok $? "abuse: $(cat "$TMP/out")" || diag "$TMP/out"
kill -0 "$SP" 2>/dev/null && st=$(get /metrics) && [ "$st" = 200 ] &&
    grep -q "^mallocshim_live_usable_bytes{pid=\"$gp\"" "$TMP/body"
ok $? "after the abuse, it still serves /metrics ($st)" || diag "$TMP/serve.err"

# ---- Another user's server ----

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$TMP"
    chmod 1777 "$TMP/shm"
    start_server nobody setpriv --reuid=65534 --regid=65534 --clear-groups "$SD"
    st=$(get /metrics)
    m=$st
    ! grep -q '^mallocshim_up{' "$TMP/body"
    r1=$?
    st=$(get "/json?pid=$gp")
    [ "$m" = 200 ] && [ $r1 -eq 0 ] && [ "$st" = 403 ] && grep -q 'permission denied' "$TMP/body"
    ok $? "a server run as uid 65534 serves none of root's processes: /metrics empty, /json?pid= 403: $(cat "$TMP/body")" ||
        diag "$TMP/nobody.err"
    kill -INT "$sp"
    wait "$sp"
    rc=$?
    [ $rc -eq 0 ]
    ok $? "SIGINT stops it: exit $rc" || diag "$TMP/nobody.err"
    chmod 700 "$TMP"
else
    skip "another user's server serves none of root's processes" "needs root and setpriv"
fi

kill -TERM "$SP"
wait "$SP"
rc=$?
[ $rc -eq 0 ]
ok $? "SIGTERM stops it: exit $rc (no snapshot broke an invariant)" || diag "$TMP/serve.err"

done_testing
