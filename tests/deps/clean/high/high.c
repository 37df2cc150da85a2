/* high.c: uses the module below through its public header. */
#include "high.h"

#include "low.h"

int high(void) {
    return low() + 1;
}
