/* SPDX-License-Identifier: Apache-2.0 */
/* A preload that interposes nothing of askew's (as a memory allocator's
 * might not): loaded first, it must leave askew's self_test passing. */
int probe_inert_marker(void);

int probe_inert_marker(void)
{
    return 42;
}
