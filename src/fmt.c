/* fmt: a tiny snprintf for code that must not touch stdio or malloc. */
#include "config.h"

#include "fmt.h"

#include <stdint.h>

struct out {
    char *buf;
    size_t len;  /* capacity, including the NUL */
    size_t pos;  /* bytes written so far, pos < len whenever len > 0 */
};

static void put(struct out *o, char c)
{
    if (o->pos + 1 < o->len)
        o->buf[o->pos++] = c;
}

static void puts_(struct out *o, const char *s)
{
    if (!s)
        s = "(null)";
    while (*s)
        put(o, *s++);
}

static void putu(struct out *o, unsigned long long v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    while (n)
        put(o, tmp[--n]);
}

static void puti(struct out *o, long long v)
{
    if (v < 0) {
        put(o, '-');
        putu(o, 0ULL - (unsigned long long)v, 10);
    } else {
        putu(o, (unsigned long long)v, 10);
    }
}

size_t fmt_vbuf(char *buf, size_t len, const char *fmt, va_list ap)
{
    struct out o = { buf, len, 0 };

    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put(&o, *f);
            continue;
        }
        f++;
        int lng = 0, sz = 0;
        while (*f == 'l') {
            lng++;
            f++;
        }
        if (*f == 'z') {
            sz = 1;
            f++;
        }
        switch (*f) {
        case 's': puts_(&o, va_arg(ap, const char *)); break;
        case 'c': put(&o, (char)va_arg(ap, int)); break;
        case 'd':
            if (sz)
                puti(&o, (long long)va_arg(ap, ptrdiff_t));
            else if (lng >= 2)
                puti(&o, va_arg(ap, long long));
            else if (lng == 1)
                puti(&o, va_arg(ap, long));
            else
                puti(&o, va_arg(ap, int));
            break;
        case 'u':
        case 'x': {
            unsigned base = *f == 'x' ? 16 : 10;
            if (sz)
                putu(&o, va_arg(ap, size_t), base);
            else if (lng >= 2)
                putu(&o, va_arg(ap, unsigned long long), base);
            else if (lng == 1)
                putu(&o, va_arg(ap, unsigned long), base);
            else
                putu(&o, va_arg(ap, unsigned), base);
            break;
        }
        case 'p':
            puts_(&o, "0x");
            putu(&o, (uintptr_t)va_arg(ap, void *), 16);
            break;
        case '%': put(&o, '%'); break;
        case '\0': f--; break;
        default: put(&o, '%'); put(&o, *f); break;
        }
    }
    if (len)
        buf[o.pos] = '\0';
    return o.pos;
}

size_t fmt_buf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = fmt_vbuf(buf, len, fmt, ap);
    va_end(ap);
    return n;
}
