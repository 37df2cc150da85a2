/* low.c: includes only itself. */
#include "low.h"

int low(void) {
    return 1;
}
