/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk (see disk.h). A file keeps two copies of its bytes:
 * `dur`, what survives any crash, and `cur`, what reads see, with a mark per
 * 512-byte sector that differs between them; fsync copies the marked
 * sectors over. A directory keeps two sorted entry lists, current and
 * durable, and the disk one log of the directory operations not yet durable
 * everywhere they touch; fsync of a directory snapshots its entries. The
 * crash replays a seeded prefix of the log onto the durable entries and
 * keeps a seeded subset of each file's dirty sectors. Inode numbers are
 * never reused, so they are stable for a run. */
#include "disk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Writes past this offset are EFBIG: the buffers are flat arrays. */
#define FILE_SIZE_MAX ((int64_t)1 << 40)
#define DIR_SIZE      4096

enum dirop_kind { DIROP_LINK = 1, DIROP_UNLINK = 2, DIROP_RENAME = 3 };

struct dent {
    char *name;
    uint64_t ino;
};

struct dmap {
    struct dent *v;
    size_t len;
    size_t cap;
};

struct inode {
    uint64_t ino;
    int is_dir;
    uint32_t mode;
    int64_t mtime_ns;
    int64_t dur_mtime_ns;
    uint32_t cur_links; /* entries naming it in the current tree */
    uint32_t dur_links; /* entries naming it in durable snapshots */
    uint32_t opens;
    uint32_t log_refs; /* unsynced directory operations naming it */
    /* a file */
    unsigned char *cur;
    size_t cur_size;
    size_t cur_cap;
    unsigned char *dur;
    size_t dur_size;
    size_t dur_cap;
    uint8_t *mark; /* per sector of cur: 1 when dirty */
    size_t mark_cap;
    uint64_t *dirty; /* the marked sectors, in the order first marked */
    size_t dirty_len;
    size_t dirty_cap;
    /* a directory */
    struct dmap ents;
    struct dmap dur_ents;
    uint64_t parent;
    uint64_t synced_seq; /* the log's seq at its last fsync */
};

struct dirop {
    uint64_t seq;
    uint32_t kind;
    uint64_t dir1;
    char *name1;
    uint64_t dir2; /* a rename's target directory */
    char *name2;
    uint64_t ino;
};

struct handle {
    int used;
    int flags;
    uint64_t ino;
    int64_t off;
};

struct askew_disk {
    struct askew_sched *sched; /* borrowed: the clock and the trace */
    int32_t node;
    struct askew_rng rng;
    struct askew_disk_faults faults;
    int64_t latency_ns;
    uint64_t bytes;
    uint64_t files;
    struct inode **inodes; /* by inode number; NULL once freed */
    size_t inodes_len;
    size_t inodes_cap;
    struct handle *handles;
    size_t handles_len;
    size_t handles_cap;
    size_t handles_open;
    struct dirop *log;
    size_t log_len;
    size_t log_cap;
    uint64_t log_seq;
};

/* ---- trace --------------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3ULL;
    return h;
}

static int64_t traced(struct askew_disk *d, uint32_t op, uint64_t detail,
                      int64_t result)
{
    askew_trace_record(&d->sched->trace, d->sched->now_ns, ASKEW_EV_DISK, d->node,
                       op | (detail << 8), (uint64_t)result);
    return result;
}

static void mix(struct askew_disk *d, uint64_t v)
{
    askew_trace_mix(&d->sched->trace, v);
}

/* The latency fault, drawn first by every operation. */
static void charge(struct askew_disk *d)
{
    const struct askew_disk_faults *f = &d->faults;
    if (f->latency_ns_max > 0)
        d->latency_ns += askew_rng_range(&d->rng, f->latency_ns_min, f->latency_ns_max);
}

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

static uint64_t dmap_get(const struct dmap *m, const char *name)
{
    int found;
    const size_t i = dmap_find(m, name, &found);
    return found ? m->v[i].ino : 0;
}

/* Set name -> ino; the inode number it replaced (0 if none) in *old. */
static int dmap_set(struct dmap *m, const char *name, uint64_t ino, uint64_t *old)
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

static uint64_t dmap_del(struct dmap *m, const char *name)
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

static void dmap_free(struct dmap *m)
{
    dmap_clear(m);
    free(m->v);
    m->v = NULL;
    m->cap = 0;
}

static int dmap_copy(struct dmap *dst, const struct dmap *src)
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

static struct inode *inode_get(const struct askew_disk *d, uint64_t ino)
{
    return ino < d->inodes_len ? d->inodes[ino] : NULL;
}

static int inode_new(struct askew_disk *d, int is_dir, uint32_t mode,
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
static void maybe_free(struct askew_disk *d, uint64_t ino)
{
    struct inode *n = inode_get(d, ino);
    if (n && n->cur_links == 0 && n->dur_links == 0 && n->opens == 0 &&
        n->log_refs == 0 && ino != ASKEW_DISK_ROOT_INO)
        inode_release(d, n);
}

/* Free an inode's memory, leaving the links of what it names alone. */
static void inode_destroy(struct askew_disk *d, struct inode *n)
{
    d->inodes[n->ino] = NULL;
    d->files--;
    d->bytes -= n->cur_size + n->dur_size;
    dmap_free(&n->dur_ents);
    dmap_free(&n->ents);
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
        maybe_free(d, dropped->v[i].ino);
    dmap_free(dropped);
}

static void inode_release(struct askew_disk *d, struct inode *n)
{
    /* Its durable entries no longer hold their inodes. */
    struct dmap dur = n->dur_ents;
    n->dur_ents = (struct dmap){0};
    inode_destroy(d, n);
    dur_unref(d, &dur);
}

static uint64_t sectors(size_t size)
{
    return (size + ASKEW_DISK_SECTOR - 1) / ASKEW_DISK_SECTOR;
}

/* Mark the sectors of cur over [lo, hi) dirty. */
static int mark_dirty(struct inode *n, size_t lo, size_t hi)
{
    if (lo >= hi)
        return 0;
    const uint64_t first = lo / ASKEW_DISK_SECTOR, end = sectors(hi);
    if (askew__grow((void **)&n->mark, &n->mark_cap, end, 1))
        return -ENOMEM;
    for (uint64_t s = first; s < end; s++) {
        if (n->mark[s])
            continue;
        if (askew__grow((void **)&n->dirty, &n->dirty_cap, n->dirty_len + 1,
                        sizeof(uint64_t)))
            return -ENOMEM;
        n->mark[s] = 1;
        n->dirty[n->dirty_len++] = s;
    }
    return 0;
}

/* Set cur's size to `size`, zero-filling growth, within the capacity. */
static int resize_cur(struct askew_disk *d, struct inode *n, size_t size)
{
    const uint64_t cap = d->faults.capacity_bytes;
    if (size > n->cur_size && d->bytes + (size - n->cur_size) > cap)
        return -ENOSPC;
    if (askew__grow((void **)&n->cur, &n->cur_cap, size, 1))
        return -ENOMEM;
    if (size > n->cur_size) {
        memset(n->cur + n->cur_size, 0, size - n->cur_size);
        /* Durable bytes under the new zeros must not come back whole. */
        const size_t dur_end = size < n->dur_size ? size : n->dur_size;
        if (mark_dirty(n, n->cur_size, dur_end))
            return -ENOMEM;
        d->bytes += size - n->cur_size;
    } else {
        d->bytes -= n->cur_size - size;
        /* A sector cut in two keeps its head; later growth zero-fills. */
        size_t keep = 0;
        for (size_t i = 0; i < n->dirty_len; i++) {
            const uint64_t s = n->dirty[i];
            if (s * ASKEW_DISK_SECTOR < size)
                n->dirty[keep++] = s;
            else
                n->mark[s] = 0;
        }
        n->dirty_len = keep;
    }
    n->cur_size = size;
    return 0;
}

/* Make the file's bytes and size durable: the marked sectors are copied. */
static int file_sync(struct askew_disk *d, struct inode *n)
{
    if (askew__grow((void **)&n->dur, &n->dur_cap, n->cur_size, 1))
        return -ENOMEM;
    /* Unmarked bytes past the durable size are zeros of a truncate. */
    if (n->cur_size > n->dur_size)
        memset(n->dur + n->dur_size, 0, n->cur_size - n->dur_size);
    for (size_t i = 0; i < n->dirty_len; i++) {
        const uint64_t s = n->dirty[i];
        const size_t lo = s * ASKEW_DISK_SECTOR;
        size_t hi = lo + ASKEW_DISK_SECTOR;
        if (hi > n->cur_size)
            hi = n->cur_size;
        if (lo < hi)
            memcpy(n->dur + lo, n->cur + lo, hi - lo);
        n->mark[s] = 0;
    }
    d->bytes += n->cur_size;
    d->bytes -= n->dur_size;
    mix(d, n->dirty_len);
    n->dirty_len = 0;
    n->dur_size = n->cur_size;
    return 0;
}

/* ---- the directory log ------------------------------------------------------- */

static int log_add(struct askew_disk *d, uint32_t kind, uint64_t dir1,
                   const char *name1, uint64_t dir2, const char *name2, uint64_t ino)
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
static void log_drop(struct askew_disk *d, size_t k, int gc)
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
            maybe_free(d, d->log[i].ino);
    memmove(d->log, d->log + k, (d->log_len - k) * sizeof(*d->log));
    d->log_len -= k;
}

/* Take back the operation just added (its caller failed after it). */
static void log_pop(struct askew_disk *d)
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
    log_drop(d, k, 1);
}

static int dir_sync(struct askew_disk *d, struct inode *dir)
{
    struct dmap next = {0};
    if (dmap_copy(&next, &dir->ents)) {
        dmap_free(&next);
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

/* A path resolved in the current tree: the directory `dir` holding `name`
 * and the inode it names (0 when absent), or, for the mount itself and paths
 * ending in "." or "..", that directory alone (dir 0, empty name). */
struct lookup {
    uint64_t dir;
    uint64_t ino;
    char name[ASKEW_DISK_NAME_MAX + 1];
};

static int walk(const struct askew_disk *d, const char *path, struct lookup *lk)
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
        const uint64_t next = dmap_get(&cur->ents, lk->name);
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

/* ---- the disk
 * ------------------------------------------------------------------------ */

int askew_disk_new(struct askew_disk **out, struct askew_sched *sched, int32_t node,
                   uint64_t seed)
{
    struct askew_disk *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return -ENOMEM;
    d->sched = sched;
    d->node = node;
    askew_rng_seed(&d->rng,
                   askew_seed_stream(askew_seed_stream(seed, ASKEW_STREAM_DISK),
                                     (uint64_t)(uint32_t)node));
    d->faults.capacity_bytes = ASKEW_DISK_CAPACITY_DEFAULT;
    /* Inode numbers 0 and 1 are never used, as on ext4. */
    d->inodes_len = ASKEW_DISK_ROOT_INO;
    struct inode *root;
    if (askew__grow((void **)&d->inodes, &d->inodes_cap, d->inodes_len,
                    sizeof(*d->inodes)) ||
        inode_new(d, 1, 0755, &root)) {
        askew_disk_free(d);
        return -ENOMEM;
    }
    root->parent = root->ino;
    root->cur_links = root->dur_links = 1;
    *out = d;
    return 0;
}

void askew_disk_free(struct askew_disk *disk)
{
    if (disk == NULL)
        return;
    for (size_t i = 0; i < disk->inodes_len; i++) {
        struct inode *n = disk->inodes[i];
        if (n != NULL)
            inode_destroy(disk, n);
    }
    log_drop(disk, disk->log_len, 0);
    free(disk->log);
    free(disk->inodes);
    free(disk->handles);
    free(disk);
}

int askew_disk_set_faults(struct askew_disk *disk, const struct askew_disk_faults *f)
{
    const uint32_t ppm_max = 1000000u;
    if (f->eio_read_ppm > ppm_max || f->eio_write_ppm > ppm_max ||
        f->eio_fsync_ppm > ppm_max || f->bitrot_ppm > ppm_max ||
        f->latency_ns_min < 0 || f->latency_ns_max < f->latency_ns_min)
        return -EINVAL;
    disk->faults = *f;
    if (disk->faults.capacity_bytes == 0)
        disk->faults.capacity_bytes = ASKEW_DISK_CAPACITY_DEFAULT;
    mix(disk, f->eio_read_ppm);
    mix(disk, f->eio_write_ppm);
    mix(disk, f->eio_fsync_ppm);
    mix(disk, f->bitrot_ppm);
    mix(disk, (uint64_t)f->latency_ns_min);
    mix(disk, (uint64_t)f->latency_ns_max);
    mix(disk, disk->faults.capacity_bytes);
    return 0;
}

void askew_disk_get_faults(const struct askew_disk *disk, struct askew_disk_faults *f)
{
    *f = disk->faults;
}

int64_t askew_disk_latency_ns(struct askew_disk *disk)
{
    const int64_t ns = disk->latency_ns;
    disk->latency_ns = 0;
    return ns;
}

void askew_disk_usage(const struct askew_disk *disk, struct askew_disk_usage *out)
{
    out->bytes = disk->bytes;
    out->files = disk->files;
    out->handles = disk->handles_open;
    out->dirty = 0;
    for (size_t i = 0; i < disk->inodes_len; i++)
        if (disk->inodes[i])
            out->dirty += disk->inodes[i]->dirty_len;
    out->dirops = disk->log_len;
}

/* ---- the namespace -----------------------------------------------------------------
 */

/* Add name -> ino in the current tree of directory `dir`, logged. */
static int link_in(struct askew_disk *d, struct inode *dir, const char *name,
                   struct inode *n)
{
    uint64_t old;
    if (dmap_set(&dir->ents, name, n->ino, &old))
        return -ENOMEM;
    const int rc = log_add(d, DIROP_LINK, dir->ino, name, 0, NULL, n->ino);
    if (rc) {
        (void)dmap_del(&dir->ents, name);
        return rc;
    }
    ASKEW_ASSERT(old == 0);
    n->cur_links++;
    if (n->is_dir)
        n->parent = dir->ino;
    dir->mtime_ns = d->sched->now_ns;
    return 0;
}

static int handle_new(struct askew_disk *d, uint64_t ino, int flags)
{
    size_t fh = 0;
    while (fh < d->handles_len && d->handles[fh].used)
        fh++;
    if (fh == ASKEW_DISK_HANDLES_MAX)
        return -EMFILE;
    if (askew__grow((void **)&d->handles, &d->handles_cap, fh + 1, sizeof(*d->handles)))
        return -ENOMEM;
    if (fh == d->handles_len)
        d->handles_len++;
    d->handles[fh] = (struct handle){.used = 1, .flags = flags, .ino = ino, .off = 0};
    d->handles_open++;
    inode_get(d, ino)->opens++;
    return (int)fh;
}

static int do_open(struct askew_disk *d, const char *path, int flags, uint32_t mode)
{
    struct lookup lk;
    int rc = walk(d, path, &lk);
    if (rc)
        return rc;
    const int acc = flags & O_ACCMODE;
    struct inode *n = inode_get(d, lk.ino);
    if (n && (flags & O_CREAT) && (flags & O_EXCL))
        return -EEXIST;
    if (n == NULL) {
        if (!(flags & O_CREAT))
            return -ENOENT;
        if (flags & O_DIRECTORY)
            return -EINVAL; /* Linux refuses O_CREAT | O_DIRECTORY */
        if (lk.dir == 0)
            return -EISDIR;
        rc = inode_new(d, 0, mode, &n);
        if (rc)
            return rc;
        rc = link_in(d, inode_get(d, lk.dir), lk.name, n);
        if (rc) {
            maybe_free(d, n->ino);
            return rc;
        }
    } else if (n->is_dir) {
        if (acc != O_RDONLY || (flags & O_CREAT))
            return -EISDIR;
    } else if (flags & O_DIRECTORY) {
        return -ENOTDIR;
    } else if ((flags & O_TRUNC) && n->cur_size) {
        rc = resize_cur(d, n, 0);
        if (rc)
            return rc;
        n->mtime_ns = d->sched->now_ns;
    }
    return handle_new(d, n->ino, flags);
}

int askew_disk_open(struct askew_disk *disk, const char *path, int flags, uint32_t mode)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    mix(disk, (uint64_t)(uint32_t)flags);
    return (int)traced(disk, ASKEW_DISK_OP_OPEN, 0, do_open(disk, path, flags, mode));
}

static void fill_stat(const struct askew_disk *d, const struct inode *n,
                      struct askew_disk_stat *st)
{
    st->ino = n->ino;
    st->mode = n->mode;
    st->is_dir = n->is_dir;
    st->mtime_ns = n->mtime_ns;
    if (n->is_dir) {
        uint32_t subdirs = 0;
        for (size_t i = 0; i < n->ents.len; i++) {
            const struct inode *c = inode_get(d, n->ents.v[i].ino);
            subdirs += c && c->is_dir;
        }
        st->size = DIR_SIZE;
        st->nlink = n->cur_links ? 2 + subdirs : 0;
    } else {
        st->size = n->cur_size;
        st->nlink = n->cur_links;
    }
    st->blocks = sectors(st->size);
}

/* The start of a call on an existing path: the latency drawn, the path
 * mixed in, the inode it names, or NULL with *rc = -errno. */
static struct inode *existing(struct askew_disk *d, const char *path, int *rc)
{
    struct lookup lk;
    charge(d);
    mix(d, hash_str(path ? path : ""));
    *rc = walk(d, path, &lk);
    if (*rc == 0 && lk.ino == 0)
        *rc = -ENOENT;
    return *rc ? NULL : inode_get(d, lk.ino);
}

int askew_disk_stat(struct askew_disk *disk, const char *path,
                    struct askew_disk_stat *st)
{
    int rc;
    const struct inode *n = existing(disk, path, &rc);
    if (n)
        fill_stat(disk, n, st);
    return (int)traced(disk, ASKEW_DISK_OP_STAT, 0, rc);
}

/* Whether directory `anc` is `ino` or one of its ancestors. */
static int is_ancestor(const struct askew_disk *d, uint64_t anc, uint64_t ino)
{
    for (;;) {
        if (ino == anc)
            return 1;
        if (ino == ASKEW_DISK_ROOT_INO)
            return 0;
        ino = inode_get(d, ino)->parent;
    }
}

static int do_rename(struct askew_disk *d, const char *from, const char *to)
{
    struct lookup a, b;
    int rc = walk(d, from, &a);
    if (rc)
        return rc;
    rc = walk(d, to, &b);
    if (rc)
        return rc;
    if (a.ino == 0)
        return -ENOENT;
    if (a.dir == 0 || b.dir == 0)
        return a.dir == 0 && a.ino == ASKEW_DISK_ROOT_INO ? -EBUSY : -EINVAL;
    struct inode *src = inode_get(d, a.ino), *dst = inode_get(d, b.ino);
    if (src == dst)
        return 0;
    if (dst) {
        if (src->is_dir && !dst->is_dir)
            return -ENOTDIR;
        if (!src->is_dir && dst->is_dir)
            return -EISDIR;
        if (dst->is_dir && dst->ents.len)
            return -ENOTEMPTY;
    }
    if (src->is_dir && is_ancestor(d, src->ino, b.dir))
        return -EINVAL;
    struct inode *sdir = inode_get(d, a.dir), *tdir = inode_get(d, b.dir);
    uint64_t old;
    rc = log_add(d, DIROP_RENAME, a.dir, a.name, b.dir, b.name, src->ino);
    if (rc)
        return rc;
    if (dmap_set(&tdir->ents, b.name, src->ino, &old)) {
        log_pop(d);
        return -ENOMEM;
    }
    (void)dmap_del(&sdir->ents, a.name);
    if (src->is_dir)
        src->parent = tdir->ino;
    sdir->mtime_ns = tdir->mtime_ns = d->sched->now_ns;
    if (dst) {
        dst->cur_links--;
        maybe_free(d, dst->ino);
    }
    return 0;
}

int askew_disk_rename(struct askew_disk *disk, const char *from, const char *to)
{
    charge(disk);
    mix(disk, hash_str(from ? from : ""));
    mix(disk, hash_str(to ? to : ""));
    return (int)traced(disk, ASKEW_DISK_OP_RENAME, 0, do_rename(disk, from, to));
}

static int do_remove(struct askew_disk *d, const char *path, int want_dir)
{
    struct lookup lk;
    int rc = walk(d, path, &lk);
    if (rc)
        return rc;
    if (lk.ino == 0)
        return -ENOENT;
    if (lk.dir == 0)
        return want_dir ? (lk.ino == ASKEW_DISK_ROOT_INO ? -EBUSY : -EINVAL) : -EISDIR;
    struct inode *n = inode_get(d, lk.ino), *dir = inode_get(d, lk.dir);
    if (want_dir && !n->is_dir)
        return -ENOTDIR;
    if (!want_dir && n->is_dir)
        return -EISDIR;
    if (want_dir && n->ents.len)
        return -ENOTEMPTY;
    rc = log_add(d, DIROP_UNLINK, dir->ino, lk.name, 0, NULL, n->ino);
    if (rc)
        return rc;
    (void)dmap_del(&dir->ents, lk.name);
    dir->mtime_ns = d->sched->now_ns;
    n->cur_links--;
    maybe_free(d, n->ino);
    return 0;
}

int askew_disk_unlink(struct askew_disk *disk, const char *path)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    return (int)traced(disk, ASKEW_DISK_OP_UNLINK, 0, do_remove(disk, path, 0));
}

int askew_disk_rmdir(struct askew_disk *disk, const char *path)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    return (int)traced(disk, ASKEW_DISK_OP_RMDIR, 0, do_remove(disk, path, 1));
}

static int do_mkdir(struct askew_disk *d, const char *path, uint32_t mode)
{
    struct lookup lk;
    int rc = walk(d, path, &lk);
    if (rc)
        return rc;
    if (lk.ino)
        return -EEXIST;
    struct inode *n;
    rc = inode_new(d, 1, mode, &n);
    if (rc)
        return rc;
    rc = link_in(d, inode_get(d, lk.dir), lk.name, n);
    if (rc)
        maybe_free(d, n->ino);
    return rc;
}

int askew_disk_mkdir(struct askew_disk *disk, const char *path, uint32_t mode)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    return (int)traced(disk, ASKEW_DISK_OP_MKDIR, 0, do_mkdir(disk, path, mode));
}

static int truncate_inode(struct askew_disk *d, struct inode *n, int64_t length)
{
    if (n->is_dir)
        return -EISDIR;
    if (length < 0)
        return -EINVAL;
    if (length > FILE_SIZE_MAX)
        return -EFBIG;
    const int rc = resize_cur(d, n, (size_t)length);
    if (rc == 0)
        n->mtime_ns = d->sched->now_ns;
    return rc;
}

int askew_disk_truncate(struct askew_disk *disk, const char *path, int64_t length)
{
    int rc;
    struct inode *n = existing(disk, path, &rc);
    mix(disk, (uint64_t)length);
    if (n)
        rc = truncate_inode(disk, n, length);
    return (int)traced(disk, ASKEW_DISK_OP_TRUNCATE, 0, rc);
}

int askew_disk_list(struct askew_disk *disk, const char *path, askew_disk_dirent_fn fn,
                    void *ctx)
{
    int rc;
    const struct inode *dir = existing(disk, path, &rc);
    if (dir == NULL)
        return (int)traced(disk, ASKEW_DISK_OP_LIST, 0, rc);
    if (!dir->is_dir)
        return (int)traced(disk, ASKEW_DISK_OP_LIST, 0, -ENOTDIR);
    traced(disk, ASKEW_DISK_OP_LIST, 0, (int64_t)dir->ents.len);
    for (size_t i = 0; i < dir->ents.len; i++) {
        const struct inode *c = inode_get(disk, dir->ents.v[i].ino);
        rc = fn(ctx, dir->ents.v[i].name, c->ino, c->is_dir);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- handles ----------------------------------------------------------------------
 */

static struct handle *handle_get(struct askew_disk *d, int fh)
{
    if (fh < 0 || (size_t)fh >= d->handles_len || !d->handles[fh].used)
        return NULL;
    return &d->handles[fh];
}

int askew_disk_flags(const struct askew_disk *disk, int fh)
{
    if (fh < 0 || (size_t)fh >= disk->handles_len || !disk->handles[fh].used)
        return -EBADF;
    return disk->handles[fh].flags;
}

static void locks_drop(struct askew_disk *d, int fh)
{
    /* The byte-range locks' place (disk.h): nothing to drop until then. */
    (void)d;
    (void)fh;
}

int askew_disk_close(struct askew_disk *disk, int fh)
{
    charge(disk);
    struct handle *h = handle_get(disk, fh);
    if (h == NULL)
        return (int)traced(disk, ASKEW_DISK_OP_CLOSE, 0, -EBADF);
    locks_drop(disk, fh);
    h->used = 0;
    disk->handles_open--;
    struct inode *n = inode_get(disk, h->ino);
    n->opens--;
    maybe_free(disk, n->ino);
    return (int)traced(disk, ASKEW_DISK_OP_CLOSE, (uint64_t)fh, 0);
}

static int64_t do_pread(struct askew_disk *d, struct handle *h, void *buf, size_t len,
                        int64_t off)
{
    if (h == NULL || (h->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    const struct inode *n = inode_get(d, h->ino);
    if (n->is_dir)
        return -EISDIR;
    if (off < 0)
        return -EINVAL;
    if (askew_rng_chance_ppm(&d->rng, d->faults.eio_read_ppm))
        return -EIO;
    if ((uint64_t)off >= n->cur_size || len == 0)
        return 0;
    size_t got = n->cur_size - (size_t)off;
    if (got > len)
        got = len;
    memcpy(buf, n->cur + off, got);
    if (askew_rng_chance_ppm(&d->rng, d->faults.bitrot_ppm)) {
        const uint64_t bit = askew_rng_below(&d->rng, (uint64_t)got * 8);
        ((unsigned char *)buf)[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        mix(d, bit);
    }
    return (int64_t)got;
}

static int64_t do_pwrite(struct askew_disk *d, struct handle *h, const void *buf,
                         size_t len, int64_t off)
{
    if (h == NULL || (h->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    struct inode *n = inode_get(d, h->ino);
    if (off < 0)
        return -EINVAL;
    if (askew_rng_chance_ppm(&d->rng, d->faults.eio_write_ppm))
        return -EIO;
    if (h->flags & O_APPEND)
        off = (int64_t)n->cur_size;
    if (len == 0)
        return 0;
    if (len > (size_t)FILE_SIZE_MAX || off > FILE_SIZE_MAX - (int64_t)len)
        return -EFBIG;
    const size_t end = (size_t)off + len;
    if (end > n->cur_size) {
        const int rc = resize_cur(d, n, end);
        if (rc)
            return rc;
    }
    if (mark_dirty(n, (size_t)off, end))
        return -ENOMEM;
    memcpy(n->cur + off, buf, len);
    n->mtime_ns = d->sched->now_ns;
    return (int64_t)len;
}

int64_t askew_disk_pread(struct askew_disk *disk, int fh, void *buf, size_t len,
                         int64_t off)
{
    charge(disk);
    mix(disk, (uint64_t)off);
    return traced(disk, ASKEW_DISK_OP_READ, (uint64_t)fh,
                  do_pread(disk, handle_get(disk, fh), buf, len, off));
}

int64_t askew_disk_pwrite(struct askew_disk *disk, int fh, const void *buf, size_t len,
                          int64_t off)
{
    charge(disk);
    mix(disk, (uint64_t)off);
    return traced(disk, ASKEW_DISK_OP_WRITE, (uint64_t)fh,
                  do_pwrite(disk, handle_get(disk, fh), buf, len, off));
}

int64_t askew_disk_read(struct askew_disk *disk, int fh, void *buf, size_t len)
{
    struct handle *h = handle_get(disk, fh);
    charge(disk);
    const int64_t got = do_pread(disk, h, buf, len, h ? h->off : 0);
    if (got > 0)
        h->off += got;
    return traced(disk, ASKEW_DISK_OP_READ, (uint64_t)fh, got);
}

int64_t askew_disk_write(struct askew_disk *disk, int fh, const void *buf, size_t len)
{
    struct handle *h = handle_get(disk, fh);
    charge(disk);
    const int64_t put = do_pwrite(disk, h, buf, len, h ? h->off : 0);
    if (put >= 0) {
        /* An O_APPEND write leaves the offset at the new end. */
        if (h->flags & O_APPEND)
            h->off = (int64_t)inode_get(disk, h->ino)->cur_size;
        else
            h->off += put;
    }
    return traced(disk, ASKEW_DISK_OP_WRITE, (uint64_t)fh, put);
}

int64_t askew_disk_lseek(struct askew_disk *disk, int fh, int64_t off, int whence)
{
    struct handle *h = handle_get(disk, fh);
    int64_t rc;
    charge(disk);
    if (h == NULL) {
        rc = -EBADF;
    } else {
        int64_t base;
        switch (whence) {
        case SEEK_SET:
            base = 0;
            break;
        case SEEK_CUR:
            base = h->off;
            break;
        case SEEK_END:
            base = (int64_t)inode_get(disk, h->ino)->cur_size;
            break;
        default:
            base = -1;
        }
        if (base < 0 || (off < 0 && base + off < 0) ||
            (off > 0 && base > INT64_MAX - off))
            rc = -EINVAL;
        else
            rc = h->off = base + off;
    }
    return traced(disk, ASKEW_DISK_OP_SEEK, (uint64_t)fh, rc);
}

static int do_sync(struct askew_disk *d, int fh, int data_only)
{
    struct handle *h = handle_get(d, fh);
    if (h == NULL)
        return -EBADF;
    if (askew_rng_chance_ppm(&d->rng, d->faults.eio_fsync_ppm))
        return -EIO; /* nothing becomes durable; the page cache is kept */
    struct inode *n = inode_get(d, h->ino);
    if (n->is_dir)
        return dir_sync(d, n);
    const int rc = file_sync(d, n);
    if (rc == 0 && !data_only)
        n->dur_mtime_ns = n->mtime_ns;
    return rc;
}

int askew_disk_fsync(struct askew_disk *disk, int fh)
{
    charge(disk);
    return (int)traced(disk, ASKEW_DISK_OP_FSYNC, (uint64_t)fh, do_sync(disk, fh, 0));
}

int askew_disk_fdatasync(struct askew_disk *disk, int fh)
{
    charge(disk);
    return (int)traced(disk, ASKEW_DISK_OP_FDATASYNC, (uint64_t)fh,
                       do_sync(disk, fh, 1));
}

int askew_disk_ftruncate(struct askew_disk *disk, int fh, int64_t length)
{
    struct handle *h = handle_get(disk, fh);
    int rc;
    charge(disk);
    mix(disk, (uint64_t)length);
    if (h == NULL)
        rc = -EBADF;
    else if ((h->flags & O_ACCMODE) == O_RDONLY)
        rc = inode_get(disk, h->ino)->is_dir ? -EISDIR : -EINVAL;
    else
        rc = truncate_inode(disk, inode_get(disk, h->ino), length);
    return (int)traced(disk, ASKEW_DISK_OP_TRUNCATE, (uint64_t)fh, rc);
}

int askew_disk_fstat(struct askew_disk *disk, int fh, struct askew_disk_stat *st)
{
    struct handle *h = handle_get(disk, fh);
    charge(disk);
    if (h)
        fill_stat(disk, inode_get(disk, h->ino), st);
    return (int)traced(disk, ASKEW_DISK_OP_STAT, (uint64_t)fh, h ? 0 : -EBADF);
}

/* ---- the crash ----------------------------------------------------------------------
 */

static void replay_set(struct askew_disk *d, uint64_t dir, uint64_t seq,
                       const char *name, uint64_t ino)
{
    struct inode *n = inode_get(d, dir);
    uint64_t old;
    if (n && n->synced_seq < seq)
        (void)dmap_set(&n->dur_ents, name, ino, &old);
}

static void replay_del(struct askew_disk *d, uint64_t dir, uint64_t seq,
                       const char *name)
{
    struct inode *n = inode_get(d, dir);
    if (n && n->synced_seq < seq)
        (void)dmap_del(&n->dur_ents, name);
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
        const size_t lo = s * ASKEW_DISK_SECTOR;
        size_t hi = lo + ASKEW_DISK_SECTOR;
        if (hi > n->cur_size)
            hi = n->cur_size;
        if (hi > size)
            hi = size;
        if (lo < hi)
            memcpy(n->dur + lo, n->cur + lo, hi - lo);
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
        if (dmap_copy(&dir->ents, &dir->dur_ents)) {
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
    log_drop(d, d->log_len, 0);
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
            inode_destroy(d, n);
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

/* ---- byte-range locks (the LD_PRELOAD path's block) -------------------- */

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
