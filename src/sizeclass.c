/* sizeclass: the fixed table of size classes and lifetime buckets. */
#include "config.h"

#include "sizeclass.h"

/* sizeclass_by16[i] = the class of 16i bytes (0 for i = 0); a unit test
 * checks it against the definition. */
const uint8_t sizeclass_by16[SIZECLASS_BY16_MAX / 16 + 1] = {
     0,  0,  1,  2,  3,  4,  5,  6,  7,  8,  8,  9,  9, 10, 10, 11,
    11, 12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15,
    15, 16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 17, 17,
    17, 18, 18, 18, 18, 18, 18, 18, 18, 19, 19, 19, 19, 19, 19, 19,
    19, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20,
    20, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21,
    21, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22,
    22, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23,
    23, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24,
    24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24,
    24, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25,
    25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25,
    25, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26,
    26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26,
    26, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27,
    27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27,
    27,
};

size_t sizeclass_max(unsigned c)
{
    if (c < 8)
        return (size_t)(c + 1) * 16;
    if (c >= SIZECLASS_LAST)
        return SIZE_MAX;
    unsigned k = 7 + (c - 8) / 4, sub = (c - 8) % 4;
    return ((size_t)1 << k) + (((size_t)1 << (k - 2)) * (sub + 1));
}

size_t sizeclass_min(unsigned c)
{
    return c == 0 ? 0 : sizeclass_max(c - 1) + 1;
}

uint64_t lifebucket_max_ns(unsigned b)
{
    if (b >= LIFEBUCKET_LAST)
        return UINT64_MAX;
    return 1000ull << (2 * b);
}
