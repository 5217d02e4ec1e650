/* sizeclass: the fixed table of size classes and lifetime buckets. */
#include "config.h"

#include "sizeclass.h"

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
