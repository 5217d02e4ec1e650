/* capreq: shimdump --capture. Creates the trace file, hands it to the
 * process over its capture socket (src/capctl.h), and reports. */
#include "config.h"

#include "capreq.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "capctl.h"
#include "dump.h"
#include "figfmt.h"
#include "trace.h"

/* The process's command, or "?". */
static void comm_of(long pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "re");
    snprintf(buf, cap, "?");
    if (f) {
        if (fgets(buf, (int)cap, f))
            buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
    }
}

/* From /proc/PID/status: the real and effective uids (*ruid, *euid, or
 * -1) and the pid that the process has in its own pid namespace (the last
 * of NSpid: its socket is named with that one), else pid itself. */
static long status_of(long pid, long *ruid, long *euid)
{
    char path[64], line[512];
    long inner = pid;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "re");
    *ruid = *euid = -1;
    if (!f)
        return pid;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Uid:", 4)) {
            unsigned long r, e;
            if (sscanf(line + 4, "%lu %lu", &r, &e) == 2) {
                *ruid = (long)r;
                *euid = (long)e;
            }
        } else if (!strncmp(line, "NSpid:", 6)) {
            char *last = strrchr(line, '\t');
            long v = last ? strtol(last + 1, NULL, 10) : 0;
            if (v > 0)
                inner = v;
        }
    }
    fclose(f);
    return inner;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77   /* Linux 6.5 */
#endif

/* The pid that a pidfd refers to now, as this process sees it: from its
 * fdinfo's "Pid:" (-1 once the process is gone), or 0 when unknown. */
static long pidfd_pid(int pidfd)
{
    char path[64], line[256];
    long pid = 0;
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Pid:", 4)) {
            pid = strtol(line + 4, NULL, 10);
            break;
        }
    fclose(f);
    return pid;
}

/* Whether the listener at the other end of s is pid's own: its uid (the
 * kernel's word, which nobody forges) root's or pid's owner's, and, where
 * the kernel gives the listener's pidfd (SO_PEERPIDFD), that process alive
 * as pid. SO_PEERCRED's pid alone is no proof: the kernel records it when
 * the socket listens and keeps it after that process exits, so another
 * user's socket made by a process that had the pid before can claim it.
 * Returns 1, or 0 after saying why. */
static int peer_is(int s, long pid, long ruid, long euid, int *code)
{
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) {
        *code = DX_SYS;
        shimdump_err(0, "pid %ld's capture socket: SO_PEERCRED: %s", pid, strerror(errno));
        return 0;
    }
    if (cred.uid != 0 && (long)cred.uid != ruid && (long)cred.uid != euid) {
        *code = DX_PERM;
        shimdump_err(0, "the capture socket named for pid %ld is held by uid %u, neither root nor "
             "pid %ld's owner: something else holds the name; nothing was sent", pid,
             (unsigned)cred.uid, pid);
        return 0;
    }
    int pfd = -1;
    socklen_t pl = sizeof pfd;
    if (getsockopt(s, SOL_SOCKET, SO_PEERPIDFD, &pfd, &pl) == 0 && pfd >= 0) {
        long now = pidfd_pid(pfd);
        close(pfd);
        if (now != pid && now != 0) {
            *code = DX_PERM;
            shimdump_err(0, "the capture socket named for pid %ld is held by %s: something else "
                 "holds the name; nothing was sent", pid,
                 now < 0 ? "a process that has exited" : "another process");
            return 0;
        }
    } else if (errno != ENOPROTOOPT && errno != EOPNOTSUPP) {
        /* the listener is gone (ESRCH), or its pidfd cannot be had */
        *code = DX_PERM;
        shimdump_err(0, "the capture socket named for pid %ld: its listener cannot be checked (%s): "
             "nothing was sent", pid, strerror(errno));
        return 0;
    }
    /* The listener must be the process named: another pid namespace that
     * shares this network namespace may have a process of the same pid. */
    if (cred.pid != (pid_t)pid) {
        *code = DX_NOTFOUND;
        shimdump_err(0, "the capture socket named for pid %ld is another process's (pid %d here): a "
             "process in another pid namespace; run shimdump in the namespace of pid %ld",
             pid, (int)cred.pid, pid);
        return 0;
    }
    return 1;
}

/* How long a connection may wait for the listener's backlog to drain. */
#define CONNECT_WAIT_MS 5000

/* Connects to pid's capture socket, entering its network namespace where
 * it is another (root only), without blocking: a listener whose backlog
 * stays full (a squatter that never accepts) is given CONNECT_WAIT_MS, and
 * *stop (SIGINT, SIGTERM) ends the wait. Then checks that the listener is
 * pid's (peer_is). Returns the socket, blocking again, or -1 after saying
 * why. */
static int connect_to(long pid, const char *verb, const char *noun, int *code,
                      volatile sig_atomic_t *stop)
{
    struct sockaddr_un a;
    struct stat mine, theirs;
    char path[64];

    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    long ruid, euid;
    long inner = status_of(pid, &ruid, &euid);
    if (geteuid() != 0 && euid >= 0 && (uid_t)euid != geteuid()) {
        /* the process closes on anyone else without a word: say it here */
        *code = DX_PERM;
        shimdump_err(0, "only pid %ld's owner (uid %ld) or root may %s it", pid, euid, verb);
        return -1;
    }
    int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, CAPCTL_NAME, (unsigned)inner);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
    snprintf(path, sizeof path, "/proc/%ld/ns/net", pid);
    if (stat("/proc/self/ns/net", &mine) == 0 && stat(path, &theirs) == 0 &&
        (mine.st_ino != theirs.st_ino || mine.st_dev != theirs.st_dev)) {
        int ns = open(path, O_RDONLY | O_CLOEXEC);
        if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
            int e = errno;
            if (ns >= 0)
                close(ns);
            *code = e == EPERM || e == EACCES ? DX_PERM : DX_SYS;
            shimdump_err(0, "pid %ld is in another network namespace, and entering it failed (%s): run "
                 "shimdump as root, or inside it (nsenter -t %ld -n shimdump ...)",
                 pid, strerror(e), pid);
            return -1;
        }
        close(ns);
    }
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        *code = DX_SYS;
        shimdump_err(0, "socket: %s", strerror(errno));
        return -1;
    }
    int r, e = 0;
    for (int waited = 0;; waited += 10) {
        if ((r = connect(s, (struct sockaddr *)&a, alen)) == 0)
            break;
        e = errno;
        /* a full backlog: EAGAIN at once on a unix socket; wait it out */
        if ((e != EAGAIN && e != EINTR) || waited >= CONNECT_WAIT_MS || *stop)
            break;
        poll(NULL, 0, 10);
    }
    if (r != 0) {
        close(s);
        *code = DX_NOTFOUND;
        if (e == ECONNREFUSED || e == ENOENT)
            shimdump_err(0, "pid %ld takes no %s request: it does not run under libmallocshim.so with "
                 "record and capture on, its sampler has not started (no block tracked yet), or "
                 "its libmallocshim.so predates --%s", pid, noun, noun);
        else if (e == EAGAIN && *stop)
            shimdump_err(0, "interrupted while waiting for pid %ld's capture socket", pid);
        else if (e == EAGAIN)
            shimdump_err(0, "the capture socket named for pid %ld accepts no connection in %d s: "
                 "something else may hold the name, or the process is stopped", pid,
                 CONNECT_WAIT_MS / 1000);
        else
            shimdump_err(0, "cannot reach pid %ld's capture socket: %s", pid, strerror(e));
        return -1;
    }
    if (!peer_is(s, pid, ruid, euid, code) || fcntl(s, F_SETFL, 0) != 0) {
        close(s);
        return -1;
    }
    return s;
}

/* Sends the request with fd attached. */
static int send_start(int s, int fd, unsigned seconds)
{
    struct capctl_msg m;
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct iovec iov = { &m, sizeof m };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = sizeof ctl.buf };
    memset(&m, 0, sizeof m);
    memset(&ctl, 0, sizeof ctl);
    m.magic = CAPCTL_MAGIC;
    m.version = CAPCTL_VERSION;
    m.kind = CAPCTL_START;
    m.seconds = seconds;
    struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof m ? 0 : -1;
}

/* Waits up to ms for one message; returns 1 (got), 0 (nothing yet), -1
 * (the process closed the connection), -2 (a message of another protocol
 * version, or none at all). */
static int receive(int s, struct capctl_msg *m, int ms)
{
    struct pollfd pf = { s, POLLIN, 0 };
    int r = poll(&pf, 1, ms);
    if (r <= 0)
        return 0;
    ssize_t n = recv(s, m, sizeof *m, 0);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n <= 0)
        return -1;
    if (n != (ssize_t)sizeof *m || m->magic != CAPCTL_MAGIC || m->version != CAPCTL_VERSION)
        return -2;
    m->text[sizeof m->text - 1] = '\0';
    return 1;
}

static void progress(FILE *f, const struct capctl_msg *m, const char *comm, long pid)
{
    char b[32];
    fprintf(f, "\rcapturing pid %ld (%s): %.1f of %u s, %llu events, %s, %u threads, %llu "
            "dropped\033[K", pid, comm, (double)m->elapsed_ns / 1e9, m->seconds,
            (unsigned long long)m->events, figfmt_bytes(b, sizeof b, m->bytes), m->threads,
            (unsigned long long)m->dropped);
    fflush(f);
}

int capreq_run(long pid, unsigned seconds, const char *output, volatile sig_atomic_t *stop)
{
    char path[4096], comm[64], when[32], b1[32], b2[32];
    struct stat st;
    int code = DX_SYS;

    snprintf(path, sizeof path, "/proc/%ld", pid);
    if (stat(path, &st) != 0)
        return shimdump_err(DX_NOTFOUND, "no process %ld", pid);
    comm_of(pid, comm, sizeof comm);
    if (!output) {
        time_t t = time(NULL);
        strftime(when, sizeof when, "%Y%m%d-%H%M%S", localtime(&t));
        snprintf(path, sizeof path, "mallocshim-%ld-%s.trace", pid, when);
        output = path;
    }
    int fd = open(output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return shimdump_err(errno == EACCES || errno == EPERM ? DX_PERM : errno == EEXIST ? DX_USAGE : DX_SYS,
                    "%s: %s%s", output, strerror(errno),
                    errno == EEXIST ? " (never written over: give another --output)" : "");
    /* from here on, a failure before the capture starts removes the file */
    int s = connect_to(pid, "capture", "capture", &code, stop);
    if (s < 0)
        goto gone;
    if (send_start(s, fd, seconds) != 0) {
        shimdump_err(0, "cannot send the request to pid %ld: %s", pid, strerror(errno));
        goto gone_s;
    }
    struct capctl_msg m;
    int r = 0;
    for (int waited = 0; r == 0 && waited < 100 && !*stop; waited++)
        r = receive(s, &m, 100);
    if (r <= 0) {
        if (r == -2)
            shimdump_err(0, "pid %ld answered in another protocol than this shimdump's (%u): use the "
                 "shimdump of its libmallocshim.so", pid, CAPCTL_VERSION);
        else if (r < 0)
            shimdump_err(0, "pid %ld closed the connection without an answer", pid);
        else if (*stop)
            shimdump_err(0, "interrupted before pid %ld answered", pid);
        else
            shimdump_err(0, "pid %ld did not answer in 10 s", pid);
        goto gone_s;
    }
    if (m.kind == CAPCTL_REFUSED) {
        code = m.err == EPERM ? DX_PERM : DX_SYS;
        shimdump_err(0, "pid %ld refused the capture: %s", pid, m.text);
        goto gone_s;
    }
    if (m.kind != CAPCTL_STARTED) {
        shimdump_err(0, "pid %ld answered with message %u, not a start", pid, m.kind);
        goto gone_s;
    }
    close(fd);   /* the process writes it */
    int tty = isatty(2);
    fprintf(stderr, "shimdump: capturing pid %ld (%s) for %u s into %s; starting heap %llu "
            "blocks, %s%s\n", pid, comm, seconds, output, (unsigned long long)m.start_blocks,
            figfmt_bytes(b1, sizeof b1, m.start_bytes), tty ? "; ^C ends it early" : "");
    int asked = 0, answered = 0;
    uint64_t asked_at = 0, quiet = 0;
    for (;;) {
        if (*stop && !asked) {
            struct capctl_msg q;
            memset(&q, 0, sizeof q);
            q.magic = CAPCTL_MAGIC;
            q.version = CAPCTL_VERSION;
            q.kind = CAPCTL_STOP;
            send(s, &q, sizeof q, MSG_NOSIGNAL);
            asked = 1;
        }
        struct capctl_msg p;
        r = receive(s, &p, 250);
        if (asked && r == 0 && ++asked_at > 40)
            break;   /* 10 s after asking */
        if (r < 0)
            break;
        if (r == 0) {
            if (++quiet > 120)
                break;   /* 30 s without word: stopped (SIGSTOP), or its writer stuck */
            continue;
        }
        quiet = 0;
        if (p.kind == CAPCTL_PROGRESS) {
            if (tty)
                progress(stderr, &p, comm, pid);
            continue;
        }
        if (p.kind == CAPCTL_DONE) {
            m = p;
            answered = 1;
            break;
        }
    }
    close(s);
    if (tty)
        fputs("\r\033[K", stderr);
    if (!answered)
        return shimdump_err(DX_SYS, "pid %ld ended, or stopped answering, before the capture's end: %s "
                    "may lack its end (shimreplay says so)", pid, output);
    if (m.end == CAPCTL_END_ERROR)
        return shimdump_err(DX_SYS, "pid %ld: %s; %s is incomplete", pid, m.text, output);
    static const char *const why[] = {
        [CAPCTL_END_TIME] = "",
        [CAPCTL_END_SIZE] = " (stopped at the size limit, the config key capture_max)",
        [CAPCTL_END_ASKED] = " (stopped early, as asked)",
        [CAPCTL_END_EXIT] = " (the process was exiting)",
    };
    double secs = (double)m.elapsed_ns / 1e9;
    printf("%s: %llu events of %u threads in %.1f s%s; %s (%s/s); starting heap %llu blocks, %s\n",
           output, (unsigned long long)m.events, m.threads, secs,
           m.end < sizeof why / sizeof why[0] && why[m.end] ? why[m.end] : "",
           figfmt_bytes(b1, sizeof b1, m.bytes),
           figfmt_bytes(b2, sizeof b2, secs > 0 ? (uint64_t)((double)m.bytes / secs) : 0),
           (unsigned long long)m.start_blocks, figfmt_bytes(when, sizeof when, m.start_bytes));
    if (m.dropped)
        printf("%s: %llu event%s dropped (%.2f%%): threads filled their buffers faster than "
               "they were written; the replay treats what they freed as blocks from before\n",
               output, (unsigned long long)m.dropped, m.dropped == 1 ? "" : "s",
               100.0 * (double)m.dropped / (double)(m.dropped + m.events));
    if (secs <= TRACE_REPLAY_PACE_MAX_S) {
        /* paced: each replay as long as the capture */
        double min = secs * TRACE_REPLAY_ALL_CONFIGS * TRACE_REPLAY_ALL_REPEAT / 60.0;
        printf("replay it under every allocator: shimreplay --all %s (%d replays of up to %d "
               "configs, each as long as the capture: about %.0f min; add --repeat=1 --no-pace "
               "for a quick, rougher look)\n",
               output, TRACE_REPLAY_ALL_REPEAT, TRACE_REPLAY_ALL_CONFIGS, min < 1 ? 1 : ceil(min));
    } else {
        printf("replay it under every allocator: shimreplay --all %s\n", output);
    }
    return DX_OK;

gone_s:
    close(s);
gone:
    close(fd);
    unlink(output);
    return code;
}

int capreq_set(long pid, const char *settings, volatile sig_atomic_t *stop)
{
    char path[64], comm[64];
    struct stat st;
    struct capctl_msg m;
    int code = DX_SYS;

    snprintf(path, sizeof path, "/proc/%ld", pid);
    if (stat(path, &st) != 0)
        return shimdump_err(DX_NOTFOUND, "no process %ld", pid);
    if (strlen(settings) >= sizeof m.text)
        return shimdump_err(DX_USAGE, "--set: the settings are too long (%zu bytes at most)",
                            sizeof m.text - 1);
    comm_of(pid, comm, sizeof comm);
    int s = connect_to(pid, "change the settings of", "set", &code, stop);
    if (s < 0)
        return code;
    memset(&m, 0, sizeof m);
    m.magic = CAPCTL_MAGIC;
    m.version = CAPCTL_VERSION;
    m.kind = CAPCTL_SET;
    snprintf(m.text, sizeof m.text, "%s", settings);
    if (send(s, &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m) {
        shimdump_err(0, "cannot send the request to pid %ld: %s", pid, strerror(errno));
        close(s);
        return DX_SYS;
    }
    int r = 0;
    for (int waited = 0; r == 0 && waited < 100 && !*stop; waited++)
        r = receive(s, &m, 100);
    close(s);
    if (r == -2)
        return shimdump_err(DX_SYS, "pid %ld answered in another protocol than this shimdump's (%u): "
                            "use the shimdump of its libmallocshim.so", pid, CAPCTL_VERSION);
    if (r < 0)
        return shimdump_err(DX_SYS, "pid %ld closed the connection without an answer", pid);
    if (r == 0)
        return shimdump_err(DX_SYS, *stop ? "interrupted before pid %ld answered"
                                          : "pid %ld did not answer in 10 s", pid);
    if (m.kind == CAPCTL_REFUSED) {
        if (m.err == EPROTO)
            return shimdump_err(DX_SYS, "pid %ld cannot change its settings: its libmallocshim.so "
                                "predates --set (%s)", pid, m.text);
        return shimdump_err(m.err == EPERM ? DX_PERM : m.err == EINVAL || m.err == ENOTSUP ? DX_USAGE
                                                                                 : DX_SYS,
                            "pid %ld refused the settings: %s", pid, m.text);
    }
    if (m.kind != CAPCTL_SET_DONE)
        return shimdump_err(DX_SYS, "pid %ld answered with message %u, not the settings", pid, m.kind);
    printf("pid %ld (%s): %s%s\n", pid, comm, m.err == EALREADY ? "nothing to change, already " : "now ",
           m.text);
    return DX_OK;
}
