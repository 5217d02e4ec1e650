/* serve: shimdump --serve (see serve.h). libmicrohttpd parses HTTP and
 * bounds each connection's memory, idle time and count; every request is
 * answered in shimdump's own thread, one at a time, with a body made whole
 * in memory by the code behind --prometheus, --json, --html and --pprof. */
#include "config.h"

#include "serve.h"

#include "capreq.h"

#ifndef HAVE_SERVE

const char *serve_missing(void)
{
    return "not built in: " SERVE_MISSING;
}

int serve_run(const char *addr, int remote, const struct serve_ops *ops,
              volatile sig_atomic_t *stop)
{
    (void)addr;
    (void)remote;
    (void)ops;
    (void)stop;
    return shimdump_err(DX_USAGE, "--serve: %s", serve_missing());
}

#else

#include "pprof.h"
#include "prom.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* What a client can claim. On loopback every client has the same address
 * unless it binds another of 127/8, so the per-address limit keeps only
 * such a client from taking every connection; the idle timeout frees a
 * connection held by a slow or silent one. */
#define SERVE_CONNECTIONS 32           /* connections at once */
#define SERVE_PER_IP 8                 /* connections at once from one address */
#define SERVE_TIMEOUT_S 10             /* an idle connection is closed after this */
#define SERVE_CONN_MEMORY (32 * 1024)  /* a request's line and headers, and I/O buffers */
#define SERVE_BODY_MAX ((size_t)64 << 20)       /* one response's body */
#define SERVE_INFLIGHT_MAX ((size_t)256 << 20)  /* bodies queued and not yet sent, in all */

/* Bytes of the bodies that connections hold until they are sent.
 * Synchronization: only shimdump's thread, in which libmicrohttpd runs
 * (no internal thread: serve_run drives it with MHD_run_wait). */
static size_t inflight;

const char *serve_missing(void)
{
    return NULL;
}

/* One answer: its status, headers and whole body. */
struct reply {
    unsigned status;
    const char *type;          /* Content-Type */
    const char *disposition;   /* Content-Disposition, or NULL */
    int html;                  /* the page: a Content-Security-Policy */
    int allow;                 /* 405: an Allow header */
    char *body;                /* malloc'ed */
    size_t len;
};

#define TEXT "text/plain; charset=utf-8"

/* r becomes a one-line error: "shimdump: <what>". */
static void reply_error(struct reply *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reply_error(struct reply *r, unsigned status, const char *fmt, ...)
{
    va_list ap;
    char *line = NULL;
    free(r->body);
    memset(r, 0, sizeof *r);
    r->status = status;
    r->type = TEXT;
    va_start(ap, fmt);
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0 || asprintf(&r->body, "shimdump: %s\n", line) < 0)
        r->body = NULL;
    free(line);
    r->len = r->body ? strlen(r->body) : 0;
}

/* The status for shimdump's exit code rc. */
static unsigned dx_status(int rc)
{
    switch (rc) {
    case DX_NOTFOUND: return MHD_HTTP_NOT_FOUND;
    case DX_PERM: return MHD_HTTP_FORBIDDEN;
    case DX_USAGE: return MHD_HTTP_BAD_REQUEST;
    default: return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}

/* Errors of one reader's call, caught: shimdump_err writes into *msg
 * between catch_start and catch_end, instead of on stderr. */
struct catch {
    FILE *f;
    char *msg;
    size_t len;
};

static int catch_start(struct catch *k)
{
    k->msg = NULL;
    k->len = 0;
    if ((k->f = open_memstream(&k->msg, &k->len)) == NULL)
        return ENOMEM;
    shimdump_err_to(k->f);
    return 0;
}

/* Ends the catch; where rc is not DX_OK, r becomes the error caught (its
 * lines as shimdump would say them) with the status for rc. */
static void catch_end(struct catch *k, int rc, struct reply *r)
{
    shimdump_err_to(NULL);
    fclose(k->f);
    if (rc != DX_OK) {
        free(r->body);
        memset(r, 0, sizeof *r);
        r->status = dx_status(rc);
        r->type = TEXT;
        if (k->msg && k->len) {
            r->body = k->msg;
            r->len = k->len;
            return;
        }
        reply_error(r, r->status, "the read failed (exit status %d)", rc);
    }
    free(k->msg);
}

/* ops->load with its errors caught into r. */
static int load(const struct serve_ops *ops, const char *pid, int frames, struct dump *d,
                struct reply *r)
{
    struct catch k;
    if (catch_start(&k) != 0) {
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return DX_SYS;
    }
    int rc = ops->load(pid, frames, d);
    catch_end(&k, rc, r);
    return rc;
}

/* ops->load_all with its errors caught into r; the notes on `notes`. */
static int load_all(const struct serve_ops *ops, FILE *notes, struct dump **d, size_t *n,
                    struct reply *r)
{
    struct catch k;
    *d = NULL;
    *n = 0;
    if (catch_start(&k) != 0) {
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return DX_SYS;
    }
    int rc = ops->load_all(notes, "# shimdump: ", d, n);
    catch_end(&k, rc, r);
    return rc;
}

static void free_dumps(struct dump *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dump_free(&d[i]);
    free(d);
}

/* A process id as ?pid= gives it: 1 to 9 digits, the first not 0. */
static int pid_ok(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return n >= 1 && n <= 9 && s[n] == '\0' && s[0] != '0';
}

/* The pid a request names, into pid[]: ?pid=, else the one running process
 * under the shim that this user can read. 0, or -1 with r the error. */
static int request_pid(struct MHD_Connection *c, const struct serve_ops *ops, char pid[16],
                       struct reply *r)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
    if (v) {
        if (!pid_ok(v)) {
            reply_error(r, MHD_HTTP_BAD_REQUEST, "pid: give a process id, 1 to 9 digits");
            return -1;
        }
        snprintf(pid, 16, "%s", v);
        return 0;
    }
    struct dump *d;
    size_t n;
    FILE *devnull = fopen("/dev/null", "w");
    int rc = devnull ? load_all(ops, devnull, &d, &n, r) : DX_SYS;
    if (devnull)
        fclose(devnull);
    else
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "/dev/null: %s", strerror(errno));
    if (rc != DX_OK)
        return -1;
    if (n == 1) {
        snprintf(pid, 16, "%u", d[0].pid);
        free_dumps(d, n);
        return 0;
    }
    if (n == 0) {
        reply_error(r, MHD_HTTP_NOT_FOUND, "no running process under the shim whose segment this "
                    "server can read (shimdump --list says which it sees)");
        return -1;
    }
    char list[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, " %u", d[i].pid);
    reply_error(r, MHD_HTTP_BAD_REQUEST, "%zu processes run under the shim (pids%s%s): give one "
                "with ?pid=", n, list, used >= sizeof list ? " ..." : "");
    free_dumps(d, n);
    return -1;
}

/* r's body: what memory stream f (of *buf and *len) holds, once closed.
 * 0, or ENOMEM with r an error. */
static int body_of(struct reply *r, FILE *f, char **buf, size_t *len)
{
    if (fclose(f) != 0) {
        free(*buf);
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return ENOMEM;
    }
    r->body = *buf;
    r->len = *len;
    return 0;
}

/* /metrics: every running process's metrics, as shimdump --prometheus
 * prints them, what was left out said in comments first. */
static void get_metrics(const struct serve_ops *ops, struct reply *r)
{
    struct dump *d;
    const struct dump **p;
    size_t n, len = 0;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    if (load_all(ops, f, &d, &n, r) != DX_OK) {
        fclose(f);
        free(buf);
        return;
    }
    if ((p = calloc(n ? n : 1, sizeof *p)) == NULL) {
        free_dumps(d, n);
        fclose(f);
        free(buf);
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        p[i] = &d[i];
    prom_write(f, p, n);
    free(p);
    free_dumps(d, n);
    if (body_of(r, f, &buf, &len) == 0) {
        r->status = MHD_HTTP_OK;
        r->type = "text/plain; version=0.0.4; charset=utf-8";
    }
}

enum view { V_JSON, V_REPORT, V_PPROF };

/* /json, /report and the pprof names: one process's snapshot. */
static void get_view(struct MHD_Connection *c, const struct serve_ops *ops, enum view v,
                     struct reply *r)
{
    char pid[16];
    struct dump d;
    if (v == V_PPROF && pprof_missing()) {
        reply_error(r, MHD_HTTP_NOT_IMPLEMENTED, "pprof: %s", pprof_missing());
        return;
    }
    if (request_pid(c, ops, pid, r) != 0 || load(ops, pid, 1, &d, r) != DX_OK)
        return;
    if (v == V_PPROF) {
        unsigned char *out = NULL;
        size_t len = 0;
        int rc = pprof_build(&d, &out, &len);
        dump_free(&d);
        if (rc == EINVAL) {
            reply_error(r, MHD_HTTP_NOT_FOUND, "pid %s: no call stacks to profile: the process runs "
                        "with stacks:0", pid);
        } else if (rc) {
            reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "pid %s: out of memory making the "
                        "profile", pid);
        } else {
            r->status = MHD_HTTP_OK;
            r->type = "application/octet-stream";
            r->disposition = "attachment; filename=\"heap.pb.gz\"";
            r->body = (char *)out;
            r->len = len;
        }
        return;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = 0;
    if (!f) {
        dump_free(&d);
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    if (v == V_JSON) {
        dump_write_json(f, &d);
    } else {
        const struct dump *p = &d;
        struct html_opts ho = ops->html;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ho.now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        rc = html_report(f, &p, 1, &ho);
    }
    dump_free(&d);
    if (body_of(r, f, &buf, &len) != 0)
        return;
    if (rc != 0) {
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "pid %s: out of memory making the page", pid);
        return;
    }
    r->status = MHD_HTTP_OK;
    r->type = v == V_JSON ? "application/json" : "text/html; charset=utf-8";
    r->html = v == V_REPORT;
}

static const char index_text[] =
    "shimdump --serve: the heaps of the processes under libmallocshim.so on this host\n"
    "\n"
    "/metrics             every running process this server's user can read, in the\n"
    "                     Prometheus text format (shimdump --prometheus)\n"
    "/json?pid=N          one process's snapshot as JSON (shimdump --json N)\n"
    "/report?pid=N        its HTML page (shimdump --html N)\n"
    "/pprof/heap?pid=N    its call sites as a gzip'd pprof heap profile (shimdump --pprof N);\n"
    "                     also at /debug/pprof/heap and /debug/pprof/allocs, where Parca and\n"
    "                     Pyroscope look\n"
    "\n"
    "Without ?pid=, the one running process under the shim, if there is only one.\n"
    "See shimdump(1), SCRAPE ENDPOINT.\n";

/* The answer to one request, in r. */
static void route(struct MHD_Connection *c, const struct serve_ops *ops, const char *url,
                  const char *method, struct reply *r)
{
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served here");
        r->allow = 1;
    } else if (inflight > SERVE_INFLIGHT_MAX) {
        reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "busy: %zu MiB of answers wait for their "
                    "clients to read them; try again later", inflight >> 20);
    } else if (strcmp(url, "/metrics") == 0) {
        get_metrics(ops, r);
    } else if (strcmp(url, "/json") == 0) {
        get_view(c, ops, V_JSON, r);
    } else if (strcmp(url, "/report") == 0) {
        get_view(c, ops, V_REPORT, r);
    } else if (strcmp(url, "/pprof/heap") == 0 || strcmp(url, "/debug/pprof/heap") == 0 ||
               strcmp(url, "/debug/pprof/allocs") == 0) {
        get_view(c, ops, V_PPROF, r);
    } else if (strcmp(url, "/") == 0) {
        r->status = MHD_HTTP_OK;
        r->type = TEXT;
        r->body = strdup(index_text);
        r->len = r->body ? strlen(r->body) : 0;
    } else {
        reply_error(r, MHD_HTTP_NOT_FOUND, "no such page: see / for the pages served");
    }
    if (!r->body)
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    if (r->body && r->len > SERVE_BODY_MAX) {
        size_t len = r->len;
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "the answer, %zu MiB, is over the %zu MiB "
                    "that --serve sends", len >> 20, SERVE_BODY_MAX >> 20);
    }
}

/* A body that a response owns, counted in `inflight` until it is freed. */
struct held {
    char *body;
    size_t len;
};

static void held_free(void *cls)
{
    struct held *h = cls;
    inflight -= h->len;
    free(h->body);
    free(h);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **req_cls)
{
    const struct serve_ops *ops = cls;
    struct reply r;
    struct held *h;
    struct MHD_Response *resp;
    enum MHD_Result ret;

    (void)version;
    (void)upload;
    /* The first call has the headers only. A GET or HEAD is answered once
     * its request is whole (a body it should not have read and dropped,
     * then refused), so that the connection can stay open for another;
     * any other method on the first call, before its body, which is never
     * read (libmicrohttpd closes the connection after the answer). */
    static int seen, had_body;
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (get && *req_cls == NULL) {
        *req_cls = &seen;
        return MHD_YES;
    }
    if (get && *upload_len) {
        *upload_len = 0;
        *req_cls = &had_body;
        return MHD_YES;
    }
    memset(&r, 0, sizeof r);
    if (get && *req_cls == &had_body) {
        reply_error(&r, MHD_HTTP_BAD_REQUEST, "a GET or HEAD request has no body here");
    } else {
        route(c, ops, url, method, &r);
    }
    if (!r.body || (h = malloc(sizeof *h)) == NULL) {
        free(r.body);
        return MHD_NO;   /* out of memory: libmicrohttpd closes the connection */
    }
    h->body = r.body;
    h->len = r.len;
    resp = MHD_create_response_from_buffer_with_free_callback_cls(r.len, r.body, held_free, h);
    if (!resp) {
        free(r.body);
        free(h);
        return MHD_NO;
    }
    inflight += r.len;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.type);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r.disposition)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, r.disposition);
    /* The page is self-contained: no script, nothing fetched. */
    if (r.html)
        MHD_add_response_header(resp, "Content-Security-Policy",
                                "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
    if (r.allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    ret = MHD_queue_response(c, r.status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Whether sa is a loopback address: 127/8 or ::1. */
static int is_loopback(const struct sockaddr_storage *sa)
{
    if (sa->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* Parses addr (serve.h) into *sa. 0, or EINVAL. */
static int parse_addr(const char *addr, struct sockaddr_storage *sa, socklen_t *salen)
{
    char host[64] = SERVE_HOST_DEFAULT;
    const char *port = NULL;
    long p = SERVE_PORT_DEFAULT;

    if (addr && *addr == '[') {
        const char *end = strchr(addr, ']');
        if (!end || (size_t)(end - addr - 1) >= sizeof host || (end[1] && end[1] != ':'))
            return EINVAL;
        memcpy(host, addr + 1, (size_t)(end - addr - 1));
        host[end - addr - 1] = '\0';
        port = end[1] ? end + 2 : NULL;
    } else if (addr && *addr) {
        const char *colon = strrchr(addr, ':');
        size_t hl = colon ? (size_t)(colon - addr) : strlen(addr);
        if (colon && strchr(addr, ':') != colon)
            return EINVAL;   /* an IPv6 address goes in brackets */
        if (hl >= sizeof host)
            return EINVAL;
        if (hl) {
            memcpy(host, addr, hl);
            host[hl] = '\0';
        }
        port = colon ? colon + 1 : NULL;
    }
    if (port) {
        char *end;
        if (!*port || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5)
            return EINVAL;
        p = strtol(port, &end, 10);
        if (p > 65535)
            return EINVAL;
    }
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)p);
        *salen = sizeof *s4;
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1 &&
               !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {   /* an IPv4 address is given as one */
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)p);
        *salen = sizeof *s6;
    } else {
        return EINVAL;
    }
    return 0;
}

/* "HOST:PORT" or "[HOST]:PORT" of sa. */
static const char *addr_str(const struct sockaddr_storage *sa, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port;
    if (sa->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
        snprintf(buf, cap, "%s:%u", host, port);
    } else {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
        snprintf(buf, cap, "[%s]:%u", host, port);
    }
    return buf;
}

int serve_run(const char *addr, int remote, const struct serve_ops *ops,
              volatile sig_atomic_t *stop)
{
    struct sockaddr_storage sa;
    socklen_t salen;
    char where[96];
    int fd, one = 1;

    if (parse_addr(addr, &sa, &salen) != 0)
        return shimdump_err(DX_USAGE, "--serve=%s: give HOST:PORT, HOST, :PORT or [IPV6]:PORT, "
                            "HOST a numeric address (default %s:%d)", addr, SERVE_HOST_DEFAULT,
                            SERVE_PORT_DEFAULT);
    if (!is_loopback(&sa) && !remote)
        return shimdump_err(DX_USAGE, "--serve=%s: not a loopback address: whoever reaches it would "
                            "read every heap this user can; add --allow-remote to serve it there",
                            addr);
    fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return shimdump_err(DX_SYS, "--serve: socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sa.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, salen) != 0 || listen(fd, SERVE_CONNECTIONS) != 0) {
        int e = errno;
        close(fd);
        return shimdump_err(DX_SYS, "--serve: %s: %s%s", addr_str(&sa, where, sizeof where),
                            strerror(e), e == EADDRINUSE ? " (another shimdump --serve? give "
                            "another port with --serve=HOST:PORT)" : "");
    }
    salen = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &salen);

    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_AUTO | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
        on_request, (void *)ops,
        MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)SERVE_PER_IP,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_CONN_MEMORY,
        MHD_OPTION_END);
    if (!daemon) {
        close(fd);
        return shimdump_err(DX_SYS, "--serve: %s: libmicrohttpd would not start",
                            addr_str(&sa, where, sizeof where));
    }
    addr_str(&sa, where, sizeof where);
    if (geteuid() == 0)
        fprintf(stderr, "shimdump: note: --serve runs as root: every local user who reaches %s reads "
                "every user's heaps; run it as the processes' user instead (shimdump(1))\n", where);
    fprintf(stderr, "shimdump: serving http://%s/metrics (and /json, /report, /pprof/heap); "
            "SIGTERM or Ctrl-C stops\n", where);
    fflush(stderr);
    /* libmicrohttpd in shimdump's thread (no MHD_USE_INTERNAL_POLLING_THREAD:
     * the readers are not made for threads), epoll'ed where it can. The wait
     * is bounded so that a signal that comes just before it is seen within
     * half a second. */
    while (!*stop)
        if (MHD_run_wait(daemon, 500) != MHD_YES && !*stop) {
            usleep(100000);   /* a failure libmicrohttpd keeps giving: do not spin */
        }
    MHD_stop_daemon(daemon);   /* which closes fd */
    return DX_OK;
}

#endif
