// cxxops: every form of operator new/delete, std::bad_alloc, the
// new-handler, and an allocation-heavy STL workload, under the shim.
// Usage: cxxops EXPECTED_BACKEND
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

static int failures;
#define CHECK(c)                                                                    \
    do {                                                                            \
        if (!(c)) {                                                                 \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                             \
        }                                                                           \
    } while (0)

struct alignas(64) Line {
    char b[64];
};
struct alignas(4096) Page {
    char b[4096];
};

static int handler_calls;
static void *reserve;
static void handler()
{
    handler_calls++;
    if (reserve) {           // give something back, then let new retry
        ::operator delete(reserve);
        reserve = nullptr;
    } else {
        std::set_new_handler(nullptr);
    }
}

static const char *backend()
{
    auto fn = reinterpret_cast<const char *(*)()>(dlsym(RTLD_DEFAULT, "mallocshim_backend"));
    return fn ? fn() : "none";
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && std::strcmp(backend(), argv[1]) == 0);

    // Plain, array, nothrow.
    int *i = new int(7);
    CHECK(*i == 7 && malloc_usable_size(i) >= sizeof(int));
    delete i;
    int *a = new int[1000]();
    CHECK(a[999] == 0);
    delete[] a;
    int *n = new (std::nothrow) int[10];
    CHECK(n != nullptr);
    delete[] n;
    void *raw = ::operator new(100, std::nothrow);
    ::operator delete(raw, std::nothrow);
    raw = ::operator new[](100, std::nothrow);
    ::operator delete[](raw, std::nothrow);

    // Sized delete (explicit, so that the sized symbols are exercised).
    void *s = ::operator new(48);
    ::operator delete(s, 48);
    s = ::operator new[](480);
    ::operator delete[](s, 480);
    ::operator delete(nullptr, 16);

    // Aligned: the alignas types use the align_val_t forms.
    Line *l = new Line;
    CHECK(reinterpret_cast<uintptr_t>(l) % 64 == 0);
    delete l;
    Page *pg = new Page[3];
    CHECK(reinterpret_cast<uintptr_t>(pg) % 4096 == 0);
    delete[] pg;
    for (std::size_t al = 16; al <= (1u << 16); al *= 2) {
        void *p = ::operator new(100, std::align_val_t(al));
        CHECK(reinterpret_cast<uintptr_t>(p) % al == 0);
        ::operator delete(p, 100, std::align_val_t(al));
        p = ::operator new[](100, std::align_val_t(al), std::nothrow);
        CHECK(p && reinterpret_cast<uintptr_t>(p) % al == 0);
        ::operator delete[](p, std::align_val_t(al), std::nothrow);
        p = ::operator new[](100, std::align_val_t(al));
        ::operator delete[](p, 100, std::align_val_t(al));
        p = ::operator new(100, std::align_val_t(al), std::nothrow);
        ::operator delete(p, std::align_val_t(al), std::nothrow);
        p = ::operator new(100, std::align_val_t(al));
        ::operator delete(p, std::align_val_t(al));
        p = ::operator new[](100, std::align_val_t(al));
        ::operator delete[](p, std::align_val_t(al));
    }

    // Failure: std::bad_alloc from every throwing form; nullptr from nothrow.
    const std::size_t huge = SIZE_MAX / 2;
    int thrown = 0;
    try { (void)::operator new(huge); } catch (const std::bad_alloc &) { thrown++; }
    try { (void)::operator new[](huge); } catch (const std::bad_alloc &) { thrown++; }
    try { (void)::operator new(huge, std::align_val_t(64)); } catch (const std::bad_alloc &) { thrown++; }
    try { (void)::operator new[](huge, std::align_val_t(64)); } catch (const std::bad_alloc &) { thrown++; }
    try {
        std::vector<char> v;
        v.reserve(huge);
    } catch (const std::bad_alloc &) { thrown++; }
    catch (const std::length_error &) { thrown++; }
    CHECK(thrown == 5);
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    CHECK(::operator new[](huge, std::align_val_t(64), std::nothrow) == nullptr);

    // The new-handler is called, may free memory and let new retry, and
    // stops by removing itself; then bad_alloc comes.
    reserve = ::operator new(1024);
    std::set_new_handler(handler);
    thrown = 0;
    try { (void)::operator new(huge); } catch (const std::bad_alloc &) { thrown = 1; }
    CHECK(thrown == 1 && handler_calls == 2 && reserve == nullptr);
    std::set_new_handler(nullptr);

    // The nothrow forms call the new-handler too, and turn what it throws
    // into nullptr.
    static int throwing_calls;
    std::set_new_handler([] {
        throwing_calls++;
        throw std::bad_alloc();
    });
    CHECK(::operator new(huge, std::nothrow) == nullptr && throwing_calls == 1);
    CHECK(::operator new[](huge, std::nothrow) == nullptr && throwing_calls == 2);
    CHECK(::operator new(huge, std::align_val_t(64), std::nothrow) == nullptr && throwing_calls == 3);
    std::set_new_handler(nullptr);
    CHECK(::operator new(huge, std::nothrow) == nullptr && throwing_calls == 3);

    // An allocation-heavy workload, with threads, checked by its result.
    std::vector<std::thread> ts;
    std::vector<long> sums(4);
    for (int t = 0; t < 4; t++)
        ts.emplace_back([t, &sums] {
            std::map<std::string, std::vector<int>> m;
            std::unordered_map<int, std::unique_ptr<std::string>> u;
            long sum = 0;
            for (int k = 0; k < 20000; k++) {
                std::string key = "key-" + std::to_string(k % 997) + "-" + std::to_string(t);
                m[key].push_back(k);
                u[k % 1500] = std::make_unique<std::string>(static_cast<std::size_t>(k % 300), 'z');
                if (k % 7 == 0)
                    m.erase(key);
            }
            for (auto &kv : m)
                for (int v : kv.second)
                    sum += v;
            for (auto &kv : u)
                sum += static_cast<long>(kv.second->size());
            sums[static_cast<std::size_t>(t)] = sum;
        });
    for (auto &t : ts)
        t.join();
    for (int t = 1; t < 4; t++)
        CHECK(sums[static_cast<std::size_t>(t)] == sums[0]);
    std::printf("sum %ld\n", sums[0]);

    if (failures)
        std::fprintf(stderr, "cxxops: %d check(s) failed under %s\n", failures, backend());
    return failures ? 1 : 0;
}
