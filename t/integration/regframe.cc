// regframe: a program that registers unwind tables of its own (as JIT
// compilers do, with __register_frame), then unwinds (backtrace(3), which
// allocates nothing before it unwinds) and throws. libgcc's unwinder then
// searches the registered tables under its own mutex and allocates there
// (sorting them, once per registration); were the shim to take that
// allocation's stack with libgcc's unwinder, it would wait for the mutex
// its own thread holds.
// So the shim takes every stack with libunwind once tables are registered.
// The work runs in a second thread, which would otherwise still be on
// libgcc's unwinder (its first 256 stacks). The tables registered are a
// copy of the program's own .eh_frame's address: the same frames, found
// twice, 20 times over. Prints "caught N" and exits 0.
// Usage: regframe
#include "config.h"

#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" void __register_frame(void *begin);
extern "C" void __deregister_frame(void *begin);

static void *eh_frame;

// The program's .eh_frame, from its PT_GNU_EH_FRAME header's first field
// (pc-relative 4 bytes, as GNU ld writes it).
static int find_eh_frame(struct dl_phdr_info *info, size_t, void *)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_GNU_EH_FRAME)
            continue;
        const unsigned char *hdr = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        if (hdr[0] != 1 || hdr[1] != 0x1b)   // version 1, DW_EH_PE_pcrel | sdata4
            return 1;
        int32_t rel;
        memcpy(&rel, hdr + 4, sizeof rel);
        eh_frame = (void *)(hdr + 4 + rel);
        return 1;
    }
    return 1;   // the first object is the program
}

__attribute__((noinline)) static void thrower(int i)
{
    if (i >= 0)
        throw i;
}

static void *work(void *)
{
    int caught = 0;
    void *frames[16];
    for (int i = 0; i < 20; i++) {
        __register_frame(eh_frame);
        if (backtrace(frames, 16) < 2)
            return NULL;
        try {
            thrower(i);
        } catch (int v) {
            caught += v == i;
        }
        __deregister_frame(eh_frame);
    }
    return (void *)(intptr_t)caught;
}

int main()
{
    pthread_t t;
    void *r;
    dl_iterate_phdr(find_eh_frame, NULL);
    if (eh_frame == NULL) {
        fprintf(stderr, "regframe: no .eh_frame found\n");
        return 77;
    }
    if (pthread_create(&t, NULL, work, NULL) != 0 || pthread_join(t, &r) != 0)
        return 1;
    printf("caught %d\n", (int)(intptr_t)r);
    return (intptr_t)r == 20 ? 0 : 1;
}
