/* SPDX-License-Identifier: Apache-2.0 */
/* The program that links probe_ctor_lib.so: exits 0 when that library's
 * constructor found every interposed call working. */
#include <stdio.h>

extern int probe_ctor_ok;

int main(void)
{
    printf("probe_ctor_ok=%d\n", probe_ctor_ok);
    return probe_ctor_ok ? 0 : 1;
}
