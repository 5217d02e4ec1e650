/* Unit tests of preload/boot.c: the bootstrap buffer. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"

START_TEST(boot_alloc_zeroed_aligned_owned)
{
    unsigned char *p = boot_alloc(100, 16);
    unsigned char *q = boot_alloc(10, 4096);
    unsigned char *r = boot_alloc(0, 8);
    unsigned char *big = boot_alloc(1, 65536);
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq((uintptr_t)big % 65536, 0);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(q);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq((uintptr_t)p % 16, 0);
    ck_assert_uint_eq((uintptr_t)q % 4096, 0);
    ck_assert_uint_eq((uintptr_t)r % 16, 0);
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(p[i], 0);
    ck_assert_uint_eq(boot_size(p), 100);
    ck_assert_uint_eq(boot_size(q), 10);
    ck_assert_uint_eq(boot_size(r), 0);
    ck_assert(boot_owns(p) && boot_owns(q) && boot_owns(r));
    ck_assert(q >= p + 100 && r >= q + 10 && big >= r);
    ck_assert(!boot_owns(NULL));
    ck_assert(!boot_owns(&p));
    ck_assert(!boot_owns(boot_buf + BOOT_SIZE));
    ck_assert(boot_owns(boot_buf + BOOT_SIZE - 1));
    ck_assert_uint_ge(boot_used(), 100 + 10 + 3 * 16);
}
END_TEST

START_TEST(boot_exhaustion_is_enomem)
{
    void *p;
    errno = 0;
    ck_assert_ptr_null(boot_alloc(BOOT_SIZE, 16));
    ck_assert_int_eq(errno, ENOMEM);
    ck_assert_ptr_null(boot_alloc(SIZE_MAX, 16));
    ck_assert_ptr_null(boot_alloc(SIZE_MAX - 8, 16));
    /* Fill it, then one more byte fails, and nothing was handed out twice. */
    while ((p = boot_alloc(4000, 16)) != NULL)
        memset(p, 0xab, 4000);
    ck_assert_int_eq(errno, ENOMEM);
    ck_assert_uint_le(boot_used(), BOOT_SIZE);
}
END_TEST

#define NTHREADS 4
#define PER_THREAD 2000

static void *grab(void *arg)
{
    unsigned char **out = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        out[i] = boot_alloc(24, 16);
        if (out[i])
            memset(out[i], (int)(uintptr_t)arg & 0xff, 24);
    }
    return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = *(uintptr_t *)a, y = *(uintptr_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(boot_concurrent_blocks_do_not_overlap)
{
    static unsigned char *ptrs[NTHREADS][PER_THREAD];
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, grab, ptrs[i]);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    qsort(ptrs, NTHREADS * PER_THREAD, sizeof(void *), cmp_ptr);
    unsigned char **flat = &ptrs[0][0];
    for (int i = 1; i < NTHREADS * PER_THREAD; i++) {
        ck_assert_ptr_nonnull(flat[i]);
        ck_assert(flat[i] >= flat[i - 1] + 24);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("boot");
    TCase *tc = tcase_create("boot");
    SRunner *sr;
    int failed;
    /* Order matters: exhaustion must run last, in one process. */
    tcase_add_test(tc, boot_alloc_zeroed_aligned_owned);
    tcase_add_test(tc, boot_concurrent_blocks_do_not_overlap);
    tcase_add_test(tc, boot_exhaustion_is_enomem);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
