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

/* The next component of the path at *p, past the slashes before it: *p
 * points at it, and its length is returned (0 at the path's end). */
static size_t next_component(const char **p)
{
    while (**p == '/')
        (*p)++;
    return strcspn(*p, "/");
}

/* The component at p (no '/' in it) of length len: a name or "." or "..". */
static int component_kind(const char *p, size_t len)
{
    if (len == 1 && p[0] == '.')
        return LAST_DOT;
    if (len == 2 && p[0] == '.' && p[1] == '.')
        return LAST_DOTDOT;
    return LAST_NORM;
}

int askew__disk_walk(const struct askew_disk *d, const char *path, struct lookup *lk)
{
    if (path == NULL || *path == '\0')
        return -ENOENT;
    uint64_t at = ASKEW_DISK_ROOT_INO;
    *lk = (struct lookup){.dir = 0, .ino = at, .last = LAST_ROOT, .slash = 0};
    const char *p = path;
    for (;;) {
        const size_t len = next_component(&p);
        if (len == 0)
            return 0;
        if (len > ASKEW_DISK_NAME_MAX)
            return -ENAMETOOLONG;
        const struct inode *cur = inode_get(d, at);
        if (cur == NULL || !cur->is_dir)
            return -ENOTDIR; /* what came before was not a directory */
        const char *next = p + len;
        while (*next == '/')
            next++;
        const int kind = component_kind(p, len);
        lk->slash = p[len] == '/';
        if (kind != LAST_NORM) {
            if (kind == LAST_DOTDOT)
                at = cur->parent;
            lk->dir = 0;
            lk->ino = at;
            lk->last = kind;
            lk->name[0] = '\0';
            p = next;
            continue;
        }
        memcpy(lk->name, p, len);
        lk->name[len] = '\0';
        const uint64_t ino = askew__disk_dmap_get(&cur->ents, lk->name);
        if (*next == '\0') {
            lk->dir = at;
            lk->ino = ino;
            lk->last = LAST_NORM;
            return 0;
        }
        if (ino == 0)
            return -ENOENT;
        at = ino;
        p = next;
    }
}

int askew__disk_found(const struct askew_disk *d, const char *path, struct lookup *lk,
                      struct inode **out)
{
    const int rc = askew__disk_walk(d, path, lk);
    if (rc)
        return rc;
    struct inode *n = inode_get(d, lk->ino);
    if (n == NULL)
        return -ENOENT;
    if (lk->slash && !n->is_dir)
        return -ENOTDIR;
    *out = n;
    return 0;
}

/* Whether the disk's part of a path, `rest` (what follows the mount),
 * climbs out of the mount by "..": 0 when it stays, 1 with *after just
 * past the ".." that leaves when the components before it resolve to a
 * directory on the disk, or their walk's -errno (the kernel walks them). */
static int climbs_out(const struct askew_disk *d, const char *rest, const char **after)
{
    long depth = 0;
    const char *p = rest;
    for (;;) {
        const size_t len = next_component(&p);
        if (len == 0)
            return 0;
        const int kind = component_kind(p, len);
        depth += kind == LAST_NORM ? 1 : kind == LAST_DOTDOT ? -1 : 0;
        if (depth < 0)
            break;
        p += len;
    }
    char prefix[ASKEW_DISK_PATH_MAX];
    const size_t n = (size_t)(p - rest);
    if (n + 2 > sizeof(prefix))
        return -ENAMETOOLONG;
    prefix[0] = '/';
    memcpy(prefix + 1, rest, n);
    prefix[n + 1] = '\0';
    struct lookup lk;
    struct inode *dir;
    const int rc = askew__disk_found(d, prefix, &lk, &dir);
    if (rc)
        return rc;
    if (!dir->is_dir)
        return -ENOTDIR;
    *after = p + 2;
    return 1;
}

int askew_disk_locate(const struct askew_disk *disk, const char *mount,
                      const char *path, const char **rel, char *real, size_t cap)
{
    const size_t mount_len = strlen(mount);
    char at[ASKEW_DISK_PATH_MAX]; /* the real directory reached so far, "" for "/" */
    size_t n = 0;
    int passed = 0; /* went through the disk and out again */
    if (path == NULL || path[0] != '/' || mount[0] != '/')
        return -EINVAL;
    const char *p = path;
    for (;;) {
        const size_t len = next_component(&p);
        if (len == 0)
            break;
        const int kind = component_kind(p, len);
        if (kind == LAST_DOTDOT) {
            while (n > 0 && at[n - 1] != '/')
                n--;
            if (n > 0)
                n--; /* ".." of "/" is "/" */
        } else if (kind == LAST_NORM) {
            if (n + 1 + len >= sizeof(at))
                return -ENAMETOOLONG;
            at[n++] = '/';
            memcpy(at + n, p, len);
            n += len;
        }
        p += len;
        if (kind != LAST_NORM || n != mount_len || memcmp(at, mount, n) != 0)
            continue;
        /* The mount: the rest is the disk's, unless ".." leads out again. */
        const char *after = NULL;
        const int out = climbs_out(disk, p, &after);
        if (out <= 0) {
            *rel = out < 0 ? NULL : *p != '\0' ? p : "/";
            return out < 0 ? out : 1;
        }
        while (n > 0 && at[n - 1] != '/')
            n--;
        if (n > 0)
            n--;
        p = after;
        passed = 1;
    }
    if (!passed)
        return 0;
    if (real == NULL)
        return 2;
    /* The real path it names, folded, with its trailing '/' kept. */
    const size_t slash = path[strlen(path) - 1] == '/';
    if (n + slash + 2 > cap)
        return -ENAMETOOLONG;
    memcpy(real, n ? at : "/", n ? n : 1);
    n = n ? n : 1;
    if (slash && real[n - 1] != '/')
        real[n++] = '/';
    real[n] = '\0';
    return 2;
}

/* The current path from the disk's root of directory n, then "/" and
 * `name` when it is not NULL, into out: 0, -ENOENT (n was removed),
 * -ENAMETOOLONG. */
static int dir_path(const struct askew_disk *disk, const struct inode *n,
                    const char *name, char *out, size_t cap)
{
    if (cap < 2)
        return -ENAMETOOLONG;
    /* Built from the end: each directory's name in its parent, up to the
     * root (a directory has one name; its parent's entries hold it). */
    size_t at = cap - 1;
    out[at] = '\0';
    const char *part = name;
    while (part != NULL || n->ino != ASKEW_DISK_ROOT_INO) {
        if (part == NULL) {
            if (n->cur_links == 0)
                return -ENOENT; /* removed since */
            const struct inode *parent = inode_get(disk, n->parent);
            for (size_t i = 0; parent && i < parent->ents.len && part == NULL; i++)
                if (parent->ents.v[i].ino == n->ino)
                    part = parent->ents.v[i].name;
            ASKEW_ASSERT(part != NULL);
            n = parent;
        }
        const size_t len = strlen(part);
        if (len + 1 > at)
            return -ENAMETOOLONG;
        at -= len;
        memcpy(out + at, part, len);
        out[--at] = '/';
        part = NULL;
    }
    if (at == cap - 1)
        out[--at] = '/';
    memmove(out, out + at, cap - at);
    return 0;
}

int askew_disk_handle_path(const struct askew_disk *disk, int fh, char *out, size_t cap)
{
    if (fh < 0 || (size_t)fh >= disk->handles_len || !disk->handles[fh].used)
        return -EBADF;
    const struct inode *n = inode_get(disk, disk->handles[fh].ino);
    if (!n->is_dir)
        return -ENOTDIR;
    return dir_path(disk, n, NULL, out, cap);
}

size_t askew_disk_dirops(const struct askew_disk *disk)
{
    return disk->log_len;
}

int askew_disk_dirop_get(const struct askew_disk *disk, size_t i,
                         struct askew_disk_dirop *out, char *path, char *path2,
                         size_t cap)
{
    if (i >= disk->log_len)
        return -ERANGE;
    const struct dirop *op = &disk->log[i];
    const struct inode *dir =
        inode_get(disk, op->kind == DIROP_RENAME ? op->dir2 : op->dir1);
    const struct inode *n = inode_get(disk, op->ino);
    out->kind = (int)op->kind;
    out->is_dir = n != NULL && n->is_dir;
    out->dir_synced = dir != NULL && dir->synced_seq > 0;
    path[0] = path2[0] = '\0';
    const struct inode *dir1 = inode_get(disk, op->dir1);
    int rc = dir1 == NULL ? -ENOENT : dir_path(disk, dir1, op->name1, path, cap);
    if (rc == 0 && op->kind == DIROP_RENAME)
        rc = dir == NULL ? -ENOENT : dir_path(disk, dir, op->name2, path2, cap);
    return rc;
}
