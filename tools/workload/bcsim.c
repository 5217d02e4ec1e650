/* bcsim: a workload generator with RocksDB's block-cache allocation pattern
 * (blocks malloc'ed on a miss and freed on eviction by whichever thread
 * evicts, amid short-lived small allocations); reports ops/s, its own live
 * bytes and the process's peak RSS. See bcsim(1). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Exit codes: 0 done; 1 a failure at run time (out of memory, no threads,
 * the accounting self-check); 2 a usage error. */
enum { EXIT_RUN = 1, EXIT_USAGE = 2 };

#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)

#define MAX_THREADS 1024
#define MAX_SHARDS 64           /* RocksDB's limit: 6 shard bits */
#define MIN_SHARD_BYTES (512 * KiB)
#define SMALL_PCT 10            /* share of small blocks, in percent */
#define MEM_WRITE_EVERY 4       /* --memtable: one write per 4 reads */
#define DEFAULT_MEMTABLE (16 * MiB)

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

struct opts {
    int threads;
    uint64_t cache;             /* capacity in bytes, over all shards */
    uint64_t block;             /* target data-block size (RocksDB block_size) */
    double spread;              /* data blocks are block * (1 - spread)..block */
    double duration;            /* seconds */
    uint64_t seed;
    uint64_t keys;              /* 0 until defaulted: 4 * cache / block */
    double skew;                /* Zipf theta; 0 = uniform */
    uint64_t memtable;          /* flush size in bytes; 0 = no writes */
    double interval;            /* seconds between progress lines; 0 = none */
    int json;
    double hold;                /* seconds to wait after the report, cache live */
};

/* Read-only once the threads start. */
static struct opts opt = {
    .threads = 16,
    .cache = 256 * MiB,
    .block = 16 * KiB,
    .spread = 0.10,
    .duration = 20,
    .seed = 1,
    .keys = 0,
    .skew = 0,
    .memtable = 0,
    .interval = 0,
    .json = 0,
    .hold = 0,
};

static void usage(FILE *f)
{
    fprintf(f,
"Usage: bcsim [OPTION]...\n"
"Reproduce RocksDB's block-cache allocation pattern: THREADS threads read\n"
"blocks through a sharded LRU cache; a miss mallocs and fills the block, an\n"
"eviction frees it, often on another thread; each read makes short-lived\n"
"small allocations too. Reports ops/s, live bytes and peak RSS.\n"
"\n"
"  -t, --threads=N        reader threads (default 16)\n"
"  -c, --cache=SIZE       cache capacity, charged by malloc_usable_size\n"
"                         (default 256M)\n"
"  -b, --block=SIZE       target data-block size (default 16K)\n"
"  -s, --spread=FRAC      data blocks are BLOCK*(1-FRAC)..BLOCK, uniform\n"
"                         (default 0.1); %d%% of blocks are small,\n"
"                         BLOCK/4..BLOCK/2\n"
"  -d, --duration=SECS    run time (default 20)\n"
"  -S, --seed=N           random seed; each thread's stream depends only on\n"
"                         it and the thread's number (default 1)\n"
"  -k, --keys=N           distinct blocks (default 4*CACHE/BLOCK)\n"
"  -z, --skew=THETA       Zipf exponent of key popularity, 0 <= THETA < 1\n"
"                         (default 0: uniform, like db_bench readrandom)\n"
"  -m, --memtable[=SIZE]  also write: every %dth read appends an entry of\n"
"                         32 B..1 KiB to a shared memtable, freed as a whole\n"
"                         when it holds SIZE (default 16M)\n"
"  -i, --interval=SECS    a progress line on stderr every SECS\n"
"  -j, --json             the report as one JSON object\n"
"  -H, --hold=SECS        after the report, keep the cache (and the process)\n"
"                         for SECS, or until SIGTERM or SIGINT, so that\n"
"                         shimdump can read what the report describes\n"
"  -h, --help             show this help and exit\n"
"  -V, --version          show the version and exit\n"
"\n"
"SIZE takes a K, M or G suffix (powers of 1024).\n"
"Exit status: 0 done, 1 failure at run time, 2 usage error.\n",
            SMALL_PCT, MEM_WRITE_EVERY);
}

/* "bcsim: <message>" on stderr, then exit with `code`. */
static void __attribute__((noreturn)) vdie(int code, const char *fmt, va_list ap)
{
    fputs("bcsim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(code);
}

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdie(EXIT_USAGE, fmt, ap);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdie(EXIT_RUN, fmt, ap);
}

/* Parses "123", "16K", "256m", "1G" into *out. Returns 0 or EINVAL. */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    uint64_t mul = 1;

    if (*s < '0' || *s > '9')
        return EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return EINVAL;
    switch (*end) {
    case 'k': case 'K': mul = KiB; end++; break;
    case 'm': case 'M': mul = MiB; end++; break;
    case 'g': case 'G': mul = GiB; end++; break;
    }
    if (*end != '\0' || v > UINT64_MAX / mul)
        return EINVAL;
    *out = v * mul;
    return 0;
}

static uint64_t opt_size(const char *name, const char *arg, uint64_t min, uint64_t max)
{
    uint64_t v;
    if (parse_size(arg, &v))
        usage_error("--%s=%s: not a size (a number with an optional K, M or G suffix)",
                    name, arg);
    if (v < min || v > max)
        usage_error("--%s=%s: out of range (%" PRIu64 "..%" PRIu64 " bytes)",
                    name, arg, min, max);
    return v;
}

static uint64_t opt_count(const char *name, const char *arg, uint64_t min, uint64_t max)
{
    char *end;
    if (*arg < '0' || *arg > '9')
        usage_error("--%s=%s: not a number", name, arg);
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || *end != '\0')
        usage_error("--%s=%s: not a number", name, arg);
    if (v < min || v > max)
        usage_error("--%s=%s: out of range (%" PRIu64 "..%" PRIu64 ")", name, arg, min, max);
    return v;
}

/* Half-open when max_open: min <= v < max. */
static double opt_real(const char *name, const char *arg, double min, double max, int max_open)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end != '\0' || !isfinite(v))
        usage_error("--%s=%s: not a number", name, arg);
    if (v < min || v > max || (max_open && v >= max))
        usage_error("--%s=%s: out of range (%.10g..%.10g%s)", name, arg, min, max,
                    max_open ? ", exclusive" : "");
    return v;
}

static void parse_args(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"threads", required_argument, NULL, 't'},
        {"cache", required_argument, NULL, 'c'},
        {"block", required_argument, NULL, 'b'},
        {"spread", required_argument, NULL, 's'},
        {"duration", required_argument, NULL, 'd'},
        {"seed", required_argument, NULL, 'S'},
        {"keys", required_argument, NULL, 'k'},
        {"skew", required_argument, NULL, 'z'},
        {"memtable", optional_argument, NULL, 'm'},
        {"interval", required_argument, NULL, 'i'},
        {"json", no_argument, NULL, 'j'},
        {"hold", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:c:b:s:d:S:k:z:m::i:jH:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 't': opt.threads = (int)opt_count("threads", optarg, 1, MAX_THREADS); break;
        case 'c': opt.cache = opt_size("cache", optarg, 1 * MiB, 1024 * GiB); break;
        case 'b': opt.block = opt_size("block", optarg, 256, 4 * MiB); break;
        case 's': opt.spread = opt_real("spread", optarg, 0, 0.9, 0); break;
        case 'd': opt.duration = opt_real("duration", optarg, 0.01, 86400.0 * 365, 0); break;
        case 'S': opt.seed = opt_count("seed", optarg, 0, UINT64_MAX); break;
        case 'k': opt.keys = opt_count("keys", optarg, 2, UINT64_C(1) << 40); break;
        case 'z': opt.skew = opt_real("skew", optarg, 0, 1, 1); break;
        case 'm':
            opt.memtable = optarg ? opt_size("memtable", optarg, 64 * KiB, 64 * GiB)
                                  : DEFAULT_MEMTABLE;
            break;
        case 'i': opt.interval = opt_real("interval", optarg, 0, 86400, 0); break;
        case 'j': opt.json = 1; break;
        case 'H': opt.hold = opt_real("hold", optarg, 0, 86400, 0); break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("bcsim %s\n", PACKAGE_VERSION); exit(0);
        case ':':
            usage_error("%s: missing value", argv[optind - 1]);
        default:
            if (optopt)
                usage_error("-%c: unknown option (see --help)", optopt);
            usage_error("%s: unknown option (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        usage_error("%s: unexpected argument (see --help)", argv[optind]);
    if (opt.cache < 16 * opt.block)
        usage_error("--cache: %" PRIu64 " bytes hold fewer than 16 blocks of %" PRIu64
                    " bytes", opt.cache, opt.block);
    if (opt.keys == 0)
        opt.keys = 4 * opt.cache / opt.block;
}

/* ------------------------------------------------------------------ */
/* Random numbers: splitmix64, one stream per thread                   */
/* ------------------------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ULL;
    return mix64(*s);
}

/* Uniform in [0, 1). */
static double rnd_unit(uint64_t *s)
{
    return (double)(rnd(s) >> 11) * 0x1.0p-53;
}

/* Uniform in [lo, hi]. */
static size_t rnd_range(uint64_t *s, size_t lo, size_t hi)
{
    return lo + (size_t)(rnd(s) % (hi - lo + 1));
}

/* ------------------------------------------------------------------ */
/* Keys: uniform, or Zipf(theta) by Gray et al.'s method (as YCSB)     */
/* ------------------------------------------------------------------ */

/* Read-only once the threads start. */
static struct {
    uint64_t n;
    double theta, alpha, zetan, eta, half_pow_theta;
} zipf;

/* sum_{i=1..n} i^-theta: exact up to a million terms, then the midpoint
 * integral, which is within 1e-9 of the sum there. */
static double zeta(uint64_t n, double theta)
{
    const uint64_t exact = 1000000;
    uint64_t m = n < exact ? n : exact;
    double sum = 0;

    for (uint64_t i = 1; i <= m; i++)
        sum += pow((double)i, -theta);
    if (n > m)
        sum += (pow((double)n + 0.5, 1 - theta) - pow((double)m + 0.5, 1 - theta)) / (1 - theta);
    return sum;
}

static void zipf_init(uint64_t n, double theta)
{
    zipf.n = n;
    zipf.theta = theta;
    if (theta == 0)
        return;
    zipf.zetan = zeta(n, theta);
    zipf.alpha = 1 / (1 - theta);
    zipf.half_pow_theta = pow(0.5, theta);
    double zeta2 = 1 + zipf.half_pow_theta;
    zipf.eta = (1 - pow(2.0 / (double)n, 1 - theta)) / (1 - zeta2 / zipf.zetan);
}

/* A key in [0, n): rank 0 is the most popular. Popularity is then scattered
 * over the shards by the key hash, as real block ids are. */
static uint64_t draw_key(uint64_t *s)
{
    if (zipf.theta == 0)
        return rnd(s) % zipf.n;
    double u = rnd_unit(s);
    double uz = u * zipf.zetan;
    if (uz < 1)
        return 0;
    if (uz < 1 + zipf.half_pow_theta)
        return 1;
    uint64_t k = (uint64_t)((double)zipf.n * pow(zipf.eta * u - zipf.eta + 1, zipf.alpha));
    return k < zipf.n ? k : zipf.n - 1;
}

/* The decompressed size of block `key`: fixed per key and seed, as a real
 * block's is. SMALL_PCT% are small (index and filter partitions, the last
 * block of a file): BLOCK/4..BLOCK/2, uniform. The rest are data blocks,
 * which RocksDB's block builder closes when the next entry would not fit,
 * so they fall short of BLOCK by up to an entry: BLOCK*(1-spread)..BLOCK,
 * uniform. */
static size_t block_size(uint64_t key)
{
    uint64_t h = mix64(key ^ mix64(opt.seed ^ 0x626c6f636bULL));
    double u = (double)(h >> 11) * 0x1.0p-53;
    double b = (double)opt.block;

    if ((h & 0xff) * 100 < SMALL_PCT * 256ULL)
        return (size_t)(b / 4 + u * (b / 4));
    return (size_t)(b * (1 - opt.spread * u));
}

/* ------------------------------------------------------------------ */
/* Per-thread counters                                                 */
/* ------------------------------------------------------------------ */

/* Synchronization: each is written only by its own thread (a relaxed load
 * and store, no locked instruction) and read by main with relaxed loads:
 * exact after the join, a snapshot before it. The live figures of one
 * thread go negative when it frees what others allocated; their sum is the
 * live total. */
struct tstats {
    _Atomic uint64_t ops, hits, mallocs, mem_writes, flushes;
    _Atomic int64_t live_req;      /* requested bytes of long-lived blocks */
    _Atomic int64_t live_usable;   /* malloc_usable_size of the same */
    _Atomic int64_t live_n;        /* cache blocks allocated - freed */
    _Atomic int64_t mem_req;       /* memtable entries, requested bytes */
} __attribute__((aligned(64)));

static struct tstats *stats;    /* opt.threads + 1; the last is main's */

#define RD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ADD(x, d) atomic_store_explicit(&(x), RD(x) + (d), memory_order_relaxed)

struct totals {
    uint64_t ops, hits, mallocs, mem_writes, flushes;
    int64_t live_req, live_usable, live_n, mem_req;
};

static struct totals sum_stats(void)
{
    struct totals t = {0};
    for (int i = 0; i <= opt.threads; i++) {
        struct tstats *s = &stats[i];
        t.ops += RD(s->ops);
        t.hits += RD(s->hits);
        t.mallocs += RD(s->mallocs);
        t.mem_writes += RD(s->mem_writes);
        t.flushes += RD(s->flushes);
        t.live_req += RD(s->live_req);
        t.live_usable += RD(s->live_usable);
        t.live_n += RD(s->live_n);
        t.mem_req += RD(s->mem_req);
    }
    return t;
}

static void *xmalloc(struct tstats *st, size_t n)
{
    void *p = malloc(n);
    if (!p)
        fail("malloc(%zu): %s", n, strerror(errno ? errno : ENOMEM));
    ADD(st->mallocs, 1);
    return p;
}

/* ------------------------------------------------------------------ */
/* The sharded LRU cache                                               */
/* ------------------------------------------------------------------ */

/* One cached block: the handle is a malloc of its own with the cache key
 * inline, as RocksDB's LRUHandle is (64-127 B). */
struct entry {
    struct entry *hnext;        /* hash chain */
    struct entry *prev, *next;  /* LRU list, while in_cache && refs == 0 */
    uint64_t key;
    char *data;                 /* the decompressed block, size bytes */
    uint32_t size;
    uint32_t data_usable;       /* malloc_usable_size(data) */
    uint32_t self_usable;       /* malloc_usable_size(this entry) */
    uint32_t charge;            /* data_usable + self_usable */
    uint32_t refs;              /* readers holding it */
    uint8_t in_cache;           /* in the hash table and counted in usage */
    uint8_t keylen;
    char keystr[];              /* the cache key (file number, offset) */
};

/* Invariants, under mu: usage == sum of charge over entries with in_cache;
 * the LRU list holds exactly the entries with in_cache && refs == 0,
 * oldest at lru.next. An entry with !in_cache is freed by whoever drops
 * its last reference. */
struct shard {
    pthread_mutex_t mu;
    /* Synchronization: all below under mu, except table and mask, which
     * are read-only after init. */
    struct entry **table;
    uint64_t mask;
    struct entry lru;
    uint64_t usage;
    uint64_t capacity;          /* read-only after init */
} __attribute__((aligned(64)));

static struct shard *shards;    /* read-only pointer after init */
static unsigned shard_bits;     /* read-only after init */

static uint64_t entry_req(const struct entry *e)
{
    return (uint64_t)e->size + sizeof(*e) + e->keylen;
}

/* RocksDB's default shard count: a shard per 512 KiB, at most 64, a power
 * of two. */
static void cache_init(void)
{
    uint64_t n = opt.cache / MIN_SHARD_BYTES;
    shard_bits = 0;
    while ((n >>= 1) != 0 && shard_bits < 6)
        shard_bits++;
    unsigned count = 1u << shard_bits;
    shards = aligned_alloc(64, sizeof(*shards) * count);
    if (!shards)
        fail("cache: %s", strerror(ENOMEM));
    uint64_t per = opt.cache / count;
    /* Buckets for twice the blocks of the mean size that fit. */
    uint64_t want = 2 * per / (opt.block * 7 / 8) + 1, buckets = 16;
    while (buckets < want)
        buckets <<= 1;
    for (unsigned i = 0; i < count; i++) {
        struct shard *sh = &shards[i];
        pthread_mutex_init(&sh->mu, NULL);
        sh->table = calloc(buckets, sizeof(*sh->table));
        if (!sh->table)
            fail("cache: %s", strerror(ENOMEM));
        sh->mask = buckets - 1;
        sh->lru.next = sh->lru.prev = &sh->lru;
        sh->usage = 0;
        sh->capacity = per;
    }
}

static struct shard *shard_of(uint64_t h)
{
    return &shards[shard_bits ? h >> (64 - shard_bits) : 0];
}

static struct entry **bucket_of(struct shard *sh, uint64_t h, uint64_t key)
{
    struct entry **pp = &sh->table[h & sh->mask];
    while (*pp && (*pp)->key != key)
        pp = &(*pp)->hnext;
    return pp;
}

static void lru_remove(struct entry *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

static void lru_append(struct shard *sh, struct entry *e)
{
    e->next = &sh->lru;
    e->prev = sh->lru.prev;
    e->prev->next = e;
    sh->lru.prev = e;
}

/* Frees an entry that left the cache, on the calling thread, whichever
 * thread allocated it. */
static void entry_free(struct tstats *st, struct entry *e)
{
    ADD(st->live_req, -(int64_t)entry_req(e));
    ADD(st->live_usable, -(int64_t)(e->data_usable + e->self_usable));
    ADD(st->live_n, -1);
    free(e->data);
    free(e);
}

/* Returns the entry for key with a reference held, or NULL. */
static struct entry *cache_lookup(uint64_t key, uint64_t h)
{
    struct shard *sh = shard_of(h);
    pthread_mutex_lock(&sh->mu);
    struct entry *e = *bucket_of(sh, h, key);
    if (e) {
        if (e->refs++ == 0)
            lru_remove(e);
    }
    pthread_mutex_unlock(&sh->mu);
    return e;
}

/* Inserts e (refs 1, held by the caller), replacing any entry of the same
 * key that a racing reader put there, and evicts from the LRU end until the
 * shard is within capacity. The evicted entries are freed after the lock is
 * dropped, as RocksDB does. */
static void cache_insert(struct tstats *st, struct entry *e, uint64_t h)
{
    struct shard *sh = shard_of(h);
    struct entry *dead = NULL;

    pthread_mutex_lock(&sh->mu);
    struct entry **pp = bucket_of(sh, h, e->key);
    struct entry *old = *pp;
    if (old) {
        *pp = old->hnext;
        old->in_cache = 0;
        sh->usage -= old->charge;
        if (old->refs == 0) {
            lru_remove(old);
            old->hnext = dead;
            dead = old;
        }
    }
    e->hnext = sh->table[h & sh->mask];
    sh->table[h & sh->mask] = e;
    e->in_cache = 1;
    e->refs = 1;
    sh->usage += e->charge;
    while (sh->usage > sh->capacity && sh->lru.next != &sh->lru) {
        struct entry *v = sh->lru.next;
        uint64_t vh = mix64(v->key);
        lru_remove(v);
        pp = bucket_of(sh, vh, v->key);
        *pp = v->hnext;
        v->in_cache = 0;
        sh->usage -= v->charge;
        v->hnext = dead;
        dead = v;
    }
    pthread_mutex_unlock(&sh->mu);
    while (dead) {
        struct entry *next = dead->hnext;
        entry_free(st, dead);
        dead = next;
    }
}

static void cache_release(struct tstats *st, struct entry *e, uint64_t h)
{
    struct shard *sh = shard_of(h);
    int gone = 0;

    pthread_mutex_lock(&sh->mu);
    if (--e->refs == 0) {
        if (e->in_cache)
            lru_append(sh, e);
        else
            gone = 1;
    }
    pthread_mutex_unlock(&sh->mu);
    if (gone)
        entry_free(st, e);
}

/* ------------------------------------------------------------------ */
/* The memtable (--memtable)                                           */
/* ------------------------------------------------------------------ */

struct mem_entry {
    struct mem_entry *next;
    uint32_t size;              /* requested, header included */
    uint32_t usable;
    char data[];
};

/* Invariant, under mu: bytes == sum of size over the list. */
static struct {
    pthread_mutex_t mu;
    /* Synchronization: head and bytes under mu. */
    struct mem_entry *head;
    uint64_t bytes;
} mem = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void mem_free_list(struct tstats *st, struct mem_entry *m)
{
    while (m) {
        struct mem_entry *next = m->next;
        ADD(st->mem_req, -(int64_t)m->size);
        ADD(st->live_req, -(int64_t)m->size);
        ADD(st->live_usable, -(int64_t)m->usable);
        free(m);
        m = next;
    }
}

/* Appends an entry; the writer that fills the memtable "flushes" it: frees
 * every entry, most of them other threads'. */
static void mem_write(struct tstats *st, uint64_t *rs)
{
    /* 32 B..1 KiB, log-uniform: key-value pairs of mixed widths. */
    size_t n = (size_t)(32.0 * pow(32.0, rnd_unit(rs)));
    struct mem_entry *m = xmalloc(st, n);
    m->size = (uint32_t)n;
    m->usable = (uint32_t)malloc_usable_size(m);
    memset(m->data, (int)n, n - sizeof(*m));
    ADD(st->mem_req, (int64_t)n);
    ADD(st->live_req, (int64_t)n);
    ADD(st->live_usable, (int64_t)m->usable);
    ADD(st->mem_writes, 1);

    struct mem_entry *flush = NULL;
    pthread_mutex_lock(&mem.mu);
    m->next = mem.head;
    mem.head = m;
    mem.bytes += n;
    if (mem.bytes >= opt.memtable) {
        flush = mem.head;
        mem.head = NULL;
        mem.bytes = 0;
    }
    pthread_mutex_unlock(&mem.mu);
    if (flush) {
        ADD(st->flushes, 1);
        mem_free_list(st, flush);
    }
}

/* ------------------------------------------------------------------ */
/* The readers                                                         */
/* ------------------------------------------------------------------ */

static volatile uint64_t sink_out;    /* what the reads computed, kept */
static atomic_int stop;          /* set by main, read relaxed by readers */
static pthread_barrier_t start;

struct worker {
    pthread_t tid;
    int index;
    uint64_t sink;              /* what the reads computed, so none is dead */
};

/* "Reads" the compressed block: bytes that depend on the key, written by a
 * serial multiply chain at about 2 bytes a cycle, the pace of a copy from
 * the page cache plus its checksum. */
static void read_compressed(char *p, size_t n, uint64_t key)
{
    uint64_t x = key | 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        memcpy(p + i, &x, 8);
    }
    for (; i < n; i++)
        p[i] = (char)(x >> (8 * (i & 7)));
}

/* "Decompresses" in[cn] into every byte of out[n], through a serial chain
 * at about LZ4's pace (4 GB/s), so that the time between allocations is
 * near a real block read's. */
static void decompress(char *out, size_t n, const char *in, size_t cn)
{
    uint64_t x = 0, w;
    size_t i = 0, j = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, in + j, 8);
        x = (x ^ w) * 0x9e3779b97f4a7c15ULL;
        memcpy(out + i, &x, 8);
        j = j + 16 <= cn ? j + 8 : 0;
    }
    for (; i < n; i++)
        out[i] = (char)(x >> (8 * (i & 7)));
}

/* A miss: read the compressed block (8-9 KiB for a 16 KiB one), allocate
 * the handle and the block, decompress into it, free the compressed copy. */
static struct entry *load_block(struct tstats *st, uint64_t key, uint64_t *rs)
{
    size_t size = block_size(key);
    size_t csize = size * (52 + rnd(rs) % 5) / 100;
    char *cbuf = xmalloc(st, csize);
    read_compressed(cbuf, csize, key);

    size_t keylen = 16 + (size_t)(mix64(key) % 9);  /* varint file number, offset */
    struct entry *e = xmalloc(st, sizeof(*e) + keylen);
    e->data = xmalloc(st, size);
    decompress(e->data, size, cbuf, csize);
    free(cbuf);

    e->key = key;
    e->size = (uint32_t)size;
    e->keylen = (uint8_t)keylen;
    memcpy(e->keystr, &key, 8);
    memset(e->keystr + 8, 0x5a, keylen - 8);
    e->data_usable = (uint32_t)malloc_usable_size(e->data);
    e->self_usable = (uint32_t)malloc_usable_size(e);
    e->charge = e->data_usable + e->self_usable;
    e->refs = 0;
    e->in_cache = 0;
    e->prev = e->next = NULL;
    ADD(st->live_req, (int64_t)entry_req(e));
    ADD(st->live_usable, (int64_t)(e->data_usable + e->self_usable));
    ADD(st->live_n, 1);
    return e;
}

/* One point read: the short-lived allocations of a Get (user key, lookup
 * key, get context, an index iterator, the value copy) interleaved with
 * the block's. */
static void read_one(struct worker *w, struct tstats *st, uint64_t *rs)
{
    uint64_t key = draw_key(rs);
    uint64_t h = mix64(key);

    size_t ulen = rnd_range(rs, 16, 31);
    char *ukey = xmalloc(st, ulen);
    memset(ukey, 'k', ulen);
    char *lkey = xmalloc(st, rnd_range(rs, 32, 63));
    memcpy(lkey, ukey, 16);
    char *ctx = xmalloc(st, rnd_range(rs, 32, 63));
    ctx[0] = 1;
    char *iter = xmalloc(st, rnd_range(rs, 64, 127));
    iter[0] = 2;

    struct entry *e = cache_lookup(key, h);
    if (e) {
        ADD(st->hits, 1);
    } else {
        e = load_block(st, key, rs);
        cache_insert(st, e, h);
    }
    free(lkey);

    /* The binary search over restart points, then the value copy. */
    char *stat = xmalloc(st, rnd_range(rs, 32, 63));
    stat[0] = 3;
    uint64_t sum = 0;
    size_t lo = 0, hi = e->size;
    while (hi - lo > 64) {
        size_t mid = lo + (hi - lo) / 2;
        sum += (unsigned char)e->data[mid];
        if ((rnd(rs) & 1))
            lo = mid;
        else
            hi = mid;
    }
    size_t vlen = (size_t)(64.0 * pow(16.0, rnd_unit(rs)));  /* 64 B..1 KiB */
    if (vlen > e->size - lo)
        vlen = e->size - lo;
    char *val = xmalloc(st, vlen + 1);
    memcpy(val, e->data + lo, vlen);
    val[vlen] = 0;
    sum += (unsigned char)val[vlen / 2] + (unsigned char)stat[0];
    cache_release(st, e, h);

    free(iter);
    free(stat);
    free(ctx);
    free(val);
    free(ukey);
    w->sink += sum;
    ADD(st->ops, 1);
}

static void *reader(void *arg)
{
    struct worker *w = arg;
    struct tstats *st = &stats[w->index];
    uint64_t rs = mix64(opt.seed) ^ mix64(0x7468726561640000ULL + (uint64_t)w->index);

    pthread_barrier_wait(&start);
    for (uint64_t n = 1; !atomic_load_explicit(&stop, memory_order_relaxed); n++) {
        read_one(w, st, &rs);
        if (opt.memtable && n % MEM_WRITE_EVERY == 0)
            mem_write(st, &rs);
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Measurements and the report                                         */
/* ------------------------------------------------------------------ */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* VmHWM and VmRSS in bytes, from /proc/self/status, read without stdio or
 * malloc so that measuring does not disturb the heap. Returns 0 or errno. */
static int read_rss(uint64_t *peak, uint64_t *cur)
{
    char buf[8192];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    int err = errno;
    close(fd);
    if (n <= 0)
        return n < 0 ? err : EIO;
    buf[n] = '\0';
    char *p = strstr(buf, "VmHWM:");
    char *q = strstr(buf, "VmRSS:");
    if (!p || !q)
        return ENOENT;
    *peak = strtoull(p + 6, NULL, 10) * KiB;
    *cur = strtoull(q + 6, NULL, 10) * KiB;
    return 0;
}

static double mib(double b)
{
    return b / (double)MiB;
}

static void progress(double t, double dt, uint64_t dops)
{
    struct totals s = sum_stats();
    uint64_t peak = 0, cur = 0;
    read_rss(&peak, &cur);
    fprintf(stderr, "bcsim: %.1f s: %.0f ops/s, hit %.1f%%, live %.1f MiB, rss %.1f MiB,"
            " peak %.1f MiB, peak/live %.2f\n",
            t, dt > 0 ? (double)dops / dt : 0,
            s.ops ? 100.0 * (double)s.hits / (double)s.ops : 0, mib((double)s.live_req),
            mib((double)cur), mib((double)peak),
            s.live_req > 0 ? (double)peak / (double)s.live_req : 0);
}

/* Walks the cache and the memtable: what they hold must be what the
 * counters say. Returns 0 or -1. */
static int self_check(const struct totals *s)
{
    int64_t req = 0, usable = 0, n = 0, memreq = 0;
    for (unsigned i = 0; i < 1u << shard_bits; i++) {
        struct shard *sh = &shards[i];
        uint64_t usage = 0;
        for (uint64_t b = 0; b <= sh->mask; b++)
            for (struct entry *e = sh->table[b]; e; e = e->hnext) {
                req += (int64_t)entry_req(e);
                usable += e->data_usable + e->self_usable;
                usage += e->charge;
                n++;
            }
        if (usage != sh->usage)
            return -1;
    }
    for (struct mem_entry *m = mem.head; m; m = m->next) {
        req += m->size;
        memreq += m->size;
        usable += m->usable;
    }
    return req == s->live_req && usable == s->live_usable && n == s->live_n &&
        memreq == s->mem_req ? 0 : -1;
}

static void teardown(struct tstats *st)
{
    for (unsigned i = 0; i < 1u << shard_bits; i++) {
        struct shard *sh = &shards[i];
        for (uint64_t b = 0; b <= sh->mask; b++)
            while (sh->table[b]) {
                struct entry *e = sh->table[b];
                sh->table[b] = e->hnext;
                entry_free(st, e);
            }
        free(sh->table);
        pthread_mutex_destroy(&sh->mu);
    }
    free(shards);
    mem_free_list(st, mem.head);
    mem.head = NULL;
}

static volatile sig_atomic_t held_out;

static void on_term(int sig)
{
    (void)sig;
    held_out = 1;
}

/* Waits `secs` seconds, or until SIGTERM or SIGINT, allocating nothing, so
 * that the heap stays as the report describes it. */
static void hold_until(double secs)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    double end = now() + secs;
    while (!held_out && now() < end) {
        struct timespec ts = { 0, 50 * 1000000L };
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    zipf_init(opt.keys, opt.skew);
    cache_init();

    stats = aligned_alloc(64, sizeof(*stats) * (size_t)(opt.threads + 1));
    struct worker *workers = calloc((size_t)opt.threads, sizeof(*workers));
    if (!stats || !workers)
        fail("setup: %s", strerror(ENOMEM));
    memset(stats, 0, sizeof(*stats) * (size_t)(opt.threads + 1));
    struct tstats *mine = &stats[opt.threads];

    int err = pthread_barrier_init(&start, NULL, (unsigned)opt.threads + 1);
    if (err)
        fail("pthread_barrier_init: %s", strerror(err));
    for (int i = 0; i < opt.threads; i++) {
        workers[i].index = i;
        err = pthread_create(&workers[i].tid, NULL, reader, &workers[i]);
        if (err)
            fail("pthread_create (thread %d of %d): %s", i + 1, opt.threads, strerror(err));
    }
    pthread_barrier_wait(&start);
    double t0 = now(), last = t0, end = t0 + opt.duration;
    uint64_t last_ops = 0;
    for (;;) {
        double t = now();
        if (t >= end)
            break;
        double next = opt.interval > 0 ? last + opt.interval : end;
        if (next > end)
            next = end;
        double wait = next - t;
        struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
        nanosleep(&ts, NULL);
        t = now();
        if (opt.interval > 0 && t >= last + opt.interval && t < end) {
            uint64_t ops = sum_stats().ops;
            progress(t - t0, t - last, ops - last_ops);
            last = t;
            last_ops = ops;
        }
    }
    atomic_store_explicit(&stop, 1, memory_order_relaxed);
    double t1 = now();
    uint64_t sink = 0;
    for (int i = 0; i < opt.threads; i++) {
        pthread_join(workers[i].tid, NULL);
        sink += workers[i].sink;
    }
    double elapsed = t1 - t0;

    struct totals s = sum_stats();
    uint64_t peak = 0, cur = 0;
    err = read_rss(&peak, &cur);
    if (err)
        fail("/proc/self/status: %s", strerror(err));
    if (self_check(&s))
        fail("accounting: the counters do not match what the cache holds");

    double ops_s = (double)s.ops / elapsed;
    double hit = s.ops ? (double)s.hits / (double)s.ops : 0;
    double ratio = s.live_req > 0 ? (double)peak / (double)s.live_req : 0;
    unsigned nshards = 1u << shard_bits;
    if (opt.json) {
        printf("{\"version\":\"%s\",\"threads\":%d,\"duration_s\":%.3f,\"seed\":%" PRIu64 ","
               "\"cache_bytes\":%" PRIu64 ",\"shards\":%u,\"block_bytes\":%" PRIu64 ","
               "\"spread\":%g,\"small_share\":%g,\"keys\":%" PRIu64 ",\"skew\":%g,"
               "\"memtable_bytes\":%" PRIu64 ",",
               PACKAGE_VERSION, opt.threads, elapsed, opt.seed, opt.cache, nshards,
               opt.block, opt.spread, SMALL_PCT / 100.0, opt.keys, opt.skew, opt.memtable);
        printf("\"ops\":%" PRIu64 ",\"ops_per_s\":%.0f,\"hit_rate\":%.4f,"
               "\"mallocs\":%" PRIu64 ",\"memtable_writes\":%" PRIu64 ","
               "\"memtable_flushes\":%" PRIu64 ",",
               s.ops, ops_s, hit, s.mallocs, s.mem_writes, s.flushes);
        printf("\"live_requested\":%" PRId64 ",\"live_usable\":%" PRId64 ","
               "\"live_blocks\":%" PRId64 ",\"memtable_live\":%" PRId64 ","
               "\"rss_peak\":%" PRIu64 ",\"rss_now\":%" PRIu64 ","
               "\"peak_rss_per_live\":%.3f}\n",
               s.live_req, s.live_usable, s.live_n, s.mem_req, peak, cur, ratio);
    } else {
        printf("bcsim %s: %d threads, %.1f s, seed %" PRIu64 "\n",
               PACKAGE_VERSION, opt.threads, elapsed, opt.seed);
        char pop[32] = "uniform";
        if (opt.skew > 0)
            snprintf(pop, sizeof(pop), "zipf %g", opt.skew);
        printf("cache       %.1f MiB in %u shards; blocks %" PRIu64 " B -%.0f%%, %d%% small;"
               " %" PRIu64 " keys, %s\n",
               mib((double)opt.cache), nshards, opt.block, opt.spread * 100, SMALL_PCT,
               opt.keys, pop);
        if (opt.memtable)
            printf("memtable    %.1f MiB, %" PRIu64 " writes, %" PRIu64 " flushes\n",
                   mib((double)opt.memtable), s.mem_writes, s.flushes);
        printf("ops         %" PRIu64 " (%.0f ops/s), hit rate %.1f%%, %.1f mallocs/op\n",
               s.ops, ops_s, hit * 100, s.ops ? (double)s.mallocs / (double)s.ops : 0);
        printf("live        requested %" PRId64 " B (%.1f MiB), usable %" PRId64
               " B (%.1f MiB), %" PRId64 " blocks\n",
               s.live_req, mib((double)s.live_req), s.live_usable, mib((double)s.live_usable),
               s.live_n);
        printf("rss         peak %.1f MiB, now %.1f MiB\n", mib((double)peak), mib((double)cur));
        printf("peak/live   %.2f\n", ratio);
    }
    if (fflush(stdout) != 0)
        fail("stdout: %s", strerror(errno));
    if (opt.hold > 0)
        hold_until(opt.hold);

    teardown(mine);
    free(stats);
    free(workers);
    sink_out = sink;
    return 0;
}
