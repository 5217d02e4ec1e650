/* check_debug's assertion compiled as in a build configured with
 * --enable-debug, whatever this build's configuration. */
#include "config.h"

#undef MALLOCSHIM_DEBUG
#define MALLOCSHIM_DEBUG 1
#include "debug.h"

int debug_count(int *evaluated);
void debug_on_assert(int value, int *evaluated);
extern const int debug_on_line;

int debug_count(int *evaluated)
{
    ++*evaluated;
    return 1;
}

/* The line of the assertion below, for the test of its message. */
const int debug_on_line = __LINE__ + 3;
void debug_on_assert(int value, int *evaluated)
{
    SHIM_ASSERT(debug_count(evaluated) && value != 0);
}
