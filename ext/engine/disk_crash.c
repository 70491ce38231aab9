/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk's crash (see disk.h, askew_disk_crash): every handle
 * closes, a seeded prefix of the directory log is replayed onto the
 * durable entries, each file keeps its durable bytes plus a seeded subset
 * of its dirty sectors (and its size, by a coin), and what no durable entry
 * reaches any more is freed. The draws are made in the order disk.h
 * documents, and the outcome is traced. Called only through
 * askew_disk_crash; builds on disk_tree.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "disk_impl.h"

static void replay_set(struct askew_disk *d, uint64_t dir, uint64_t seq,
                       const char *name, uint64_t ino)
{
    struct inode *n = inode_get(d, dir);
    uint64_t old;
    if (n && n->synced_seq < seq)
        (void)askew__disk_dmap_set(&n->dur_ents, name, ino, &old);
}

static void replay_del(struct askew_disk *d, uint64_t dir, uint64_t seq,
                       const char *name)
{
    struct inode *n = inode_get(d, dir);
    if (n && n->synced_seq < seq)
        (void)askew__disk_dmap_del(&n->dur_ents, name);
}

/* What the file is after the crash: its durable bytes, resized to the size
 * drawn, with each dirty sector drawn in ascending order. */
static void crash_file(struct askew_disk *d, struct inode *n,
                       struct askew_disk_crash_result *res)
{
    size_t size = n->dur_size;
    if (n->cur_size != n->dur_size) {
        if (askew_rng_below(&d->rng, 2)) {
            size = n->cur_size;
            res->sizes_kept++;
        } else {
            res->sizes_lost++;
        }
    }
    /* dur becomes the outcome; it holds at least max(size, dur_size). */
    const size_t room = size > n->dur_size ? size : n->dur_size;
    ASKEW_ASSERT(askew__grow((void **)&n->dur, &n->dur_cap, room, 1) == 0);
    if (size > n->dur_size)
        memset(n->dur + n->dur_size, 0, size - n->dur_size);
    const uint64_t marks = sectors(n->cur_size);
    for (uint64_t s = 0; s < marks && s < n->mark_cap; s++) {
        if (!n->mark[s])
            continue;
        n->mark[s] = 0;
        if (!askew_rng_below(&d->rng, 2)) {
            res->sectors_lost++;
            continue;
        }
        res->sectors_kept++;
        /* A sector is kept whole, as it is now: past the current end (a
         * truncate cut it) it holds zeros, never the old bytes the
         * truncate took, even when the old size is what survives. */
        const size_t lo = s * ASKEW_DISK_SECTOR;
        size_t hi = lo + ASKEW_DISK_SECTOR;
        if (hi > size)
            hi = size;
        const size_t cut = hi < n->cur_size ? hi : n->cur_size;
        if (lo < cut)
            memcpy(n->dur + lo, n->cur + lo, cut - lo);
        const size_t from = lo > cut ? lo : cut;
        if (from < hi)
            memset(n->dur + from, 0, hi - from);
    }
    n->dirty_len = 0;
    d->bytes -= n->cur_size + n->dur_size;
    n->dur_size = size;
    ASKEW_ASSERT(askew__grow((void **)&n->cur, &n->cur_cap, size, 1) == 0);
    if (size)
        memcpy(n->cur, n->dur, size);
    n->cur_size = size;
    d->bytes += 2 * size;
}

/* Mark everything the root reaches through durable entries, dropping
 * entries to freed inodes and second names of a directory; set links. */
static int crash_reach(struct askew_disk *d)
{
    uint64_t *queue = NULL;
    size_t qcap = 0, qlen = 0, qpos = 0;
    for (size_t i = 0; i < d->inodes_len; i++)
        if (d->inodes[i])
            d->inodes[i]->cur_links = d->inodes[i]->dur_links = 0;
    struct inode *root = inode_get(d, ASKEW_DISK_ROOT_INO);
    root->cur_links = root->dur_links = 1;
    root->parent = root->ino;
    if (askew__grow((void **)&queue, &qcap, 1, sizeof(*queue)))
        return -ENOMEM;
    queue[qlen++] = root->ino;
    while (qpos < qlen) {
        struct inode *dir = inode_get(d, queue[qpos++]);
        size_t keep = 0;
        for (size_t i = 0; i < dir->dur_ents.len; i++) {
            struct dent e = dir->dur_ents.v[i];
            struct inode *c = inode_get(d, e.ino);
            if (c == NULL || (c->is_dir && c->cur_links)) {
                free(e.name);
                continue;
            }
            c->cur_links++;
            c->dur_links++;
            if (c->is_dir) {
                c->parent = dir->ino;
                if (askew__grow((void **)&queue, &qcap, qlen + 1, sizeof(*queue))) {
                    free(queue);
                    return -ENOMEM;
                }
                queue[qlen++] = c->ino;
            }
            dir->dur_ents.v[keep++] = e;
        }
        dir->dur_ents.len = keep;
        if (askew__disk_dmap_copy(&dir->ents, &dir->dur_ents)) {
            free(queue);
            return -ENOMEM;
        }
    }
    free(queue);
    return 0;
}

int askew_disk_crash(struct askew_disk *disk, struct askew_disk_crash_result *out)
{
    struct askew_disk_crash_result res = {0};
    struct askew_disk *d = disk;
    d->crashes++;
    for (size_t fh = 0; fh < d->handles_len; fh++) {
        if (!d->handles[fh].used)
            continue;
        locks_drop(d, (int)fh);
        d->handles[fh].used = 0;
        inode_get(d, d->handles[fh].ino)->opens--;
        res.handles_closed++;
    }
    d->handles_len = 0;
    d->handles_open = 0;
    /* 1. a prefix of the directory log */
    const uint64_t k = askew_rng_below(&d->rng, (uint64_t)d->log_len + 1);
    res.dirops_kept = k;
    res.dirops_lost = d->log_len - k;
    for (size_t i = 0; i < k; i++) {
        const struct dirop *op = &d->log[i];
        if (op->kind == DIROP_LINK) {
            replay_set(d, op->dir1, op->seq, op->name1, op->ino);
        } else if (op->kind == DIROP_UNLINK) {
            replay_del(d, op->dir1, op->seq, op->name1);
        } else {
            replay_del(d, op->dir1, op->seq, op->name1);
            replay_set(d, op->dir2, op->seq, op->name2, op->ino);
        }
    }
    askew__disk_log_drop(d, d->log_len, 0);
    /* 2. each file's size and dirty sectors, in inode order */
    for (size_t i = 0; i < d->inodes_len; i++) {
        struct inode *n = d->inodes[i];
        if (n == NULL)
            continue;
        n->synced_seq = d->log_seq;
        if (n->is_dir) {
            n->mtime_ns = n->dur_mtime_ns = d->sched->now_ns;
            continue;
        }
        n->mtime_ns = n->dur_mtime_ns;
        if (n->dirty_len || n->cur_size != n->dur_size)
            crash_file(d, n, &res);
    }
    const int rc = crash_reach(d);
    if (rc)
        return rc;
    for (size_t i = 0; i < d->inodes_len; i++) {
        struct inode *n = d->inodes[i];
        if (n && n->cur_links == 0)
            askew__disk_inode_destroy(d, n);
    }
    mix(d, res.sectors_kept);
    mix(d, res.sectors_lost);
    mix(d, res.sizes_kept);
    mix(d, res.sizes_lost);
    mix(d, res.dirops_kept);
    mix(d, res.dirops_lost);
    traced(d, ASKEW_DISK_OP_CRASH, res.handles_closed, (int64_t)d->files);
    if (out)
        *out = res;
    return 0;
}

uint64_t askew_disk_crashes(const struct askew_disk *disk)
{
    return disk->crashes;
}
