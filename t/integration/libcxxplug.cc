// libcxxplug: a C++ plugin that a C program dlopens with RTLD_LOCAL, so that
// its libstdc++ is not in the global scope; its out-of-memory paths must
// still throw std::bad_alloc and call its new-handler.
#include <cstdint>
#include <new>

static int calls;

extern "C" int plug_bad_alloc_caught(void)
{
    try {
        void *p = ::operator new(SIZE_MAX / 2);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        return 1;
    }
    return 0;
}

extern "C" int plug_handler_calls(void)
{
    std::set_new_handler([] {
        calls++;
        std::set_new_handler(nullptr);
    });
    try {
        (void)::operator new(SIZE_MAX / 2);
    } catch (const std::bad_alloc &) {
    }
    return calls;
}
