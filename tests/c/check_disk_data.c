/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for ext/engine/disk_data.c, through the disk's private header:
 * a write marks each sector it touches once, in the order first written;
 * growth over durable bytes marks them dirty (so a crash cannot bring them
 * back whole) and truncation forgets the marks past the end; a sync copies
 * the marked sectors and counts both copies against the capacity, which
 * refuses growth with ENOSPC; the errno of truncate and of a bad handle. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "disk_fixture.h"
#include "disk_impl.h"

enum { SECTOR = ASKEW_DISK_SECTOR };

/* A disk and one file on it, not linked anywhere: the content alone. */
static struct inode *t_file(void)
{
    d_open(1);
    struct inode *n;
    ck_assert_int_eq(askew__disk_inode_new(disk, 0, 0644, &n), 0);
    return n;
}

START_TEST(test_data_a_write_marks_each_sector_once_in_the_order_first_written)
{
    struct inode *n = t_file();
    struct handle h = {.used = 1, .flags = O_RDWR, .ino = n->ino};
    static char buf[3 * SECTOR];
    memset(buf, 'x', sizeof(buf));
    ck_assert_int_eq(askew__disk_write_at(disk, &h, buf, 10, 2 * SECTOR + 5), 10);
    ck_assert_int_eq(askew__disk_write_at(disk, &h, buf, 2 * SECTOR, 0), 2 * SECTOR);
    ck_assert_int_eq(askew__disk_write_at(disk, &h, buf, 1, SECTOR), 1);
    ck_assert_uint_eq(n->dirty_len, 3);
    ck_assert_uint_eq(n->dirty[0], 2);
    ck_assert_uint_eq(n->dirty[1], 0);
    ck_assert_uint_eq(n->dirty[2], 1);
    ck_assert_uint_eq(n->cur_size, 2 * SECTOR + 15);
    char got[16];
    ck_assert_int_eq(askew__disk_read_at(disk, &h, got, sizeof(got), 2 * SECTOR + 10),
                     5);
    ck_assert_int_eq(askew__disk_read_at(disk, &h, got, sizeof(got), 1 << 20), 0);
    d_close();
}
END_TEST

START_TEST(test_data_growth_over_durable_bytes_marks_them_and_a_cut_forgets_the_tail)
{
    struct inode *n = t_file();
    struct handle h = {.used = 1, .flags = O_RDWR, .ino = n->ino};
    static char buf[2 * SECTOR];
    memset(buf, 'd', sizeof(buf));
    ck_assert_int_eq(askew__disk_write_at(disk, &h, buf, sizeof(buf), 0),
                     (int64_t)sizeof(buf));
    ck_assert_int_eq(askew__disk_file_sync(disk, n), 0);
    ck_assert_uint_eq(n->dirty_len, 0);
    ck_assert_int_eq(askew__disk_resize(disk, n, 0), 0);
    ck_assert_uint_eq(n->dirty_len, 0); /* nothing left to mark */
    ck_assert_int_eq(askew__disk_resize(disk, n, 2 * SECTOR), 0);
    /* zeros over durable bytes: both sectors differ from the durable copy */
    ck_assert_uint_eq(n->dirty_len, 2);
    ck_assert_int_eq(n->cur[0], 0);
    ck_assert_int_eq(n->dur[0], 'd');
    ck_assert_int_eq(askew__disk_resize(disk, n, SECTOR / 2), 0);
    ck_assert_uint_eq(n->dirty_len, 1); /* a sector cut in two keeps its head */
    ck_assert_uint_eq(n->dirty[0], 0);
    ck_assert_int_eq(n->mark[1], 0);
    d_close();
}
END_TEST

START_TEST(test_data_a_sync_copies_the_marked_sectors_and_both_copies_count)
{
    struct inode *n = t_file();
    struct handle h = {.used = 1, .flags = O_RDWR, .ino = n->ino};
    ck_assert_int_eq(askew__disk_write_at(disk, &h, "hello", 5, 0), 5);
    ck_assert_uint_eq(disk->bytes, 5);
    ck_assert_uint_eq(n->dur_size, 0);
    ck_assert_int_eq(askew__disk_file_sync(disk, n), 0);
    ck_assert_uint_eq(n->dur_size, 5);
    ck_assert_int_eq(memcmp(n->dur, "hello", 5), 0);
    ck_assert_uint_eq(disk->bytes, 10);
    ck_assert_uint_eq(n->dirty_len, 0);
    ck_assert_int_eq(n->mark[0], 0);
    /* the capacity counts both copies */
    struct askew_disk_faults f = {.capacity_bytes = 12};
    ck_assert_int_eq(askew_disk_set_faults(disk, &f), 0);
    ck_assert_int_eq(askew__disk_resize(disk, n, 8), -ENOSPC);
    ck_assert_uint_eq(n->cur_size, 5);
    ck_assert_int_eq(askew__disk_resize(disk, n, 7), 0);
    ck_assert_int_eq(askew__disk_write_at(disk, &h, "!", 1, 7), -ENOSPC);
    d_close();
}
END_TEST

START_TEST(test_data_truncate_and_a_bad_handle_give_the_linux_errno)
{
    struct inode *n = t_file();
    struct inode *dir;
    ck_assert_int_eq(askew__disk_inode_new(disk, 1, 0755, &dir), 0);
    ck_assert_int_eq(askew__disk_truncate_inode(disk, dir, 0), -EISDIR);
    ck_assert_int_eq(askew__disk_truncate_inode(disk, n, -1), -EINVAL);
    ck_assert_int_eq(askew__disk_truncate_inode(disk, n, (int64_t)1 << 41), -EFBIG);
    ck_assert_int_eq(askew__disk_truncate_inode(disk, n, 3), 0);
    ck_assert_uint_eq(n->cur_size, 3);
    struct handle ro = {.used = 1, .flags = O_RDONLY, .ino = n->ino};
    struct handle wo = {.used = 1, .flags = O_WRONLY, .ino = n->ino};
    char c;
    ck_assert_int_eq(askew__disk_write_at(disk, &ro, "x", 1, 0), -EBADF);
    ck_assert_int_eq(askew__disk_read_at(disk, &wo, &c, 1, 0), -EBADF);
    ck_assert_int_eq(askew__disk_read_at(disk, NULL, &c, 1, 0), -EBADF);
    ck_assert_int_eq(askew__disk_read_at(disk, &ro, &c, 1, -1), -EINVAL);
    d_close();
}
END_TEST

Suite *disk_data_suite(void)
{
    Suite *s = suite_create("disk_data");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc,
                   test_data_a_write_marks_each_sector_once_in_the_order_first_written);
    tcase_add_test(
        tc, test_data_growth_over_durable_bytes_marks_them_and_a_cut_forgets_the_tail);
    tcase_add_test(tc,
                   test_data_a_sync_copies_the_marked_sectors_and_both_copies_count);
    tcase_add_test(tc, test_data_truncate_and_a_bad_handle_give_the_linux_errno);
    suite_add_tcase(s, tc);
    return s;
}
