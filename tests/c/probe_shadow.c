/* SPDX-License-Identifier: Apache-2.0 */
/* Another clock interposer, loaded before askew's preload in a test: it
 * forwards clock_gettime to the next definition, as libfaketime-style
 * libraries do, so askew's self_test must notice it comes first. */
#include <dlfcn.h>
#include <time.h>

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int (*next)(clockid_t, struct timespec *) =
        (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    return next(id, ts);
}
