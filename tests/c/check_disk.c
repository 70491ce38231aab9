/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for ext/engine/disk.c, the disk's system calls: the errno of
 * each call as Linux gives it, reads, writes and offsets, listings, the
 * capacity bound and the faults, and that one seed gives one outcome and
 * one trace hash. The crash's outcomes are check_disk_crash.c's. */
#include "disk.h"
#include "disk_fixture.h"
#include "engine.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(test_disk_calls_return_the_linux_errno)
{
    d_open(1);
    char buf[64];
    ck_assert_int_eq(askew_disk_open(disk, "missing", O_RDONLY, 0), -ENOENT);
    ck_assert_int_eq(askew_disk_open(disk, "a/b", O_WRONLY | O_CREAT, 0644), -ENOENT);
    ck_assert_int_eq(put("f", "hello", 0), 0);
    ck_assert_int_eq(askew_disk_open(disk, "f", O_WRONLY | O_CREAT | O_EXCL, 0644),
                     -EEXIST);
    ck_assert_int_eq(askew_disk_open(disk, "f", O_RDONLY | O_DIRECTORY, 0), -ENOTDIR);
    ck_assert_int_eq(askew_disk_open(disk, "f/x", O_RDONLY, 0), -ENOTDIR);
    ck_assert_int_eq(askew_disk_mkdir(disk, "d", 0755), 0);
    ck_assert_int_eq(askew_disk_mkdir(disk, "d", 0755), -EEXIST);
    ck_assert_int_eq(askew_disk_open(disk, "d", O_WRONLY, 0), -EISDIR);
    ck_assert_int_eq(askew_disk_open(disk, "d", O_RDWR | O_CREAT, 0644), -EISDIR);
    ck_assert_int_eq(askew_disk_unlink(disk, "d"), -EISDIR);
    ck_assert_int_eq(askew_disk_rmdir(disk, "f"), -ENOTDIR);
    ck_assert_int_eq(put("d/g", "x", 0), 0);
    ck_assert_int_eq(askew_disk_rmdir(disk, "d"), -ENOTEMPTY);
    ck_assert_int_eq(askew_disk_rename(disk, "d", "d/sub"), -EINVAL);
    ck_assert_int_eq(askew_disk_rename(disk, "f", "d"), -EISDIR);
    ck_assert_int_eq(askew_disk_rmdir(disk, "/"), -EBUSY);
    char longname[300];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    ck_assert_int_eq(askew_disk_open(disk, longname, O_RDONLY, 0), -ENAMETOOLONG);
    const int ro = askew_disk_open(disk, "f", O_RDONLY, 0);
    ck_assert_int_ge(ro, 0);
    ck_assert_int_eq(askew_disk_write(disk, ro, "x", 1), -EBADF);
    ck_assert_int_eq(askew_disk_ftruncate(disk, ro, 0), -EINVAL);
    ck_assert_int_eq(askew_disk_fsync(disk, ro), 0); /* Linux allows it */
    ck_assert_int_eq(askew_disk_pread(disk, ro, buf, 5, -1), -EINVAL);
    ck_assert_int_eq(askew_disk_lseek(disk, ro, -1, SEEK_SET), -EINVAL);
    ck_assert_int_eq(askew_disk_close(disk, ro), 0);
    ck_assert_int_eq(askew_disk_close(disk, ro), -EBADF);
    ck_assert_int_eq(askew_disk_read(disk, ro, buf, 1), -EBADF);
    const int dh = askew_disk_open(disk, "d", O_RDONLY, 0);
    ck_assert_int_eq(askew_disk_read(disk, dh, buf, 1), -EISDIR);
    ck_assert_int_eq(askew_disk_close(disk, dh), 0);
    /* ".." never climbs above the mount */
    ck_assert_int_eq(get("../../f", buf, sizeof(buf)), 5);
    d_close();
}
END_TEST

START_TEST(test_disk_reads_see_writes_and_offsets_move_as_on_linux)
{
    d_open(2);
    char buf[64];
    const int fh = askew_disk_open(disk, "/f", O_RDWR | O_CREAT, 0600);
    ck_assert_int_eq(fh, 0); /* the lowest free handle */
    ck_assert_int_eq(askew_disk_write(disk, fh, "abcdef", 6), 6);
    ck_assert_int_eq(askew_disk_lseek(disk, fh, 0, SEEK_CUR), 6);
    ck_assert_int_eq(askew_disk_pwrite(disk, fh, "XY", 2, 10), 2);
    ck_assert_int_eq(askew_disk_lseek(disk, fh, 0, SEEK_END), 12);
    ck_assert_int_eq(askew_disk_pread(disk, fh, buf, sizeof(buf), 0), 12);
    ck_assert_int_eq(memcmp(buf, "abcdef\0\0\0\0XY", 12), 0);
    ck_assert_int_eq(askew_disk_lseek(disk, fh, 2, SEEK_SET), 2);
    ck_assert_int_eq(askew_disk_read(disk, fh, buf, 3), 3);
    ck_assert_int_eq(memcmp(buf, "cde", 3), 0);
    ck_assert_int_eq(askew_disk_ftruncate(disk, fh, 4), 0);
    struct askew_disk_stat st;
    ck_assert_int_eq(askew_disk_fstat(disk, fh, &st), 0);
    ck_assert_uint_eq(st.size, 4);
    ck_assert_uint_eq(st.mode, S_IFREG | 0600);
    ck_assert_uint_eq(st.nlink, 1);
    ck_assert_int_eq(st.is_dir, 0);
    const uint64_t ino = st.ino;
    ck_assert_int_eq(askew_disk_rename(disk, "f", "g"), 0);
    ck_assert_int_eq(askew_disk_stat(disk, "g", &st), 0);
    ck_assert_uint_eq(st.ino, ino); /* stable across rename */
    ck_assert_int_eq(askew_disk_stat(disk, "f", &st), -ENOENT);
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    const int ap = askew_disk_open(disk, "g", O_WRONLY | O_APPEND, 0);
    ck_assert_int_eq(askew_disk_pwrite(disk, ap, "!", 1, 0), 1); /* appends */
    ck_assert_int_eq(askew_disk_close(disk, ap), 0);
    ck_assert_int_eq(get("g", buf, sizeof(buf)), 5);
    ck_assert_str_eq(buf, "abcd!");
    ck_assert_int_eq(askew_disk_stat(disk, "/", &st), 0);
    ck_assert_int_eq(st.is_dir, 1);
    ck_assert_uint_eq(st.ino, ASKEW_DISK_ROOT_INO);
    d_close();
}
END_TEST

static int collect(void *ctx, const char *name, uint64_t ino, int is_dir)
{
    (void)ino;
    strcat(ctx, name);
    strcat(ctx, is_dir ? "/," : ",");
    return 0;
}

START_TEST(test_disk_lists_entries_sorted_by_name)
{
    d_open(3);
    char out[256] = "";
    ck_assert_int_eq(put("c", "", 0), 0);
    ck_assert_int_eq(askew_disk_mkdir(disk, "b", 0755), 0);
    ck_assert_int_eq(put("a", "", 0), 0);
    ck_assert_int_eq(askew_disk_list(disk, "/", collect, out), 0);
    ck_assert_str_eq(out, "a,b/,c,");
    ck_assert_int_eq(askew_disk_list(disk, "a", collect, out), -ENOTDIR);
    ck_assert_int_eq(askew_disk_list(disk, "zz", collect, out), -ENOENT);
    d_close();
}
END_TEST

START_TEST(test_disk_capacity_bounds_memory_with_enospc)
{
    d_open(4);
    struct askew_disk_faults f = {0};
    f.capacity_bytes = 1 << 20;
    ck_assert_int_eq(askew_disk_set_faults(disk, &f), 0);
    const int fh = askew_disk_open(disk, "big", O_RDWR | O_CREAT, 0644);
    ck_assert_int_eq(askew_disk_pwrite(disk, fh, "x", 1, (int64_t)1 << 30), -ENOSPC);
    ck_assert_int_eq(askew_disk_ftruncate(disk, fh, (int64_t)1 << 40), -ENOSPC);
    ck_assert_int_eq(askew_disk_ftruncate(disk, fh, (int64_t)1 << 50), -EFBIG);
    ck_assert_int_eq(askew_disk_ftruncate(disk, fh, 1 << 19), 0);
    ck_assert_int_eq(askew_disk_fsync(disk, fh), 0); /* durable copy: 1 MiB held */
    ck_assert_int_eq(askew_disk_pwrite(disk, fh, "x", 1, 1 << 19), -ENOSPC);
    ck_assert_int_eq(askew_disk_ftruncate(disk, fh, 0), 0);
    struct askew_disk_usage u;
    askew_disk_usage(disk, &u);
    ck_assert_uint_eq(u.bytes, 1 << 19);
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    ck_assert_int_eq(askew_disk_unlink(disk, "big"), 0);
    sync_dir("/");
    askew_disk_usage(disk, &u);
    ck_assert_uint_eq(u.bytes, 0);
    ck_assert_uint_eq(u.files, 1); /* the root alone */
    f.eio_read_ppm = 1000001;
    ck_assert_int_eq(askew_disk_set_faults(disk, &f), -EINVAL);
    d_close();
}
END_TEST

START_TEST(test_disk_faults_fail_calls_and_latency_is_handed_back)
{
    d_open(5);
    struct askew_disk_faults f = {0};
    f.eio_write_ppm = 1000000;
    f.latency_ns_min = f.latency_ns_max = 7;
    ck_assert_int_eq(askew_disk_set_faults(disk, &f), 0);
    const int fh = askew_disk_open(disk, "f", O_RDWR | O_CREAT, 0644);
    ck_assert_int_eq(askew_disk_latency_ns(disk), 7);
    ck_assert_int_eq(askew_disk_latency_ns(disk), 0);
    ck_assert_int_eq(askew_disk_write(disk, fh, "x", 1), -EIO);
    f.eio_write_ppm = 0;
    f.eio_fsync_ppm = 1000000;
    f.bitrot_ppm = 1000000;
    ck_assert_int_eq(askew_disk_set_faults(disk, &f), 0);
    ck_assert_int_eq(askew_disk_write(disk, fh, "\0\0\0\0", 4), 4);
    ck_assert_int_eq(askew_disk_fsync(disk, fh), -EIO);
    char buf[4];
    ck_assert_int_eq(askew_disk_pread(disk, fh, buf, 4, 0), 4);
    int bits = 0;
    for (int i = 0; i < 4; i++)
        bits += __builtin_popcount((unsigned char)buf[i]);
    ck_assert_int_eq(bits, 1); /* one bit flipped in what was returned */
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    d_close();
}
END_TEST

static uint64_t scripted_run(uint64_t seed, char *out, size_t cap)
{
    d_open(seed);
    for (int i = 0; i < 5; i++) {
        char name[8] = {'f', (char)('0' + i), 0};
        ck_assert_int_eq(put(name, "0123456789abcdef0123456789abcdef", i % 2), 0);
    }
    ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
    out[0] = '\0';
    ck_assert_int_eq(askew_disk_list(disk, "/", collect, out), 0);
    (void)cap;
    const uint64_t hash = sched.trace.hash;
    d_close();
    return hash;
}

START_TEST(test_disk_same_seed_gives_the_same_outcome_and_trace_hash)
{
    char a[128], b[128];
    const uint64_t ha = scripted_run(77, a, sizeof(a));
    const uint64_t hb = scripted_run(77, b, sizeof(b));
    ck_assert_uint_eq(ha, hb);
    ck_assert_str_eq(a, b);
    int differs = 0;
    for (uint64_t seed = 1; seed < 20; seed++)
        differs += scripted_run(seed, b, sizeof(b)) != ha;
    ck_assert_int_gt(differs, 0);
}
END_TEST

START_TEST(test_disk_unlinked_open_file_stays_readable_until_closed)
{
    d_open(6);
    char buf[8];
    ck_assert_int_eq(put("f", "abc", 1), 0);
    sync_dir("/");
    const int fh = askew_disk_open(disk, "f", O_RDONLY, 0);
    ck_assert_int_eq(askew_disk_unlink(disk, "f"), 0);
    ck_assert_int_eq(askew_disk_pread(disk, fh, buf, 3, 0), 3);
    struct askew_disk_stat st;
    ck_assert_int_eq(askew_disk_fstat(disk, fh, &st), 0);
    ck_assert_uint_eq(st.nlink, 0);
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    /* the unlink is not durable yet: a crash may bring the name back */
    ck_assert_int_eq(askew_disk_crash(disk, NULL), 0);
    d_close();
}
END_TEST

Suite *disk_suite(void)
{
    Suite *s = suite_create("disk");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_disk_calls_return_the_linux_errno);
    tcase_add_test(tc, test_disk_reads_see_writes_and_offsets_move_as_on_linux);
    tcase_add_test(tc, test_disk_lists_entries_sorted_by_name);
    tcase_add_test(tc, test_disk_capacity_bounds_memory_with_enospc);
    tcase_add_test(tc, test_disk_faults_fail_calls_and_latency_is_handed_back);
    tcase_add_test(tc, test_disk_same_seed_gives_the_same_outcome_and_trace_hash);
    tcase_add_test(tc, test_disk_unlinked_open_file_stays_readable_until_closed);
    suite_add_tcase(s, tc);
    return s;
}
