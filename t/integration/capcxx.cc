// capcxx: C++'s operators in a captured window (t/cli/capture.sh).
// Usage: capcxx DIR. Writes DIR/ready; on DIR/go makes, on its one thread,
// 100 x { new, delete }, 100 x { new[], delete[] }, 100 x { aligned new
// (64), aligned delete }, 100 x { new, sized delete }, and nothing else;
// writes DIR/done (open(2), no allocation) and exits on DIR/quit.
#include <cstdio>
#include <fcntl.h>
#include <new>
#include <string>
#include <time.h>
#include <unistd.h>

static const char *dir;

static bool exists(const char *name)
{
    char p[4096];
    std::snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void touch(const char *name)
{
    char p[4096];
    std::snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0)
        close(fd);
}

static void pause_ms(long ms)
{
    timespec t = { 0, ms * 1000000L };
    nanosleep(&t, nullptr);
}

struct alignas(64) Line {
    char b[64];
};

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    dir = argv[1];
    touch("ready");
    while (!exists("go"))
        pause_ms(10);
    for (int i = 0; i < 100; i++) {
        int *p = new int(i);
        asm volatile("" : : "r"(p) : "memory");
        delete p;
    }
    for (int i = 0; i < 100; i++) {
        char *a = new char[100 + i];
        asm volatile("" : : "r"(a) : "memory");
        delete[] a;
    }
    for (int i = 0; i < 100; i++) {
        Line *l = new Line;
        asm volatile("" : : "r"(l) : "memory");
        delete l;
    }
    for (int i = 0; i < 100; i++) {
        void *v = ::operator new(200);
        asm volatile("" : : "r"(v) : "memory");
        ::operator delete(v, 200);
    }
    touch("done");
    while (!exists("quit"))
        pause_ms(10);
    return 0;
}
