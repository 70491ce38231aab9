/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for the simulated disk's byte-range locks (ext/engine/disk.h's
 * lock block): the POSIX record-lock rules sqlite relies on, on a table of
 * its own. The rest of the disk is tests/c/check_disk*.c's. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>

#include "disk.h"

#define INO  7
#define A    1 /* two owners */
#define B    2
#define EOF_ ASKEW_DISK_LOCK_EOF

START_TEST(test_locks_of_one_owner_never_conflict_and_read_locks_share)
{
    struct askew_disk_locks t = {0};
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_WRLCK, 0, 10), 0);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_RDLCK, 5, 20), 0);
    ck_assert_int_eq(askew_disk_lock_test(&t, INO, A, F_WRLCK, 0, EOF_, NULL), 0);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, B, F_RDLCK, 10, 20), 0);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, B, F_RDLCK, 3, 4), -EAGAIN);
    askew_disk_locks_free(&t);
}
END_TEST

START_TEST(
    test_a_write_lock_conflicts_with_any_lock_of_another_owner_and_getlk_names_it)
{
    struct askew_disk_locks t = {0};
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_RDLCK, 100, 101), 0);
    struct askew_disk_lock held;
    ck_assert_int_eq(askew_disk_lock_test(&t, INO, B, F_WRLCK, 0, EOF_, &held), 1);
    ck_assert_int_eq(held.owner, A);
    ck_assert_int_eq(held.start, 100);
    ck_assert_int_eq(held.type, F_RDLCK);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, B, F_WRLCK, 0, EOF_), -EAGAIN);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO + 1, B, F_WRLCK, 0, EOF_), 0);
    askew_disk_locks_free(&t);
}
END_TEST

START_TEST(test_unlocking_the_middle_of_a_range_splits_it)
{
    struct askew_disk_locks t = {0};
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_WRLCK, 0, 30), 0);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_UNLCK, 10, 20), 0);
    ck_assert_int_eq(t.len, 2);
    ck_assert_int_eq(askew_disk_lock_test(&t, INO, B, F_WRLCK, 10, 20, NULL), 0);
    ck_assert_int_eq(askew_disk_lock_test(&t, INO, B, F_RDLCK, 9, 10, NULL), 1);
    ck_assert_int_eq(askew_disk_lock_test(&t, INO, B, F_RDLCK, 20, 21, NULL), 1);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_UNLCK, 0, EOF_), 0);
    ck_assert_int_eq(t.len, 0);
    askew_disk_locks_free(&t);
}
END_TEST

START_TEST(test_dropping_an_owner_frees_its_ranges_for_others)
{
    struct askew_disk_locks t = {0};
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_WRLCK, 0, EOF_), 0);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO + 1, A, F_WRLCK, 0, EOF_), 0);
    askew_disk_locks_drop(&t, INO, A);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, B, F_WRLCK, 0, EOF_), 0);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO + 1, B, F_WRLCK, 0, 1), -EAGAIN);
    askew_disk_locks_drop(&t, 0, ASKEW_DISK_LOCK_ANY);
    ck_assert_int_eq(t.len, 0);
    askew_disk_locks_free(&t);
}
END_TEST

START_TEST(test_bad_lock_arguments_are_einval)
{
    struct askew_disk_locks t = {0};
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, 99, 0, 1), -EINVAL);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_RDLCK, -1, 1), -EINVAL);
    ck_assert_int_eq(askew_disk_lock_set(&t, INO, A, F_RDLCK, 5, 5), -EINVAL);
    ck_assert_int_eq(t.len, 0);
    askew_disk_locks_free(&t);
}
END_TEST

Suite *disk_locks_suite(void)
{
    Suite *s = suite_create("disk_locks");
    TCase *tc = tcase_create("locks");
    tcase_add_test(tc, test_locks_of_one_owner_never_conflict_and_read_locks_share);
    tcase_add_test(
        tc,
        test_a_write_lock_conflicts_with_any_lock_of_another_owner_and_getlk_names_it);
    tcase_add_test(tc, test_unlocking_the_middle_of_a_range_splits_it);
    tcase_add_test(tc, test_dropping_an_owner_frees_its_ranges_for_others);
    tcase_add_test(tc, test_bad_lock_arguments_are_einval);
    suite_add_tcase(s, tc);
    return s;
}
