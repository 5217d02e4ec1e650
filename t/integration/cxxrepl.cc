// cxxrepl: a program that replaces operator new(size_t) and operator
// delete(void *) itself, as [replacement.functions] allows, with blocks
// that carry a 16-byte header of its own. Every other form (new[], nothrow,
// sized and array deletes) must chain to these two, as the standard's
// default forms do: a sized delete that reached the allocator directly
// would free an address inside a block. Prints the calls its two operators
// saw; the output must be the same with and without the shim.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

static const unsigned long MAGIC = 0x6d616c6c6f637368ul;
static long news, deletes, bad;

void *operator new(std::size_t n)
{
    unsigned long *h = static_cast<unsigned long *>(std::malloc(n + 16));
    if (!h)
        throw std::bad_alloc();
    h[0] = MAGIC;
    h[1] = n;
    news++;
    return h + 2;
}

void operator delete(void *p) noexcept
{
    if (!p)
        return;
    unsigned long *h = static_cast<unsigned long *>(p) - 2;
    if (h[0] != MAGIC)
        bad++;
    h[0] = 0;
    deletes++;
    std::free(h);
}

struct Node {
    long v[5];
    ~Node() { v[0] = 0; }   // non-trivial: new[] keeps a count, delete[] is sized
};

int main()
{
    long news0 = news, deletes0 = deletes;   // a backend's start may call new too
    for (int i = 0; i < 1000; i++) {
        Node *n = new Node();              // delete: operator delete(void *, size_t)
        delete n;
        Node *a = new Node[1 + i % 7];     // new[] and sized delete[]
        delete[] a;
        int *q = new (std::nothrow) int[3];   // nothrow new[]
        delete[] q;
        std::string s(100 + i % 50, 'x');  // the library's own allocations
        std::vector<long> v(10 + i % 30, i);
        std::unique_ptr<long[]> u(new long[4]);
    }
    news -= news0;
    deletes -= deletes0;
    std::printf("new %ld, delete %ld, bad %ld\n", news, deletes, bad);
    return bad != 0 || news != deletes;
}
