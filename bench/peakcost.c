/* peakcost: what keeping the call sites of the peak costs the sampler
 * thread, with the stack table full. 8192 distinct call stacks (13 levels
 * of two functions each, every path a stack: more than the table's 4096
 * entries) each allocate 4 blocks of 64 bytes and keep them; then for
 * SECONDS, every millisecond, the program either allocates and frees 64
 * bytes ("flat": no sampler pass sees a new peak), or does the same but
 * every 10th millisecond keeps the block ("rise": at interval_ms:10 every
 * pass sees a new peak, sums the tracked table by stack and rewrites every
 * entry's peak figures), so that the two scan tracked tables of about one
 * size. Prints the shim's sampler thread's CPU over that time, from
 * /proc/self/task/TID/schedstat (comm "mallocshim"). Run under the shim
 * with sample:1 (every block tracked) and interval_ms:10:
 * bench/peakcost.sh does.
 * Usage: peakcost rise|flat SECONDS */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEVELS 13

/* Not static, and read at the end: the compiler may not drop the mallocs. */
void *keep[4 << LEVELS], *rise[200000];
size_t nkeep;

__attribute__((noinline)) static void leaf(void)
{
    for (int i = 0; i < 4; i++)
        keep[nkeep++] = malloc(64);
    __asm__ volatile("" ::: "memory");
}

static void lv_b(int n, unsigned path);

__attribute__((noinline)) static void lv_a(int n, unsigned path)
{
    if (n == 0)
        leaf();
    else if (path & 1)
        lv_a(n - 1, path >> 1);
    else
        lv_b(n - 1, path >> 1);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void lv_b(int n, unsigned path)
{
    if (n == 0)
        leaf();
    else if (path & 1)
        lv_a(n - 1, path >> 1);
    else
        lv_b(n - 1, path >> 1);
    __asm__ volatile("" ::: "memory");
}

/* The sampler thread's CPU so far, ns (0 when it is not found). */
static uint64_t sampler_ns(void)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    uint64_t ns = 0;
    char path[300], buf[128];
    while (dir && (e = readdir(dir)) != NULL) {
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        int is = fgets(buf, sizeof buf, f) && strcmp(buf, "mallocshim\n") == 0;
        fclose(f);
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if (is && (f = fopen(path, "r")) != NULL) {
            unsigned long long v;
            if (fscanf(f, "%llu", &v) == 1)
                ns = v;
            fclose(f);
        }
    }
    if (dir)
        closedir(dir);
    return ns;
}

int main(int argc, char **argv)
{
    struct timespec ms = { 0, 1000000 };
    if (argc != 3)
        return 2;
    int up = strcmp(argv[1], "rise") == 0;
    long secs = atol(argv[2]), n = 0;
    for (unsigned p = 0; p < 1u << LEVELS; p++)
        lv_a(LEVELS, p);
    nanosleep(&(struct timespec){ 1, 0 }, NULL);   /* the sampler's first passes */
    uint64_t t0 = sampler_ns();
    for (long i = 0; i < secs * 1000; i++) {
        if (up && i % 10 == 0 && n < 200000) {
            rise[n++] = malloc(64);
        } else {
            void *p = malloc(64);
            __asm__ volatile("" : : "r"(p) : "memory");
            free(p);
        }
        nanosleep(&ms, NULL);
    }
    uint64_t t1 = sampler_ns();
    printf("%s %ld s: sampler CPU %.1f ms (%zu blocks kept%s)\n", argv[1], secs,
           (double)(t1 - t0) / 1e6, nkeep + (size_t)n, keep[0] && (!n || rise[0]) ? "" : ", NULL");
    return 0;
}
