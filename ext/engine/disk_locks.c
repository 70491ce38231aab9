/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk's byte-range locks (see disk.h's lock block): POSIX
 * record locks as sqlite takes them, in a table the caller owns, keyed by
 * inode and an opaque owner. Nothing here draws, traces or blocks, and
 * nothing else of the disk is touched: the preload's disk hook
 * (ext/preload_disk.c) keeps one table per mount. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "disk.h"
#include "engine.h"

static int lock_args_ok(int type, int64_t start, int64_t end)
{
    return (type == F_RDLCK || type == F_WRLCK || type == F_UNLCK) && start >= 0 &&
           end > start;
}

static int lock_conflicts(const struct askew_disk_lock *l, uint64_t ino, uint64_t owner,
                          int type, int64_t start, int64_t end)
{
    return l->ino == ino && l->owner != owner && l->start < end && start < l->end &&
           (l->type == F_WRLCK || type == F_WRLCK);
}

void askew_disk_locks_free(struct askew_disk_locks *t)
{
    free(t->v);
    t->v = NULL;
    t->len = t->cap = 0;
}

int askew_disk_lock_test(const struct askew_disk_locks *t, uint64_t ino, uint64_t owner,
                         int type, int64_t start, int64_t end,
                         struct askew_disk_lock *out)
{
    if (!lock_args_ok(type, start, end))
        return -EINVAL;
    for (size_t i = 0; type != F_UNLCK && i < t->len; i++) {
        if (lock_conflicts(&t->v[i], ino, owner, type, start, end)) {
            if (out != NULL)
                *out = t->v[i];
            return 1;
        }
    }
    return 0;
}

int askew_disk_lock_set(struct askew_disk_locks *t, uint64_t ino, uint64_t owner,
                        int type, int64_t start, int64_t end)
{
    int rc = askew_disk_lock_test(t, ino, owner, type, start, end, NULL);
    if (rc != 0)
        return rc < 0 ? rc : -EAGAIN;
    /* Room first (one lock may split in two, plus the new one), so a
     * failure leaves the table as it was. */
    rc = askew__grow((void **)&t->v, &t->cap, t->len + 2, sizeof(*t->v));
    if (rc < 0)
        return rc;
    size_t n = t->len;
    for (size_t i = 0; i < n; i++) {
        struct askew_disk_lock *l = &t->v[i];
        if (l->ino != ino || l->owner != owner || l->end <= start || end <= l->start)
            continue;
        if (l->start < start && end < l->end) { /* split: keep both sides */
            t->v[t->len] = *l;
            t->v[t->len].start = end;
            t->len++;
            l->end = start;
        } else if (l->start < start) {
            l->end = start;
        } else if (end < l->end) {
            l->start = end;
        } else {
            t->v[i] = t->v[--n]; /* covered: gone */
            t->v[n] = t->v[--t->len];
            i--;
        }
    }
    if (type != F_UNLCK)
        t->v[t->len++] = (struct askew_disk_lock){
            .ino = ino, .owner = owner, .start = start, .end = end, .type = type};
    return 0;
}

void askew_disk_locks_drop(struct askew_disk_locks *t, uint64_t ino, uint64_t owner)
{
    size_t keep = 0;
    for (size_t i = 0; i < t->len; i++) {
        const struct askew_disk_lock *l = &t->v[i];
        if ((ino == 0 || l->ino == ino) &&
            (owner == ASKEW_DISK_LOCK_ANY || l->owner == owner))
            continue;
        t->v[keep++] = *l;
    }
    t->len = keep;
}
