/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk's tree (see disk_impl.h): the sorted entry lists of
 * a directory, the inodes and when they are freed, the log of directory
 * operations not yet durable and the fsync of a directory that prunes it,
 * and the lookup of a path in the current tree. Never draws from the DISK
 * stream and never traces an operation (its callers do), only mixes what
 * a directory fsync made durable. Called by disk.c and disk_crash.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "disk_impl.h"

/* ---- entry lists ----------------------------------------------------------- */

static size_t dmap_find(const struct dmap *m, const char *name, int *found)
{
    size_t lo = 0, hi = m->len;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(m->v[mid].name, name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

uint64_t askew__disk_dmap_get(const struct dmap *m, const char *name)
{
    int found;
    const size_t i = dmap_find(m, name, &found);
    return found ? m->v[i].ino : 0;
}

/* Set name -> ino; the inode number it replaced (0 if none) in *old. */
int askew__disk_dmap_set(struct dmap *m, const char *name, uint64_t ino, uint64_t *old)
{
    int found;
    const size_t i = dmap_find(m, name, &found);
    *old = 0;
    if (found) {
        *old = m->v[i].ino;
        m->v[i].ino = ino;
        return 0;
    }
    char *copy = strdup(name);
    if (copy == NULL ||
        askew__grow((void **)&m->v, &m->cap, m->len + 1, sizeof(*m->v))) {
        free(copy);
        return -ENOMEM;
    }
    memmove(&m->v[i + 1], &m->v[i], (m->len - i) * sizeof(*m->v));
    m->v[i].name = copy;
    m->v[i].ino = ino;
    m->len++;
    return 0;
}

uint64_t askew__disk_dmap_del(struct dmap *m, const char *name)
{
    int found;
    const size_t i = dmap_find(m, name, &found);
    if (!found)
        return 0;
    const uint64_t ino = m->v[i].ino;
    free(m->v[i].name);
    memmove(&m->v[i], &m->v[i + 1], (m->len - i - 1) * sizeof(*m->v));
    m->len--;
    return ino;
}

static void dmap_clear(struct dmap *m)
{
    for (size_t i = 0; i < m->len; i++)
        free(m->v[i].name);
    m->len = 0;
}

void askew__disk_dmap_free(struct dmap *m)
{
    dmap_clear(m);
    free(m->v);
    m->v = NULL;
    m->cap = 0;
}

int askew__disk_dmap_copy(struct dmap *dst, const struct dmap *src)
{
    dmap_clear(dst);
    if (askew__grow((void **)&dst->v, &dst->cap, src->len, sizeof(*dst->v)))
        return -ENOMEM;
    for (size_t i = 0; i < src->len; i++) {
        dst->v[i].name = strdup(src->v[i].name);
        if (dst->v[i].name == NULL) {
            dst->len = i;
            return -ENOMEM;
        }
        dst->v[i].ino = src->v[i].ino;
    }
    dst->len = src->len;
    return 0;
}

/* ---- inodes ------------------------------------------------------------------ */

int askew__disk_inode_new(struct askew_disk *d, int is_dir, uint32_t mode,
                          struct inode **out)
{
    const uint64_t ino = d->inodes_len;
    if (d->files >= ASKEW_DISK_FILES_MAX)
        return -ENOSPC;
    if (askew__grow((void **)&d->inodes, &d->inodes_cap, ino + 1, sizeof(*d->inodes)))
        return -ENOMEM;
    struct inode *n = calloc(1, sizeof(*n));
    if (n == NULL)
        return -ENOMEM;
    n->ino = ino;
    n->is_dir = is_dir;
    n->mode = (is_dir ? S_IFDIR : S_IFREG) | (mode & 07777);
    n->mtime_ns = n->dur_mtime_ns = d->sched->now_ns;
    d->inodes[ino] = n;
    d->inodes_len = ino + 1;
    d->files++;
    *out = n;
    return 0;
}

static void inode_release(struct askew_disk *d, struct inode *n);

/* Free an inode nothing names and no handle holds. */
void askew__disk_maybe_free(struct askew_disk *d, uint64_t ino)
{
    struct inode *n = inode_get(d, ino);
    if (n && n->cur_links == 0 && n->dur_links == 0 && n->opens == 0 &&
        n->log_refs == 0 && ino != ASKEW_DISK_ROOT_INO)
        inode_release(d, n);
}

/* Free an inode's memory, leaving the links of what it names alone. */
void askew__disk_inode_destroy(struct askew_disk *d, struct inode *n)
{
    d->inodes[n->ino] = NULL;
    d->files--;
    d->bytes -= n->cur_size + n->dur_size;
    askew__disk_dmap_free(&n->dur_ents);
    askew__disk_dmap_free(&n->ents);
    free(n->cur);
    free(n->dur);
    free(n->mark);
    free(n->dirty);
    free(n);
}

/* Durable entries dropped (a snapshot replaced, a directory freed): their
 * inodes lose a durable link each and go if nothing else holds them. */
static void dur_unref(struct askew_disk *d, struct dmap *dropped)
{
    for (size_t i = 0; i < dropped->len; i++) {
        struct inode *c = inode_get(d, dropped->v[i].ino);
        if (c && c->dur_links)
            c->dur_links--;
    }
    for (size_t i = 0; i < dropped->len; i++)
        askew__disk_maybe_free(d, dropped->v[i].ino);
    askew__disk_dmap_free(dropped);
}

static void inode_release(struct askew_disk *d, struct inode *n)
{
    /* Its durable entries no longer hold their inodes. */
    struct dmap dur = n->dur_ents;
    n->dur_ents = (struct dmap){0};
    askew__disk_inode_destroy(d, n);
    dur_unref(d, &dur);
}

/* ---- the directory log ------------------------------------------------------- */

int askew__disk_log_add(struct askew_disk *d, uint32_t kind, uint64_t dir1,
                        const char *name1, uint64_t dir2, const char *name2,
                        uint64_t ino)
{
    if (d->log_len >= ASKEW_DISK_DIROPS_MAX)
        return -ENOSPC;
    if (askew__grow((void **)&d->log, &d->log_cap, d->log_len + 1, sizeof(*d->log)))
        return -ENOMEM;
    struct dirop *op = &d->log[d->log_len];
    op->name1 = strdup(name1);
    op->name2 = name2 ? strdup(name2) : NULL;
    if (op->name1 == NULL || (name2 && op->name2 == NULL)) {
        free(op->name1);
        free(op->name2);
        return -ENOMEM;
    }
    struct inode *named = inode_get(d, ino);
    if (named)
        named->log_refs++;
    op->seq = ++d->log_seq;
    op->kind = kind;
    op->dir1 = dir1;
    op->dir2 = dir2;
    op->ino = ino;
    d->log_len++;
    return 0;
}

/* Forget the oldest k operations; with `gc`, an inode only they held goes
 * (the crash sweeps instead). */
void askew__disk_log_drop(struct askew_disk *d, size_t k, int gc)
{
    if (k == 0)
        return;
    for (size_t i = 0; i < k; i++) {
        free(d->log[i].name1);
        free(d->log[i].name2);
        struct inode *n = inode_get(d, d->log[i].ino);
        if (n && n->log_refs)
            n->log_refs--;
    }
    if (gc)
        for (size_t i = 0; i < k; i++)
            askew__disk_maybe_free(d, d->log[i].ino);
    memmove(d->log, d->log + k, (d->log_len - k) * sizeof(*d->log));
    d->log_len -= k;
}

/* Take back the operation just added (its caller failed after it). */
void askew__disk_log_pop(struct askew_disk *d)
{
    struct dirop *op = &d->log[--d->log_len];
    struct inode *n = inode_get(d, op->ino);
    if (n && n->log_refs)
        n->log_refs--;
    free(op->name1);
    free(op->name2);
    d->log_seq--;
}

static int op_synced(const struct askew_disk *d, uint64_t dir, uint64_t seq)
{
    const struct inode *n = inode_get(d, dir);
    return n == NULL || n->synced_seq >= seq;
}

/* Drop the oldest operations every directory they touch has made durable. */
static void log_prune(struct askew_disk *d)
{
    size_t k = 0;
    while (k < d->log_len) {
        const struct dirop *op = &d->log[k];
        if (!op_synced(d, op->dir1, op->seq) ||
            (op->kind == DIROP_RENAME && !op_synced(d, op->dir2, op->seq)))
            break;
        k++;
    }
    askew__disk_log_drop(d, k, 1);
}

int askew__disk_dir_sync(struct askew_disk *d, struct inode *dir)
{
    struct dmap next = {0};
    if (askew__disk_dmap_copy(&next, &dir->ents)) {
        askew__disk_dmap_free(&next);
        return -ENOMEM;
    }
    for (size_t i = 0; i < next.len; i++) {
        struct inode *c = inode_get(d, next.v[i].ino);
        if (c)
            c->dur_links++;
    }
    struct dmap old = dir->dur_ents;
    dir->dur_ents = next;
    dur_unref(d, &old);
    dir->synced_seq = d->log_seq;
    mix(d, dir->ents.len);
    log_prune(d);
    return 0;
}

/* ---- paths ---------------------------------------------------------------------- */

int askew__disk_walk(const struct askew_disk *d, const char *path, struct lookup *lk)
{
    if (path == NULL || *path == '\0')
        return -ENOENT;
    uint64_t at = ASKEW_DISK_ROOT_INO;
    lk->dir = 0;
    lk->ino = at;
    lk->name[0] = '\0';
    const char *p = path;
    for (;;) {
        while (*p == '/')
            p++;
        if (*p == '\0')
            return 0;
        const char *end = strchr(p, '/');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > ASKEW_DISK_NAME_MAX)
            return -ENAMETOOLONG;
        const struct inode *cur = inode_get(d, at);
        if (cur == NULL || !cur->is_dir)
            return -ENOTDIR;
        int last = 1;
        for (const char *q = p + len; *q; q++)
            if (*q != '/')
                last = 0;
        if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
            if (len == 2)
                at = cur->parent;
            lk->dir = 0;
            lk->ino = at;
            lk->name[0] = '\0';
            p += len;
            continue;
        }
        memcpy(lk->name, p, len);
        lk->name[len] = '\0';
        const uint64_t next = askew__disk_dmap_get(&cur->ents, lk->name);
        if (last) {
            lk->dir = at;
            lk->ino = next;
            if (end && next && !inode_get(d, next)->is_dir)
                return -ENOTDIR; /* "file/" */
            return 0;
        }
        if (next == 0)
            return -ENOENT;
        at = next;
        p += len;
    }
}
