/* SPDX-License-Identifier: Apache-2.0 */
/* The one way the engine and the binding grow an array: double the
 * capacity until it holds what is needed, zero the new elements, and fail
 * with -ENOMEM (also when the size would overflow) leaving the array as it
 * was. Called by the scheduler, the timer heap and the binding's per-node
 * tables; never reads anything but its arguments. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* The first capacity of an empty array: small enough for a per-node table,
 * large enough that a queue does not regrow at once. */
#define GROW_FIRST 16

int askew__grow_alloc(void **buf, size_t *cap, size_t need, size_t elem)
{
    ASKEW_ASSERT(elem > 0);
    if (need <= *cap)
        return 0;
    size_t cap_new = *cap ? *cap : GROW_FIRST;
    while (cap_new < need) {
        if (cap_new > SIZE_MAX / 2)
            return -ENOMEM;
        cap_new *= 2;
    }
    if (cap_new > SIZE_MAX / elem)
        return -ENOMEM;
    char *grown = realloc(*buf, cap_new * elem);
    if (grown == NULL)
        return -ENOMEM;
    memset(grown + *cap * elem, 0, (cap_new - *cap) * elem);
    *buf = grown;
    *cap = cap_new;
    return 0;
}
