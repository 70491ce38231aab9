/* SPDX-License-Identifier: Apache-2.0 */
/* What the Check suites of the simulated disk share (check_disk*.c): one
 * scheduler and one disk per test, and the small steps they are driven by
 * (a file written and maybe synced, read back, a directory synced). Tests
 * only. */
#ifndef ASKEW_TEST_DISK_FIXTURE_H
#define ASKEW_TEST_DISK_FIXTURE_H

#include <check.h>
#include <fcntl.h>
#include <string.h>

#include "disk.h"
#include "engine.h"

static struct askew_sched sched;
static struct askew_disk *disk;

static inline void d_open(uint64_t seed)
{
    ck_assert_int_eq(askew_sched_init(&sched), 0);
    askew_sched_reset(&sched, seed);
    ck_assert_int_eq(askew_disk_new(&disk, &sched, 0, seed), 0);
}

static inline void d_close(void)
{
    askew_disk_free(disk);
    askew_sched_free(&sched);
    disk = NULL;
}

static inline int put(const char *path, const char *text, int sync)
{
    const int fh = askew_disk_open(disk, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fh, 0);
    ck_assert_int_eq(askew_disk_write(disk, fh, text, strlen(text)),
                     (int64_t)strlen(text));
    if (sync)
        ck_assert_int_eq(askew_disk_fsync(disk, fh), 0);
    return askew_disk_close(disk, fh);
}

/* The file's content into buf (NUL-terminated), or -errno of the open. */
static inline int64_t get(const char *path, char *buf, size_t cap)
{
    const int fh = askew_disk_open(disk, path, O_RDONLY, 0);
    if (fh < 0)
        return fh;
    const int64_t n = askew_disk_pread(disk, fh, buf, cap - 1, 0);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    return n;
}

static inline void sync_dir(const char *path)
{
    const int fh = askew_disk_open(disk, path, O_RDONLY | O_DIRECTORY, 0);
    ck_assert_int_ge(fh, 0);
    ck_assert_int_eq(askew_disk_fsync(disk, fh), 0);
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
}

#endif
