/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for ext/engine/disk_tree.c, through the disk's private header:
 * a directory's entries stay sorted and replace in place, a path resolves
 * as the kernel resolves it below a mount ("." and ".." folded, never above
 * the mount, a file in the middle is ENOTDIR), every spelling of a mount
 * lands on it, an open directory knows where it is, a directory fsync prunes the
 * log only as far as every directory an operation touched is durable, and
 * an inode goes exactly when nothing names or holds it. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "disk_fixture.h"
#include "disk_impl.h"

/* The inode a path names in the current tree. */
static struct inode *at(const char *path)
{
    struct lookup lk;
    ck_assert_int_eq(askew__disk_walk(disk, path, &lk), 0);
    ck_assert_uint_ne(lk.ino, 0);
    return inode_get(disk, lk.ino);
}

START_TEST(test_tree_entries_stay_sorted_by_name_and_a_set_replaces_in_place)
{
    struct dmap m = {0}, copy = {0};
    uint64_t old;
    ck_assert_int_eq(askew__disk_dmap_set(&m, "b", 12, &old), 0);
    ck_assert_int_eq(askew__disk_dmap_set(&m, "a", 11, &old), 0);
    ck_assert_int_eq(askew__disk_dmap_set(&m, "c", 13, &old), 0);
    ck_assert_uint_eq(old, 0);
    ck_assert_int_eq(askew__disk_dmap_set(&m, "b", 22, &old), 0);
    ck_assert_uint_eq(old, 12);
    ck_assert_uint_eq(m.len, 3);
    ck_assert_str_eq(m.v[0].name, "a");
    ck_assert_str_eq(m.v[1].name, "b");
    ck_assert_str_eq(m.v[2].name, "c");
    ck_assert_uint_eq(askew__disk_dmap_get(&m, "b"), 22);
    ck_assert_uint_eq(askew__disk_dmap_get(&m, "bb"), 0);
    ck_assert_int_eq(askew__disk_dmap_copy(&copy, &m), 0);
    ck_assert_uint_eq(askew__disk_dmap_del(&m, "a"), 11);
    ck_assert_uint_eq(askew__disk_dmap_del(&m, "a"), 0);
    ck_assert_uint_eq(m.len, 2);
    ck_assert_str_eq(m.v[0].name, "b");
    ck_assert_uint_eq(copy.len, 3); /* a copy, not a view */
    ck_assert_uint_eq(askew__disk_dmap_get(&copy, "a"), 11);
    askew__disk_dmap_free(&m);
    askew__disk_dmap_free(&copy);
}
END_TEST

START_TEST(test_tree_a_path_resolves_below_the_mount_as_the_kernel_resolves_it)
{
    d_open(1);
    struct lookup lk;
    ck_assert_int_eq(askew_disk_mkdir(disk, "a", 0755), 0);
    ck_assert_int_eq(askew_disk_mkdir(disk, "a/b", 0755), 0);
    const int fh = askew_disk_open(disk, "a/f", O_WRONLY | O_CREAT, 0644);
    ck_assert_int_ge(fh, 0);
    const uint64_t a = at("a")->ino, b = at("a/b")->ino, f = at("a/f")->ino;
    /* the last component named in its directory */
    ck_assert_int_eq(askew__disk_walk(disk, "a/../a//b", &lk), 0);
    ck_assert_uint_eq(lk.dir, a);
    ck_assert_str_eq(lk.name, "b");
    ck_assert_uint_eq(lk.ino, b);
    ck_assert_int_eq(askew__disk_walk(disk, "a/new", &lk), 0);
    ck_assert_uint_eq(lk.dir, a);
    ck_assert_uint_eq(lk.ino, 0); /* absent: a create's place */
    /* the mount itself, and ".." never above it: a directory alone */
    ck_assert_int_eq(askew__disk_walk(disk, "/", &lk), 0);
    ck_assert_uint_eq(lk.dir, 0);
    ck_assert_uint_eq(lk.ino, ASKEW_DISK_ROOT_INO);
    ck_assert_int_eq(askew__disk_walk(disk, "../..", &lk), 0);
    ck_assert_uint_eq(lk.ino, ASKEW_DISK_ROOT_INO);
    ck_assert_int_eq(askew__disk_walk(disk, "a/b/.", &lk), 0);
    ck_assert_uint_eq(lk.dir, 0);
    ck_assert_uint_eq(lk.ino, b);
    /* what goes wrong on the way */
    ck_assert_int_eq(askew__disk_walk(disk, "", &lk), -ENOENT);
    ck_assert_int_eq(askew__disk_walk(disk, "x/y", &lk), -ENOENT);
    ck_assert_int_eq(askew__disk_walk(disk, "a/f/y", &lk), -ENOTDIR);
    ck_assert_int_eq(askew__disk_walk(disk, "a/f/..", &lk), -ENOTDIR);
    ck_assert_int_eq(askew__disk_walk(disk, "a/no/..", &lk), -ENOENT);
    ck_assert_int_eq(askew__disk_walk(disk, "a/f", &lk), 0);
    ck_assert_uint_eq(lk.ino, f);
    ck_assert_int_eq(lk.slash, 0);
    /* the last component's kind and a trailing '/', for each call to judge */
    ck_assert_int_eq(askew__disk_walk(disk, "a/f//", &lk), 0);
    ck_assert_uint_eq(lk.ino, f);
    ck_assert_int_eq(lk.slash, 1);
    ck_assert_int_eq(askew__disk_walk(disk, "a/b/.", &lk), 0);
    ck_assert_int_eq(lk.last, LAST_DOT);
    ck_assert_int_eq(askew__disk_walk(disk, "a/b/..", &lk), 0);
    ck_assert_int_eq(lk.last, LAST_DOTDOT);
    ck_assert_uint_eq(lk.ino, a);
    ck_assert_int_eq(askew__disk_walk(disk, "//", &lk), 0);
    ck_assert_int_eq(lk.last, LAST_ROOT);
    char name[ASKEW_DISK_NAME_MAX + 2];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    ck_assert_int_eq(askew__disk_walk(disk, name, &lk), -ENAMETOOLONG);
    name[ASKEW_DISK_NAME_MAX] = '\0';
    ck_assert_int_eq(askew__disk_walk(disk, name, &lk), 0);
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    d_close();
}
END_TEST

/* Where path lands for a disk at /data: 1 and its part on the disk, 0, 2 and
 * the real path, or -errno, as one string. */
static const char *locate(const char *path)
{
    static char out[ASKEW_DISK_PATH_MAX + 8];
    const char *rel = NULL;
    char real[ASKEW_DISK_PATH_MAX];
    const int rc = askew_disk_locate(disk, "/data", path, &rel, real, sizeof(real));
    if (rc == 1)
        snprintf(out, sizeof(out), "disk %s", rel);
    else if (rc == 2)
        snprintf(out, sizeof(out), "real %s", real);
    else
        snprintf(out, sizeof(out), "%d", rc);
    return out;
}

START_TEST(test_tree_a_path_lands_on_the_disk_by_every_spelling_of_its_mount)
{
    d_open(1);
    ck_assert_int_eq(askew_disk_mkdir(disk, "d", 0755), 0);
    const int fh = askew_disk_open(disk, "f", O_WRONLY | O_CREAT, 0644);
    ck_assert_int_ge(fh, 0);
    ck_assert_str_eq(locate("/data"), "disk /");
    ck_assert_str_eq(locate("/data/"), "disk /");
    ck_assert_str_eq(locate("//data//f/"), "disk //f/"); /* handed on untouched */
    ck_assert_str_eq(locate("/data/./d/."), "disk /./d/.");
    ck_assert_str_eq(locate("/x/../data/f"), "disk /f");
    ck_assert_str_eq(locate("/data/../data/f"), "disk /f");
    ck_assert_str_eq(locate("/data/d/../../data/f"), "disk /f");
    ck_assert_str_eq(locate("/datas/f"), "0");
    ck_assert_str_eq(locate("/dat"), "0");
    ck_assert_str_eq(locate("/"), "0");
    /* in and out again: the real path it names; the disk's part must pass */
    ck_assert_str_eq(locate("/data/.."), "real /");
    ck_assert_str_eq(locate("/data/d/../../etc/"), "real /etc/");
    ck_assert_str_eq(locate("/data/no/../../etc"), "-2"); /* -ENOENT */
    ck_assert_str_eq(locate("/data/f/../../etc"), "-20"); /* -ENOTDIR */
    ck_assert_str_eq(locate("data/f"), "-22");            /* relative: -EINVAL */
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    d_close();
}
END_TEST

START_TEST(test_tree_an_open_directory_knows_its_path_after_a_rename)
{
    d_open(1);
    char path[64];
    ck_assert_int_eq(askew_disk_mkdir(disk, "a", 0755), 0);
    ck_assert_int_eq(askew_disk_mkdir(disk, "a/b", 0755), 0);
    const int root = askew_disk_open(disk, "/", O_RDONLY, 0);
    const int b = askew_disk_open(disk, "a/b", O_RDONLY, 0);
    const int f = askew_disk_open(disk, "a/f", O_WRONLY | O_CREAT, 0644);
    ck_assert_int_eq(askew_disk_handle_path(disk, root, path, sizeof(path)), 0);
    ck_assert_str_eq(path, "/");
    ck_assert_int_eq(askew_disk_handle_path(disk, b, path, sizeof(path)), 0);
    ck_assert_str_eq(path, "/a/b");
    ck_assert_int_eq(askew_disk_rename(disk, "a", "z"), 0);
    ck_assert_int_eq(askew_disk_handle_path(disk, b, path, sizeof(path)), 0);
    ck_assert_str_eq(path, "/z/b");
    ck_assert_int_eq(askew_disk_handle_path(disk, b, path, 4), -ENAMETOOLONG);
    ck_assert_int_eq(askew_disk_handle_path(disk, f, path, sizeof(path)), -ENOTDIR);
    ck_assert_int_eq(askew_disk_handle_path(disk, 99, path, sizeof(path)), -EBADF);
    ck_assert_int_eq(askew_disk_rmdir(disk, "z/b"), 0);
    ck_assert_int_eq(askew_disk_handle_path(disk, b, path, sizeof(path)), -ENOENT);
    for (int fh = 0; fh < 3; fh++)
        ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    d_close();
}
END_TEST

START_TEST(
    test_tree_a_directory_fsync_prunes_the_log_only_where_every_directory_is_synced)
{
    d_open(1);
    ck_assert_int_eq(askew_disk_mkdir(disk, "d", 0755), 0);                /* 1: in / */
    ck_assert_int_eq(askew_disk_mkdir(disk, "e", 0755), 0);                /* 2: in / */
    const int fh = askew_disk_open(disk, "d/f", O_WRONLY | O_CREAT, 0644); /* 3: d */
    ck_assert_int_eq(askew_disk_close(disk, fh), 0);
    ck_assert_int_eq(askew_disk_rename(disk, "d/f", "e/f"), 0); /* 4: d and e */
    ck_assert_uint_eq(disk->log_len, 4);
    ck_assert_int_eq(askew__disk_dir_sync(disk, at("/")), 0);
    ck_assert_uint_eq(disk->log_len, 2); /* 3 waits for d */
    ck_assert_int_eq(askew__disk_dir_sync(disk, at("e")), 0);
    ck_assert_uint_eq(disk->log_len, 2); /* the oldest still waits for d */
    ck_assert_int_eq(askew__disk_dir_sync(disk, at("d")), 0);
    ck_assert_uint_eq(disk->log_len, 0);
    ck_assert_uint_eq(askew__disk_dmap_get(&at("e")->dur_ents, "f"), at("e/f")->ino);
    ck_assert_uint_eq(askew__disk_dmap_get(&at("d")->dur_ents, "f"), 0);
    d_close();
}
END_TEST

START_TEST(test_tree_an_inode_goes_exactly_when_nothing_names_or_holds_it)
{
    d_open(1);
    struct inode *n;
    ck_assert_int_eq(askew__disk_inode_new(disk, 0, 0644, &n), 0);
    const uint64_t ino = n->ino;
    ck_assert_uint_eq(disk->files, 2); /* the root and it */
    n->opens = 1;
    askew__disk_maybe_free(disk, ino);
    ck_assert_ptr_eq(inode_get(disk, ino), n); /* an open handle holds it */
    n->opens = 0;
    n->log_refs = 1;
    askew__disk_maybe_free(disk, ino);
    ck_assert_ptr_eq(inode_get(disk, ino), n); /* so does a logged operation */
    n->log_refs = 0;
    askew__disk_maybe_free(disk, ino);
    ck_assert_ptr_null(inode_get(disk, ino));
    ck_assert_uint_eq(disk->files, 1);
    askew__disk_maybe_free(disk, ASKEW_DISK_ROOT_INO); /* never the root */
    ck_assert_ptr_nonnull(inode_get(disk, ASKEW_DISK_ROOT_INO));
    /* inode numbers are never reused */
    ck_assert_int_eq(askew__disk_inode_new(disk, 1, 0755, &n), 0);
    ck_assert_uint_eq(n->ino, ino + 1);
    d_close();
}
END_TEST

Suite *disk_tree_suite(void)
{
    Suite *s = suite_create("disk_tree");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc,
                   test_tree_entries_stay_sorted_by_name_and_a_set_replaces_in_place);
    tcase_add_test(tc,
                   test_tree_a_path_resolves_below_the_mount_as_the_kernel_resolves_it);
    tcase_add_test(tc,
                   test_tree_a_path_lands_on_the_disk_by_every_spelling_of_its_mount);
    tcase_add_test(tc, test_tree_an_open_directory_knows_its_path_after_a_rename);
    tcase_add_test(
        tc,
        test_tree_a_directory_fsync_prunes_the_log_only_where_every_directory_is_synced);
    tcase_add_test(tc, test_tree_an_inode_goes_exactly_when_nothing_names_or_holds_it);
    suite_add_tcase(s, tc);
    return s;
}
