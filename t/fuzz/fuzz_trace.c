/* fuzz_trace: the fuzz target of the trace reader (src/traceread.c) and of
 * shimreplay's planner (tools/replay/replayplan.c). Whatever the input, reading
 * must give an error code or a trace whose plan holds: never a crash, a
 * hang or a read out of bounds. A plan is then checked as the replay would
 * run it: its tables pass plan_check; a simulated replay (the threads run
 * in turn, each as far as its waits allow) finishes, so no wait can
 * deadlock; a block is never made into a slot that holds one, nor freed
 * from an empty slot (but free(NULL)); the live bytes at the end are the
 * plan's end_live.
 * The first byte picks the mode:
 *   0: the rest is a trace file;
 *   1: the rest is a recipe, written into a trace through the writer API
 *      (so that mutations reach the events, past the checksums): a byte
 *      of threads, 16 bytes of starting heap, then events of 41 bytes (a
 *      thread byte and a struct trace_event), each made valid (a known op,
 *      the fields it does not use 0) and its id drawn from a few values,
 *      so that blocks meet;
 *   2: as 1, the events written as they are (mostly refused).
 * Built with libFuzzer (clang -fsanitize=fuzzer) and, without it, by
 * trace_driver.c. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "replayplan.h"
#include "trace.h"
#include "traceread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SIM_SLOTS_MAX (1u << 20)   /* plans with more slots are not simulated */
#define RECIPE_THREADS 6
#define RECIPE_CHUNK 16

static int memfd(const char *name)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        perror("memfd_create");
        abort();
    }
    return fd;
}

static void fatal(const char *what)
{
    fprintf(stderr, "fuzz_trace: %s\n", what);
    abort();
}

/* ---- Mode 1 and 2: a recipe written into a trace ---- */

static void make_valid(struct trace_event *e)
{
    static const uint64_t ids[] = { 0, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000 };
    int kind;
    e->op = (uint8_t)(1 + e->op % (TRACE_OP_COUNT - 1));
    e->flags &= TRACE_EVF_ALL;
    if (e->op < TRACE_OP_NEW)
        e->flags = 0;
    e->reserved = 0;
    e->id = ids[e->id % 8];
    kind = trace_op_kind(e->op);
    if (trace_op_aligned(e->op)) {
        e->align %= TRACE_ALIGN_LOG2_MAX + 1;
        if (e->op == TRACE_OP_POSIX_MEMALIGN && e->align < 3)
            e->align = 3;
    } else {
        e->align = 0;
    }
    if (e->op == TRACE_OP_REALLOC)
        e->aux = ids[e->aux % 8];
    else if (e->op != TRACE_OP_CALLOC)
        e->aux = 0;
    e->size %= 1u << 20;
    if (e->op == TRACE_OP_REALLOC && e->size % 4 == 0)
        e->size = 0;   /* realloc(p, 0), or a failed realloc when id is not 0 */
    if (e->op == TRACE_OP_CALLOC)
        e->aux %= 64;
    if (kind == TRACE_KIND_FREE && e->op != TRACE_OP_DELETE_SIZED &&
        e->op != TRACE_OP_DELETE_ARRAY_SIZED && e->op != TRACE_OP_DELETE_SIZED_ALIGNED &&
        e->op != TRACE_OP_DELETE_ARRAY_SIZED_ALIGNED)
        e->size = 0;
    if (kind != TRACE_KIND_REALLOC && !e->id)
        e->usable = 0;
    e->t_ns %= 1u << 16;   /* small times: ties, and going back */
}

/* Writes the recipe into fd as a trace. Returns 0, or -1 when it is too
 * short to be one. (trace_driver.c makes trace files with it too.) */
int fuzz_trace_recipe(int fd, const uint8_t *p, size_t n, int valid);
int fuzz_trace_recipe(int fd, const uint8_t *p, size_t n, int valid)
{
    static uint8_t ws[4 << 20] __attribute__((aligned(64)));
    struct trace_event buf[RECIPE_THREADS][RECIPE_CHUNK];
    uint32_t nbuf[RECIPE_THREADS] = { 0 }, nth, seen = 0;
    struct trace_writer w;
    struct trace_header h;
    size_t need = trace_writer_workspace(RECIPE_CHUNK, 1);

    if (n < 17 || need > sizeof ws)
        return -1;
    memset(&h, 0, sizeof h);
    h.page_size = 4096;
    h.flags = TRACE_F_START_EXACT;
    nth = 1 + p[0] % RECIPE_THREADS;
    for (unsigned i = 0; i < 8; i++) {   /* a few classes, a few blocks each */
        unsigned c = p[1 + 2 * i] % SIZECLASS_COUNT;
        uint64_t k = p[2 + 2 * i] % 16;
        h.start[c].live_count += k;
        h.start[c].live_usable += k * (sizeclass_min(c) + p[2 + 2 * i] % 17);
    }
    p += 17;
    n -= 17;
    if (trace_writer_begin(&w, fd, &h, RECIPE_CHUNK, 1, ws, sizeof ws) != 0)
        fatal("trace_writer_begin failed");
    for (; n >= 1 + sizeof(struct trace_event); p += 1 + sizeof(struct trace_event),
                                                 n -= 1 + sizeof(struct trace_event)) {
        uint32_t t = p[0] % nth;
        struct trace_event *e = &buf[t][nbuf[t]++];
        memcpy(e, p + 1, sizeof *e);
        if (valid)
            make_valid(e);
        seen |= 1u << t;
        if (nbuf[t] == RECIPE_CHUNK) {
            if (trace_writer_chunk(&w, 100 + t, buf[t], nbuf[t]) != 0)
                fatal("trace_writer_chunk failed");
            nbuf[t] = 0;
        }
    }
    for (uint32_t t = 0; t < nth; t++)
        if (nbuf[t] && trace_writer_chunk(&w, 100 + t, buf[t], nbuf[t]) != 0)
            fatal("trace_writer_chunk failed");
    w.threads = (uint32_t)__builtin_popcount(seen);
    if (trace_writer_end(&w, 0, 1u << 16) != 0)
        fatal("trace_writer_end failed");
    return 0;
}

/* ---- Checking a plan by simulating its replay ---- */

static int pread_all(int fd, void *p, size_t n, uint64_t off)
{
    return pread(fd, p, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

struct sim_thread {
    uint64_t block, end;       /* its next block, one past its last */
    uint32_t at, nops;         /* the op in the block loaded */
    uint64_t done;             /* main ops done */
    struct plan_op *ops;
};

static void check_plan(int fd, const struct plan_stats *st)
{
    struct plan_header h;
    struct plan_thread *th = NULL;
    struct plan_block *bl = NULL;
    struct sim_thread *s = NULL;
    uint8_t *full = NULL;
    uint64_t *sizes = NULL, live = 0, size = (uint64_t)lseek(fd, 0, SEEK_END);
    int big = 0;

    if (pread_all(fd, &h, sizeof h, 0) || plan_check(&h, size, NULL, NULL))
        fatal("the plan's header does not pass plan_check");
    if (memcmp(&h.stats, st, sizeof *st) != 0)
        fatal("the plan's stats differ from plan_build's");
    if (h.nslots > SIM_SLOTS_MAX)
        return;
    th = calloc(h.stats.threads, sizeof *th);
    bl = calloc(h.nblocks + 1, sizeof *bl);
    s = calloc(h.stats.threads, sizeof *s);
    full = calloc(h.nslots + 1, 1);
    sizes = calloc(h.nslots + 1, sizeof *sizes);
    if (!th || !bl || !s || !full || !sizes)
        fatal("out of memory");
    if (pread_all(fd, th, h.stats.threads * sizeof *th, h.threads_off) ||
        (h.nblocks && pread_all(fd, bl, h.nblocks * sizeof *bl, h.blocks_off)) ||
        plan_check(&h, size, th, bl))
        fatal("the plan's tables do not pass plan_check");
    for (uint32_t t = 0; t < h.stats.threads; t++) {
        s[t].block = th[t].first_block;
        s[t].end = th[t].first_block + th[t].nblocks;
        if (!(s[t].ops = malloc(PLAN_BLOCK_OPS * sizeof *s[t].ops)))
            fatal("out of memory");
    }
    /* Preludes first, as the replay does them before its barrier. */
    for (uint32_t t = 0; t < h.stats.threads; t++)
        for (; s[t].block < s[t].end && bl[s[t].block].prelude; s[t].block++) {
            const struct plan_block *b = &bl[s[t].block];
            if (pread_all(fd, s[t].ops, b->nops * sizeof *s[t].ops, b->off))
                fatal("a prelude block cannot be read");
            for (uint32_t j = 0; j < b->nops; j++) {
                const struct plan_op *op = &s[t].ops[j];
                uint64_t n = op->kind == PLAN_START_RUN ? op->n : 1;
                if ((op->kind != PLAN_START && op->kind != PLAN_START_RUN) || op->slot >= h.nslots ||
                    n > h.nslots - op->slot)
                    fatal("a prelude op out of range");
                for (uint64_t i = 0; i < n; i++) {
                    if (full[op->slot + i])
                        fatal("a starting block made into a slot that holds one");
                    full[op->slot + i] = 1;
                    sizes[op->slot + i] = op->size;
                }
            }
        }
    /* The main ops: each thread as far as its waits let it, in turn,
     * until all are done or none can move (a deadlock). */
    for (;;) {
        int moved = 0, left = 0;
        for (uint32_t t = 0; t < h.stats.threads; t++) {
            struct sim_thread *x = &s[t];
            for (;;) {
                const struct plan_op *op;
                if (x->at == x->nops) {
                    if (x->block == x->end)
                        break;
                    x->nops = bl[x->block].nops;
                    x->at = 0;
                    if (pread_all(fd, x->ops, x->nops * sizeof *x->ops, bl[x->block].off))
                        fatal("a block cannot be read");
                    x->block++;
                }
                op = &x->ops[x->at];
                if (op->dep_thread != PLAN_NONE) {
                    if (op->dep_thread >= h.stats.threads || op->dep_thread == t ||
                        op->dep_index >= th[op->dep_thread].main_ops)
                        fatal("a wait for no op");
                    if (s[op->dep_thread].done <= op->dep_index)
                        break;   /* it waits */
                }
                if ((op->slot != PLAN_NONE && op->slot >= h.nslots) ||
                    (op->old_slot != PLAN_NONE && op->old_slot >= h.nslots))
                    fatal("a slot out of range");
                switch (trace_op_kind(op->kind)) {
                case TRACE_KIND_ALLOC:
                    if (op->slot == PLAN_NONE || full[op->slot])
                        fatal("a block made into a slot that holds one");
                    full[op->slot] = 1;
                    sizes[op->slot] = op->kind == TRACE_OP_CALLOC ? op->n * op->size : op->size;
                    big |= op->size > (1ull << 40) || op->n > (1ull << 20);
                    break;
                case TRACE_KIND_FREE:
                    if (op->slot != PLAN_NONE) {
                        if (!full[op->slot])
                            fatal("a free of an empty slot");
                        full[op->slot] = 0;
                    }
                    break;
                case TRACE_KIND_REALLOC:
                    if (op->old_slot != PLAN_NONE) {
                        if (!full[op->old_slot])
                            fatal("a realloc of an empty slot");
                        full[op->old_slot] = 0;
                    }
                    if (op->slot != PLAN_NONE) {
                        if (full[op->slot])
                            fatal("a realloc into a slot that holds a block");
                        full[op->slot] = 1;
                        sizes[op->slot] = op->size;
                        big |= op->size > (1ull << 40);
                    }
                    break;
                default:
                    fatal("a main op of unknown kind");
                }
                x->at++;
                x->done++;
                moved = 1;
            }
            left |= x->block != x->end || x->at != x->nops;
        }
        if (!left)
            break;
        if (!moved)
            fatal("the plan deadlocks: every thread left waits for another");
    }
    for (uint32_t t = 0; t < h.stats.threads; t++)
        if (s[t].done != th[t].main_ops)
            fatal("a thread did not do all its ops");
    for (uint64_t i = 0; i < h.nslots; i++)
        if (full[i])
            live += sizes[i];
    if (!big && live != h.stats.end_live) {
        fprintf(stderr, "fuzz_trace: live bytes at the end %llu, the plan says %llu\n",
                (unsigned long long)live, (unsigned long long)h.stats.end_live);
        abort();
    }
    for (uint32_t t = 0; t < h.stats.threads; t++)
        free(s[t].ops);
    free(s);
    free(th);
    free(bl);
    free(full);
    free(sizes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int in = -1, out = -1;
    struct trace_file f;
    struct plan_stats st;
    char why[256];
    uint32_t version;

    if (size < 1)
        return 0;
    if (in < 0) {
        in = memfd("fuzz_trace.in");
        out = memfd("fuzz_trace.plan");
    }
    if (ftruncate(in, 0) != 0 || ftruncate(out, 0) != 0)
        fatal("ftruncate failed");
    if (data[0] % 3 == 0) {
        if (size > 1 && pwrite(in, data + 1, size - 1, 0) != (ssize_t)(size - 1))
            fatal("pwrite failed");
    } else if (fuzz_trace_recipe(in, data + 1, size - 1, data[0] % 3 == 1) != 0) {
        return 0;
    }
    why[0] = '\0';
    if (trace_open(&f, in, &version, why, sizeof why) != 0) {
        if (!memchr(why, '\0', sizeof why) || !why[0])
            fatal("an error without its phrase");
        return 0;
    }
    if (plan_build(&f, out, &st, NULL, NULL, why, sizeof why) == 0)
        check_plan(out, &st);
    trace_close(&f);
    return 0;
}
