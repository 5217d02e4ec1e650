/* sizeclass: the fixed table of size classes and the log-scale lifetime
 * buckets that the recorder counts in and shimdump shows. Pure functions,
 * shared by the preload and the tools. */
#ifndef MALLOCSHIM_SIZECLASS_H
#define MALLOCSHIM_SIZECLASS_H

#include <stddef.h>
#include <stdint.h>

/* Size classes, by the backend's usable size of a block (known at malloc
 * and at free, so a block stays in one class all its life):
 *   classes 0..7:   16-byte steps up to 128 B: [0,16], [17,32], ... [113,128]
 *   classes 8..83:  4 per power of two above 128 B, up to 64 MiB:
 *                   (2^k, 1.25*2^k], (1.25*2^k, 1.5*2^k], (.., 1.75*2^k], (.., 2^(k+1)]
 *                   for k = 7 .. 25
 *   class 84:       everything above 64 MiB.
 * RocksDB's 16 KiB blocks (16032-16047 B requested) land in (14336, 16384],
 * apart from its 8-9 KiB compressed buffers and its small objects. */
#define SIZECLASS_COUNT 85
#define SIZECLASS_LAST  (SIZECLASS_COUNT - 1)

/* The classes of blocks up to SIZECLASS_BY16_MAX bytes, by 16-byte steps
 * (every class bound up to there is a multiple of 16): the class of n bytes
 * is sizeclass_by16[(n + 15) / 16]. */
#define SIZECLASS_BY16_MAX 4096
extern const uint8_t sizeclass_by16[SIZECLASS_BY16_MAX / 16 + 1];

/* The class of a block of n usable bytes. Never fails. One load from a
 * 257-byte table for blocks up to 4 KiB, the common case and the one that
 * mixes: a branch between the 16-byte and the log-scale classes would
 * mispredict on a mix of sizes. Above, with x = n - 1 and lg =
 * floor(log2(x)), 8 + 4(lg - 7) + the two bits of x below its top one. */
static inline unsigned sizeclass_of(size_t n)
{
    if (__builtin_expect(n <= SIZECLASS_BY16_MAX, 1))
        return sizeclass_by16[(n + 15) >> 4];
    size_t x = n - 1;
    unsigned lg = 63u ^ (unsigned)__builtin_clzll((unsigned long long)x);
    unsigned c = 4u * lg - 20u + ((unsigned)(x >> (lg - 2)) & 3u);
    return c < SIZECLASS_LAST ? c : SIZECLASS_LAST;
}

/* The largest usable size in class c (inclusive); SIZE_MAX for the last. */
size_t sizeclass_max(unsigned c);

/* The smallest usable size in class c (inclusive). */
size_t sizeclass_min(unsigned c);

/* Lifetime and age buckets, log-scale by powers of 4 from 1 us:
 *   bucket 0: <= 1 us; bucket i (1..19): <= 4^i us (bucket 19 is 3.2 days);
 *   bucket 20: more than 4^19 us. */
#define LIFEBUCKET_COUNT 21
#define LIFEBUCKET_LAST  (LIFEBUCKET_COUNT - 1)

/* The bucket of a duration in nanoseconds. */
static inline unsigned lifebucket_of(uint64_t ns)
{
    if (ns <= 1000)
        return 0;
    uint64_t us = (ns + 999) / 1000;            /* round up: <= 4^i us */
    unsigned b = (64u - (unsigned)__builtin_clzll(us - 1) + 1u) / 2u;  /* ceil(log4(us)) */
    return b > LIFEBUCKET_LAST ? LIFEBUCKET_LAST : b;
}

/* The inclusive upper bound of bucket b in nanoseconds; UINT64_MAX for the
 * last. */
uint64_t lifebucket_max_ns(unsigned b);

#endif
