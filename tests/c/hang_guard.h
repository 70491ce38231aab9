/* SPDX-License-Identifier: Apache-2.0 */
/* The hang guard every Check runner of the suite sets before it makes its
 * test cases (check_main.c, and the preload's suites through
 * preload_fixture.h): a timeout is a guard against a hang, never a speed
 * check, so each case gets a generous one (Check's own default is 4 s,
 * which a busy machine overruns), scaled by HANG_GUARD_SCALE as the Python
 * suite's are. Test code only. */
#ifndef ASKEW_TEST_HANG_GUARD_H
#define ASKEW_TEST_HANG_GUARD_H

#include <stdlib.h>

#define HANG_GUARD_S "60"

/* Check reads CK_DEFAULT_TIMEOUT when a test case is made, and
 * CK_TIMEOUT_MULTIPLIER when it runs; what the caller set stays. Call it
 * before the first tcase_create. */
static inline void set_hang_guards(void)
{
    setenv("CK_DEFAULT_TIMEOUT", HANG_GUARD_S, /* overwrite */ 0);
    const char *scale = getenv("HANG_GUARD_SCALE");
    if (scale != NULL && *scale != '\0')
        setenv("CK_TIMEOUT_MULTIPLIER", scale, /* overwrite */ 0);
}

#endif
