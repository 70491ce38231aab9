/* SPDX-License-Identifier: Apache-2.0 */
/* Runs every engine Check suite in one runner (fork mode: each test in its
 * own child, so state never leaks and a hang is a timeout). Suites a build
 * does not link are skipped by their weak declaration. Every case has a
 * generous hang guard (hang_guard.h). */
#include <check.h>
#include <stdlib.h>

#include "hang_guard.h"

Suite *rng_suite(void);
Suite *clock_suite(void);
Suite *sched_suite(void);
Suite *trace_suite(void);
Suite *skew_suite(void);
Suite *grow_suite(void);
__attribute__((weak)) Suite *baton_suite(void);
__attribute__((weak)) Suite *net_suite(void);
__attribute__((weak)) Suite *net_topo_suite(void);
__attribute__((weak)) Suite *pctcp_suite(void);
__attribute__((weak)) Suite *disk_suite(void);
__attribute__((weak)) Suite *disk_locks_suite(void);
__attribute__((weak)) Suite *disk_tree_suite(void);
__attribute__((weak)) Suite *disk_data_suite(void);
__attribute__((weak)) Suite *disk_crash_suite(void);

int main(void)
{
    set_hang_guards();
    SRunner *sr = srunner_create(rng_suite());
    srunner_add_suite(sr, clock_suite());
    srunner_add_suite(sr, sched_suite());
    srunner_add_suite(sr, trace_suite());
    srunner_add_suite(sr, skew_suite());
    srunner_add_suite(sr, grow_suite());
    if (baton_suite)
        srunner_add_suite(sr, baton_suite());
    if (net_suite)
        srunner_add_suite(sr, net_suite());
    if (net_topo_suite)
        srunner_add_suite(sr, net_topo_suite());
    if (pctcp_suite)
        srunner_add_suite(sr, pctcp_suite());
    if (disk_suite)
        srunner_add_suite(sr, disk_suite());
    if (disk_locks_suite)
        srunner_add_suite(sr, disk_locks_suite());
    if (disk_tree_suite)
        srunner_add_suite(sr, disk_tree_suite());
    if (disk_data_suite)
        srunner_add_suite(sr, disk_data_suite());
    if (disk_crash_suite)
        srunner_add_suite(sr, disk_crash_suite());
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
