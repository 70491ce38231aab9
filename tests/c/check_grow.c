/* SPDX-License-Identifier: Apache-2.0 */
/* askew__grow, the one array growth of the engine and the binding: it
 * doubles, zeroes what it adds, keeps what was there, and fails without
 * touching the array. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine.h"

START_TEST(test_grow_an_empty_array_gets_room_and_zeroes)
{
    uint64_t *buf = NULL;
    size_t cap = 0;
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, 3, sizeof *buf), 0);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_ge(cap, 3);
    for (size_t i = 0; i < cap; i++)
        ck_assert_uint_eq(buf[i], 0);
    free(buf);
}
END_TEST

START_TEST(test_grow_keeps_contents_and_zeroes_only_the_new_part)
{
    uint64_t *buf = NULL;
    size_t cap = 0;
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, 1, sizeof *buf), 0);
    const size_t had = cap;
    for (size_t i = 0; i < had; i++)
        buf[i] = i + 1;
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, had * 5, sizeof *buf), 0);
    ck_assert_uint_ge(cap, had * 5);
    ck_assert_uint_eq(cap % had, 0); /* doubled, not sized to fit */
    for (size_t i = 0; i < had; i++)
        ck_assert_uint_eq(buf[i], i + 1);
    for (size_t i = had; i < cap; i++)
        ck_assert_uint_eq(buf[i], 0);
    free(buf);
}
END_TEST

START_TEST(test_grow_with_room_enough_changes_nothing)
{
    uint64_t *buf = NULL;
    size_t cap = 0;
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, 10, sizeof *buf), 0);
    uint64_t *const was = buf;
    const size_t cap_was = cap;
    buf[0] = 42;
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, cap, sizeof *buf), 0);
    ck_assert_ptr_eq(buf, was);
    ck_assert_uint_eq(cap, cap_was);
    ck_assert_uint_eq(buf[0], 42);
    free(buf);
}
END_TEST

START_TEST(test_grow_past_the_address_space_is_enomem_and_leaves_the_array)
{
    uint64_t *buf = NULL;
    size_t cap = 0;
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, 4, sizeof *buf), 0);
    uint64_t *const was = buf;
    const size_t cap_was = cap;
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, SIZE_MAX / 4, sizeof *buf),
                     -ENOMEM);
    ck_assert_int_eq(askew__grow((void **)&buf, &cap, SIZE_MAX, 1), -ENOMEM);
    ck_assert_ptr_eq(buf, was);
    ck_assert_uint_eq(cap, cap_was);
    free(buf);
}
END_TEST

Suite *grow_suite(void)
{
    Suite *s = suite_create("grow");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_grow_an_empty_array_gets_room_and_zeroes);
    tcase_add_test(tc, test_grow_keeps_contents_and_zeroes_only_the_new_part);
    tcase_add_test(tc, test_grow_with_room_enough_changes_nothing);
    tcase_add_test(tc, test_grow_past_the_address_space_is_enomem_and_leaves_the_array);
    suite_add_tcase(s, tc);
    return s;
}
