/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for ext/engine/disk_crash.c, the crash: over many seeds, what
 * fsync made durable (a file, a directory's entries) always survives, a
 * torn write keeps each sector old or new (after a truncate too), the
 * directory log survives as a
 * prefix (a rename without its directory's fsync may keep the old file),
 * and a file named only by unsynced renames survives as far as the kept
 * prefix reaches. */
#include "disk.h"
#include "disk_fixture.h"
#include "engine.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

START_TEST(test_disk_synced_file_and_directory_survive_every_crash)
{
    for (uint64_t seed = 1; seed <= 50; seed++) {
        d_open(seed);
        char buf[64];
        ck_assert_int_eq(askew_disk_mkdir(disk, "d", 0755), 0);
        ck_assert_int_eq(put("d/f", "durable", 1), 0);
        sync_dir("d");
        sync_dir("/");
        ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
        ck_assert_int_eq(get("d/f", buf, sizeof(buf)), 7);
        ck_assert_str_eq(buf, "durable");
        d_close();
    }
}
END_TEST

START_TEST(test_disk_a_new_name_needs_its_directory_fsynced)
{
    int kept = 0, lost = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        d_open(seed);
        char buf[64];
        ck_assert_int_eq(put("f", "data", 1), 0); /* file synced, directory not */
        ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
        const int64_t n = get("f", buf, sizeof(buf));
        if (n == -ENOENT) {
            lost++;
        } else {
            ck_assert_str_eq(buf, "data");
            kept++;
        }
        d_close();
    }
    ck_assert_int_gt(kept, 0);
    ck_assert_int_gt(lost, 0);
}
END_TEST

START_TEST(test_disk_the_unsynced_directory_operations_are_listed_by_path)
{
    d_open(1);
    char path[ASKEW_DISK_PATH_MAX], path2[ASKEW_DISK_PATH_MAX];
    struct askew_disk_dirop op;
    ck_assert_int_eq(askew_disk_mkdir(disk, "d", 0755), 0);
    sync_dir("/");
    ck_assert_uint_eq(askew_disk_dirops(disk), 0);
    ck_assert_int_eq(put("d/tmp", "x", 0), 0);
    ck_assert_int_eq(askew_disk_rename(disk, "d/tmp", "f"), 0);
    ck_assert_uint_eq(askew_disk_dirops(disk), 2);
    ck_assert_int_eq(askew_disk_dirop_get(disk, 0, &op, path, path2, sizeof(path)), 0);
    ck_assert_int_eq(op.kind, ASKEW_DISK_DIROP_LINK);
    ck_assert(!op.is_dir && !op.dir_synced); /* d was never fsynced */
    ck_assert_str_eq(path, "/d/tmp");
    ck_assert_int_eq(askew_disk_dirop_get(disk, 1, &op, path, path2, sizeof(path)), 0);
    ck_assert_int_eq(op.kind, ASKEW_DISK_DIROP_RENAME);
    ck_assert(op.dir_synced); /* the target's directory, the root, was */
    ck_assert_str_eq(path, "/d/tmp");
    ck_assert_str_eq(path2, "/f");
    ck_assert_int_eq(askew_disk_dirop_get(disk, 2, &op, path, path2, sizeof(path)),
                     -ERANGE);
    ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
    ck_assert_uint_eq(askew_disk_dirops(disk), 0);
    d_close();
}
END_TEST

START_TEST(test_disk_an_unsynced_write_is_torn_per_sector)
{
    enum { len = 8 * ASKEW_DISK_SECTOR };
    static char old[len], new[len], got[len + 1];
    memset(old, 'o', len);
    memset(new, 'n', len);
    int torn = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        d_open(seed);
        int fh = askew_disk_open(disk, "f", O_RDWR | O_CREAT, 0644);
        ck_assert_int_eq(askew_disk_pwrite(disk, fh, old, len, 0), (int64_t)len);
        ck_assert_int_eq(askew_disk_fsync(disk, fh), 0);
        sync_dir("/");
        ck_assert_int_eq(askew_disk_pwrite(disk, fh, new, len, 0), (int64_t)len);
        struct askew_disk_crash_result res;
        ck_assert_int_eq(askew_disk_crash(disk, &res), 0);
        ck_assert_uint_eq(res.handles_closed, 1);
        ck_assert_uint_eq(res.sectors_kept + res.sectors_lost, 8);
        fh = askew_disk_open(disk, "f", O_RDONLY, 0);
        ck_assert_int_eq(askew_disk_pread(disk, fh, got, len + 1, 0), (int64_t)len);
        int news = 0;
        for (size_t s = 0; s < 8; s++) {
            const char c = got[s * ASKEW_DISK_SECTOR];
            for (size_t i = 0; i < ASKEW_DISK_SECTOR; i++)
                ck_assert_int_eq(got[s * ASKEW_DISK_SECTOR + i], c);
            news += c == 'n';
        }
        ck_assert_uint_eq((uint64_t)news, res.sectors_kept);
        torn += news > 0 && news < 8;
        d_close();
    }
    ck_assert_int_gt(torn, 0);
}
END_TEST

START_TEST(test_disk_a_crash_after_a_truncate_keeps_each_sector_as_it_once_was)
{
    /* 1024 durable bytes, cut to 300, then 100 new bytes at the start: a
     * sector kept is the sector as it is now (new head, old middle, zeros
     * past the cut), one lost the durable one; never the new head with the
     * bytes the truncate took, whichever size survives. */
    enum { old_len = 2 * ASKEW_DISK_SECTOR, cut = 300, head = 100 };
    static char old[old_len], got[old_len + 1];
    memset(old, 'o', sizeof(old));
    int kept_sector_old_size = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        d_open(seed);
        int fh = askew_disk_open(disk, "f", O_RDWR | O_CREAT, 0644);
        ck_assert_int_eq(askew_disk_pwrite(disk, fh, old, old_len, 0),
                         (int64_t)old_len);
        ck_assert_int_eq(askew_disk_fsync(disk, fh), 0);
        sync_dir("/");
        ck_assert_int_eq(askew_disk_ftruncate(disk, fh, cut), 0);
        ck_assert_int_eq(askew_disk_pwrite(disk, fh, "nnnnnnnnnn", 10, 0), 10);
        for (int i = 1; i < head / 10; i++)
            ck_assert_int_eq(askew_disk_pwrite(disk, fh, "nnnnnnnnnn", 10, i * 10), 10);
        ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
        fh = askew_disk_open(disk, "f", O_RDONLY, 0);
        const int64_t n = askew_disk_pread(disk, fh, got, sizeof(got), 0);
        ck_assert(n == cut || n == old_len);
        const int new_head = got[0] == 'n';
        for (int i = 0; i < head; i++)
            ck_assert_int_eq(got[i], new_head ? 'n' : 'o');
        for (int i = head; i < cut; i++)
            ck_assert_int_eq(got[i], 'o');
        for (int64_t i = cut; i < n; i++) {
            /* past the cut in sector 0: zeros if the sector is the new one */
            const char want = i < ASKEW_DISK_SECTOR && new_head ? '\0' : 'o';
            ck_assert_int_eq(got[i], want);
        }
        kept_sector_old_size += new_head && n == old_len;
        d_close();
    }
    ck_assert_int_gt(kept_sector_old_size, 0); /* the case that used to mix */
}
END_TEST

START_TEST(test_disk_unsynced_directory_operations_survive_as_a_prefix)
{
    int seen[4] = {0};
    for (uint64_t seed = 1; seed <= 80; seed++) {
        d_open(seed);
        ck_assert_int_eq(put("a", "", 0), 0);
        ck_assert_int_eq(put("b", "", 0), 0);
        ck_assert_int_eq(put("c", "", 0), 0);
        struct askew_disk_crash_result res;
        ck_assert_int_eq(askew_disk_crash(disk, &res), 0);
        ck_assert_uint_eq(res.dirops_kept + res.dirops_lost, 3);
        struct askew_disk_stat st;
        const int a = askew_disk_stat(disk, "a", &st) == 0;
        const int b = askew_disk_stat(disk, "b", &st) == 0;
        const int c = askew_disk_stat(disk, "c", &st) == 0;
        ck_assert(a >= b && b >= c);
        ck_assert_int_eq(a + b + c, (int)res.dirops_kept);
        seen[a + b + c]++;
        d_close();
    }
    for (int i = 0; i < 4; i++)
        ck_assert_int_gt(seen[i], 0);
}
END_TEST

START_TEST(test_disk_rename_without_directory_fsync_may_keep_the_old_file)
{
    int old = 0, new = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        d_open(seed);
        char buf[64];
        ck_assert_int_eq(put("db", "v1", 1), 0);
        sync_dir("/");
        ck_assert_int_eq(put("db.tmp", "v2", 1), 0);
        ck_assert_int_eq(askew_disk_rename(disk, "db.tmp", "db"), 0);
        ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
        ck_assert_int_eq(get("db", buf, sizeof(buf)), 2);
        old += strcmp(buf, "v1") == 0;
        new += strcmp(buf, "v2") == 0;
        d_close();
        /* and with the directory fsynced, always the new one */
        d_open(seed);
        ck_assert_int_eq(put("db", "v1", 1), 0);
        sync_dir("/");
        ck_assert_int_eq(put("db.tmp", "v2", 1), 0);
        ck_assert_int_eq(askew_disk_rename(disk, "db.tmp", "db"), 0);
        sync_dir("/");
        ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
        ck_assert_int_eq(get("db", buf, sizeof(buf)), 2);
        ck_assert_str_eq(buf, "v2");
        ck_assert_int_eq(get("db.tmp", buf, sizeof(buf)), -ENOENT);
        d_close();
    }
    ck_assert_int_gt(old, 0);
    ck_assert_int_gt(new, 0);
}
END_TEST

START_TEST(test_disk_files_named_only_by_unsynced_renames_survive_to_the_crash)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        d_open(seed);
        char buf[16], want[16];
        for (int v = 1; v <= 9; v++) {
            snprintf(want, sizeof(want), "%d", v);
            ck_assert_int_eq(put("s.tmp", want, 1), 0);
            ck_assert_int_eq(askew_disk_rename(disk, "s.tmp", "s"), 0);
        }
        struct askew_disk_crash_result res;
        ck_assert_int_eq(askew_disk_crash(disk, &res), 0);
        /* k operations kept: each save is a create and a rename */
        const int64_t n = get("s", buf, sizeof(buf));
        if (res.dirops_kept < 2) {
            ck_assert_int_eq(n, -ENOENT);
        } else {
            ck_assert_int_eq(n, 1);
            ck_assert_int_eq(buf[0] - '0', (int)res.dirops_kept / 2);
        }
        d_close();
    }
}
END_TEST

START_TEST(test_disk_a_crash_makes_the_disk_a_new_device_with_the_same_inodes)
{
    d_open(1);
    struct askew_disk_stat before, after;
    ck_assert_int_eq(put("f", "x", 1), 0);
    sync_dir("/");
    ck_assert_int_eq(askew_disk_stat(disk, "f", &before), 0);
    ck_assert_uint_eq(before.dev, ASKEW_DISK_DEV_BASE);
    ck_assert_uint_eq(askew_disk_crashes(disk), 0);
    ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
    ck_assert_uint_eq(askew_disk_crashes(disk), 1);
    ck_assert_int_eq(askew_disk_stat(disk, "f", &after), 0);
    ck_assert_uint_eq(after.ino, before.ino);
    ck_assert_uint_eq(after.dev, ASKEW_DISK_DEV_BASE + (1u << 20));
    d_close();
}
END_TEST

Suite *disk_crash_suite(void)
{
    Suite *s = suite_create("disk_crash");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_disk_synced_file_and_directory_survive_every_crash);
    tcase_add_test(tc, test_disk_a_new_name_needs_its_directory_fsynced);
    tcase_add_test(tc, test_disk_an_unsynced_write_is_torn_per_sector);
    tcase_add_test(tc,
                   test_disk_a_crash_after_a_truncate_keeps_each_sector_as_it_once_was);
    tcase_add_test(tc, test_disk_unsynced_directory_operations_survive_as_a_prefix);
    tcase_add_test(tc, test_disk_rename_without_directory_fsync_may_keep_the_old_file);
    tcase_add_test(tc, test_disk_the_unsynced_directory_operations_are_listed_by_path);
    tcase_add_test(tc,
                   test_disk_files_named_only_by_unsynced_renames_survive_to_the_crash);
    tcase_add_test(tc,
                   test_disk_a_crash_makes_the_disk_a_new_device_with_the_same_inodes);
    suite_add_tcase(s, tc);
    return s;
}
