/* SPDX-License-Identifier: Apache-2.0 */
/* C code on a node's simulated disk (ext/preload_disk.h): the table of
 * mounts (node, path, engine disk, and per handle what C code's open knew)
 * the Python layer registers, and the disk hook that resolves a path to the
 * running node's disk or an fd to its handle and calls the engine
 * (ext/engine/disk.h). The hook runs on the simulation thread, possibly
 * without the GIL: it never calls Python and never allocates Python
 * objects. The table is process-wide, like the preload's own state (one
 * simulation thread per process); it belongs to one loop at a time, and a
 * mount for another loop replaces it. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk.h"
#include "preload_disk.h"

#define CAPSULE_NAME "askew._core.disk"
/* A simulated fd is ASKEW_DISK_FD_BASE + (node << 16) + the engine's
 * handle (askew_disk_fd_encode/_decode in askew_preload.h), the numbering
 * askew/_disk/ gives Python's simulated descriptors too: one fd means one
 * open file whichever side opened it, so Python's fcntl.lockf or os.readv
 * on a simulated file reach this hook. */
#define FD_NODE_SHIFT ASKEW_DISK_FD_NODE_SHIFT
/* A disk's st_dev: one device per node's disk, C's stat and Python's alike. */
#define DEV_BASE     0xa5000
#define FD_NODES_MAX ASKEW_DISK_FD_NODES_MAX

struct mount {
    int64_t node;
    char *path; /* absolute, normalised, no trailing '/' */
    size_t path_len;
    struct askew_disk *disk; /* borrowed from owner */
    PyObject *capsule;       /* strong */
    PyObject *owner;         /* strong: keeps the disk alive */
    struct askew_disk_locks locks;
    long long lock_token; /* the incarnation whose process locks are held */
    struct slot *fds;     /* by engine handle: what C code's open knew */
    size_t fds_cap;
};

/* What the disk's handle table does not keep: an fd's FD_CLOEXEC (zero for
 * a handle Python opened). */
struct slot {
    struct mount *mount;
    int fh;
    int cloexec;
};

static PyObject *owner_loop;  /* strong; the loop the tables belong to */
static struct mount **mounts; /* each its own allocation */
static size_t mounts_len, mounts_cap;

static void mounts_clear(void)
{
    for (size_t i = 0; i < mounts_len; i++) {
        free(mounts[i]->fds);
        free(mounts[i]->path);
        askew_disk_locks_free(&mounts[i]->locks);
        Py_CLEAR(mounts[i]->capsule);
        Py_CLEAR(mounts[i]->owner);
        free(mounts[i]);
        mounts[i] = NULL;
    }
    mounts_len = 0;
    Py_CLEAR(owner_loop);
}

void askew__preload_disk_enter(struct askew_loop_state *loop)
{
    if (owner_loop != NULL && owner_loop != (PyObject *)loop)
        mounts_clear();
}

/* ---- paths ---------------------------------------------------------------- */

/* Lexically normalise absolute `in` into out ("//", ".", ".." folded, no
 * trailing '/'): a mount's path, as the engine's locate wants it.
 * -ENAMETOOLONG. */
static int normalise(const char *in, char *out, size_t cap)
{
    size_t len = 0;
    const char *p = in;
    while (*p != '\0') {
        while (*p == '/')
            p++;
        const char *end = p + strcspn(p, "/");
        const size_t n = (size_t)(end - p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* the '/' before the dropped name */
        } else {
            if (len + 1 + n + 1 > cap)
                return -ENAMETOOLONG;
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p = end;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return 0;
}

/* `path` relative to dirfd made absolute into out, as written (the engine
 * resolves it, askew_disk_locate): 0, 1 when it cannot be on a disk
 * (relative to a real directory fd), -errno. */
static struct slot *slot_of(const struct askew_loop_state *loop, int fd);

static int resolve(const struct askew_loop_state *loop, int dirfd, const char *path,
                   char *out, size_t cap)
{
    if (path == NULL)
        return -EFAULT;
    const char *base = "";
    char cwd[PATH_MAX];
    if (path[0] == '/') {
        /* absolute: as it is */
    } else if (dirfd == AT_FDCWD) {
        /* The real working directory: getcwd is not interposed, and the
         * preload has its switch off while the hook runs anyway. */
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return 1;
        base = cwd;
    } else if (dirfd >= (int)ASKEW_DISK_FD_BASE) {
        /* A simulated directory's fd, whichever side opened it: where that
         * directory is now, on its mount. */
        const struct slot *s = slot_of(loop, dirfd);
        if (s == NULL)
            return -EBADF;
        const size_t mlen = s->mount->path_len;
        if (mlen + 1 >= sizeof(cwd))
            return -ENAMETOOLONG;
        memcpy(cwd, s->mount->path, mlen);
        const int rc = askew_disk_handle_path(s->mount->disk, s->fh, cwd + mlen,
                                              sizeof(cwd) - mlen);
        if (rc < 0)
            return rc;
        base = cwd;
    } else {
        return 1;
    }
    const int n = snprintf(out, cap, "%s%s%s", base, *base ? "/" : "", path);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* The running node's mount holding `abs` (engine-resolved), its part on the
 * disk in *rel: 1; 0 when no mount holds it; ASKEW_DISK_REFUSE when another
 * node's mount does (or no node runs); or the -errno of resolving it. */
static int64_t mount_of(const struct askew_loop_state *loop, const char *abs,
                        struct mount **out, const char **rel)
{
    *out = NULL;
    if ((PyObject *)loop != owner_loop)
        return 0;
    int refuse = 0;
    for (size_t i = 0; i < mounts_len; i++) {
        struct mount *m = mounts[i];
        const char *part = NULL;
        /* A path that leaves the disk by ".." again (2) goes to libc as
         * written: the preload's ABI passes the caller's path or nothing. */
        const int rc = askew_disk_locate(m->disk, m->path, abs, &part, NULL, 0);
        if (rc <= 0 || rc == 2) {
            if (rc < 0 && m->node == loop->node_current)
                return rc;
            continue;
        }
        if (m->node != loop->node_current) {
            refuse = 1;
            continue;
        }
        *out = m;
        *rel = part;
    }
    return *out != NULL ? 1 : refuse ? ASKEW_DISK_REFUSE : 0;
}

/* ---- sqlite's temporary files ------------------------------------------------ */

/* sqlite puts a temporary file (VACUUM's copy, a sort that spills, a TEMP
 * table) in the first of $SQLITE_TMPDIR, $TMPDIR, /var/tmp, /usr/tmp, /tmp
 * that is a writable directory, names it etilqs_<random> and unlinks it at
 * once. A node's temporary files are the node's: C code of a node with a
 * disk has them at the root of that disk, so they never reach the host and
 * go with the node's crash. The directories themselves stay the host's
 * (sqlite only checks that one exists). */
#define TEMP_PREFIX "etilqs_"
static char temp_env[2][PATH_MAX]; /* $SQLITE_TMPDIR, $TMPDIR, normalised at mount */

static void temp_dirs_read(void)
{
    static const char *const names[] = {"SQLITE_TMPDIR", "TMPDIR"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = getenv(names[i]);
        if (v == NULL || v[0] != '/' || normalise(v, temp_env[i], PATH_MAX) < 0)
            temp_env[i][0] = '\0';
    }
}

static int is_temp_dir(const char *dir)
{
    static const char *const fixed[] = {"/var/tmp", "/usr/tmp", "/tmp"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (strcmp(dir, fixed[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof(temp_env) / sizeof(temp_env[0]); i++)
        if (temp_env[i][0] != '\0' && strcmp(dir, temp_env[i]) == 0)
            return 1;
    return 0;
}

static struct mount *mount_of_node(int64_t node);

/* The running node's mount when `abs` is one of sqlite's temporary files,
 * its place on that disk ("/etilqs_...", a pointer into abs) in *rel; else
 * NULL. */
static struct mount *temp_file(const struct askew_loop_state *loop, const char *abs,
                               const char **rel)
{
    char norm[PATH_MAX];
    const char *name = strrchr(abs, '/');
    if ((PyObject *)loop != owner_loop || name == NULL ||
        strncmp(name + 1, TEMP_PREFIX, sizeof(TEMP_PREFIX) - 1) != 0 ||
        normalise(abs, norm, sizeof(norm)) < 0)
        return NULL;
    char *cut = strrchr(norm, '/');
    if (strcmp(cut, name) != 0)
        return NULL; /* "etilqs_x/.." and the like: not a temporary file */
    *cut = '\0';
    if (!is_temp_dir(norm[0] != '\0' ? norm : "/"))
        return NULL;
    *rel = name;
    return mount_of_node(loop->node_current);
}

/* ---- fds -------------------------------------------------------------------- */

static uint32_t live_incarnation(const struct askew_loop_state *loop, int64_t node)
{
    int alive = 0;
    uint32_t inc = 0;
    if (node < 0 ||
        askew_net_node_state(&loop->net->net, (uint32_t)node, &alive, &inc) < 0)
        return UINT32_MAX;
    return alive ? inc : UINT32_MAX;
}

static struct mount *mount_of_node(int64_t node)
{
    for (size_t i = 0; i < mounts_len; i++)
        if (mounts[i]->node == node)
            return mounts[i];
    return NULL;
}

/* Room for handle fh's slot; 0 or -ENOMEM. */
static int slot_room(struct mount *m, int fh)
{
    return askew__grow((void **)&m->fds, &m->fds_cap, (size_t)fh + 1, sizeof(*m->fds));
}

/* The slot of a simulated fd the running node may use, or NULL (EBADF): an
 * fd of another node, or whose handle is closed (a crash closes them all).
 * Numbers are reused as the kernel reuses them: an fd kept past a crash
 * names whatever the next incarnation opened under that handle. */
static struct slot *slot_of(const struct askew_loop_state *loop, int fd)
{
    int64_t node;
    int fh;
    if (loop == NULL || !askew_disk_fd_decode(fd, &node, &fh) ||
        (PyObject *)loop != owner_loop)
        return NULL;
    struct mount *m = node == loop->node_current ? mount_of_node(node) : NULL;
    if (m == NULL || askew_disk_flags(m->disk, fh) < 0 || slot_room(m, fh) < 0)
        return NULL;
    struct slot *s = &m->fds[fh];
    s->mount = m;
    s->fh = fh;
    return s;
}

static int slot_fd(const struct slot *s)
{
    return askew_disk_fd_encode(s->mount->node, s->fh);
}

/* An engine call costs the node the latency the disk drew for it. */
static int64_t charged(struct askew_loop_state *loop, struct mount *m, int64_t rc)
{
    const int64_t ns = askew_disk_latency_ns(m->disk);
    if (ns > 0)
        (void)askew__loop_consume_ns(loop, ns); /* past the budget: the run ends
                                                   there anyway */
    return rc;
}

/* The disk keeps mtimes in virtual time; stat reads them on the wall clock,
 * as askew/_disk/'s os.stat does. */
static void fill_stat(const struct askew_loop_state *loop,
                      const struct askew_disk_stat *st, struct askew_disk_stat_out *out)
{
    out->dev = st->dev;
    out->ino = st->ino;
    out->size = st->size;
    out->blocks = st->blocks;
    out->mode = st->mode;
    out->nlink = st->nlink;
    out->mtime_ns = loop->wall_epoch_ns + st->mtime_ns;
}

static int64_t open_file(struct askew_loop_state *loop, struct mount *m,
                         const char *rel, struct askew_disk_call *c)
{
    if (m->node >= FD_NODES_MAX)
        return -EMFILE; /* its fds would leave the simulated range */
    const int fh =
        (int)charged(loop, m, askew_disk_open(m->disk, rel, c->flags, c->mode));
    if (fh < 0 || slot_room(m, fh) < 0) {
        if (fh >= 0)
            (void)askew_disk_close(m->disk, fh);
        return fh < 0 ? fh : -ENOMEM;
    }
    struct slot *s = &m->fds[fh];
    *s = (struct slot){.mount = m, .fh = fh, .cloexec = (c->flags & O_CLOEXEC) != 0};
    return slot_fd(s);
}

/* The process locks of a crashed incarnation died with it. */
static uint64_t lock_owner(struct askew_loop_state *loop, struct slot *s, int ofd)
{
    struct mount *m = s->mount;
    const long long token = askew__node_token(m->node, live_incarnation(loop, m->node));
    if (m->lock_token != token) {
        askew_disk_locks_drop(&m->locks, 0, ASKEW_DISK_LOCK_ANY);
        m->lock_token = token;
    }
    return ofd ? (1ull << 63) | (uint64_t)s->fh : (uint64_t)token;
}

static int64_t file_lock(struct askew_loop_state *loop, struct slot *s, int cmd,
                         struct askew_disk_flock *fl)
{
    struct mount *m = s->mount;
    struct askew_disk_stat st;
    int rc = askew_disk_fstat(m->disk, s->fh, &st);
    if (rc < 0 || fl == NULL)
        return rc < 0 ? rc : -EFAULT;
    int64_t base = 0;
    if (fl->whence == SEEK_CUR) {
        base = askew_disk_lseek(m->disk, s->fh, 0, SEEK_CUR);
    } else if (fl->whence == SEEK_END) {
        base = (int64_t)st.size;
    } else if (fl->whence != SEEK_SET) {
        return -EINVAL;
    }
    if (base < 0)
        return base;
    int64_t start = base + fl->start, end;
    if (fl->len > 0) {
        end = start + fl->len;
    } else if (fl->len < 0) { /* the len bytes before start */
        end = start;
        start += fl->len;
    } else {
        end = ASKEW_DISK_LOCK_EOF;
    }
    if (start < 0 || end <= start)
        return -EINVAL;
    const int ofd = cmd == F_OFD_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
    const uint64_t owner = lock_owner(loop, s, ofd);
    if (cmd == F_GETLK || cmd == F_OFD_GETLK) {
        struct askew_disk_lock held;
        rc =
            askew_disk_lock_test(&m->locks, st.ino, owner, fl->type, start, end, &held);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            fl->type = F_UNLCK;
            return 0;
        }
        fl->type = held.type;
        fl->whence = SEEK_SET;
        fl->start = held.start;
        fl->len = held.end == ASKEW_DISK_LOCK_EOF ? 0 : held.end - held.start;
        fl->pid = (held.owner >> 63) != 0 ? -1 : (int32_t)(m->node + 1);
        return 0;
    }
    rc = askew_disk_lock_set(&m->locks, st.ino, owner, fl->type, start, end);
    /* A wait for a lock only another owner could release can never end on
     * one simulation thread: the kernel's word for it. */
    if (rc == -EAGAIN && (cmd == F_SETLKW || cmd == F_OFD_SETLKW))
        return -EDEADLK;
    return rc;
}

static int64_t file_fcntl(struct askew_loop_state *loop, struct slot *s,
                          struct askew_disk_call *c)
{
    switch (c->flags) {
    case F_GETFD:
        return s->cloexec ? FD_CLOEXEC : 0;
    case F_SETFD:
        s->cloexec = (c->off & FD_CLOEXEC) != 0;
        return 0;
    case F_GETFL:
        return askew_disk_flags(s->mount->disk, s->fh);
    case F_SETFL: {
        /* O_NONBLOCK, O_ASYNC, O_NOATIME change nothing on a disk file;
         * turning O_APPEND on or off is not modelled. */
        const int now = askew_disk_flags(s->mount->disk, s->fh);
        if (now < 0)
            return now;
        return ((now ^ (int)c->off) & O_APPEND) == 0 ? 0 : ASKEW_DISK_REFUSE;
    }
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
        return file_lock(loop, s, c->flags, c->lock);
    default:
        return ASKEW_DISK_REFUSE; /* F_DUPFD, leases, seals...: not modelled */
    }
}

static int64_t fd_call(struct askew_loop_state *loop, struct askew_disk_call *c)
{
    struct slot *s = slot_of(loop, c->fd);
    if (s == NULL)
        return -EBADF;
    struct mount *m = s->mount;
    struct askew_disk *d = m->disk;
    struct askew_disk_stat st;
    int64_t rc;
    switch (c->op) {
    case ASKEW_DCALL_CLOSE:
        if (askew_disk_fstat(d, s->fh, &st) == 0) /* POSIX: any close drops them */
            askew_disk_locks_drop(&m->locks, st.ino, lock_owner(loop, s, 0));
        askew_disk_locks_drop(&m->locks, 0, lock_owner(loop, s, 1));
        rc = charged(loop, m, askew_disk_close(d, s->fh));
        *s = (struct slot){0}; /* s is m->fds[fh]: the handle is free again */
        return rc;
    case ASKEW_DCALL_READ:
        return charged(loop, m,
                       c->off < 0 ? askew_disk_read(d, s->fh, c->buf, c->len)
                                  : askew_disk_pread(d, s->fh, c->buf, c->len, c->off));
    case ASKEW_DCALL_WRITE:
        return charged(loop, m,
                       c->off < 0
                           ? askew_disk_write(d, s->fh, c->buf, c->len)
                           : askew_disk_pwrite(d, s->fh, c->buf, c->len, c->off));
    case ASKEW_DCALL_SEEK:
        return charged(loop, m, askew_disk_lseek(d, s->fh, c->off, c->flags));
    case ASKEW_DCALL_SYNC:
        return charged(loop, m,
                       c->flags ? askew_disk_fdatasync(d, s->fh)
                                : askew_disk_fsync(d, s->fh));
    case ASKEW_DCALL_TRUNCATE:
        return charged(loop, m, askew_disk_ftruncate(d, s->fh, c->off));
    case ASKEW_DCALL_STAT:
        rc = charged(loop, m, askew_disk_fstat(d, s->fh, &st));
        if (rc == 0 && c->st != NULL)
            fill_stat(loop, &st, c->st);
        return rc;
    case ASKEW_DCALL_FCNTL:
        return file_fcntl(loop, s, c);
    default:
        return ASKEW_DISK_REFUSE;
    }
}

static int64_t rename_call(struct askew_loop_state *loop, struct askew_disk_call *c)
{
    char from[PATH_MAX], to[PATH_MAX];
    int r1 = resolve(loop, c->fd, c->path, from, sizeof(from));
    int r2 = resolve(loop, c->dirfd2, c->path2, to, sizeof(to));
    if (r1 < 0 || r2 < 0)
        return r1 < 0 ? r1 : r2;
    const char *rel_from = NULL, *rel_to = NULL;
    struct mount *m1 = NULL, *m2 = NULL;
    const int64_t w1 = r1 == 0 ? mount_of(loop, from, &m1, &rel_from) : 0;
    const int64_t w2 = r2 == 0 ? mount_of(loop, to, &m2, &rel_to) : 0;
    if (w1 == ASKEW_DISK_REFUSE || w2 == ASKEW_DISK_REFUSE)
        return ASKEW_DISK_REFUSE;
    if (w1 < 0 || w2 < 0)
        return w1 < 0 ? w1 : w2;
    if (m1 == NULL && m2 == NULL)
        return ASKEW_DISK_PASS;
    if (m1 != m2)
        return -EXDEV; /* between a disk and the real file system */
    if ((c->flags & ~RENAME_NOREPLACE) != 0)
        return -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT: not modelled */
    struct askew_disk_stat st;
    if ((c->flags & RENAME_NOREPLACE) != 0 &&
        askew_disk_stat(m1->disk, rel_to, &st) == 0)
        return -EEXIST;
    return charged(loop, m1, askew_disk_rename(m1->disk, rel_from, rel_to));
}

int64_t askew__preload_disk_call(void *ctx, struct askew_disk_call *c)
{
    struct askew_loop_state *loop = ctx;
    if (mounts_len == 0) /* the common case: no node has a disk */
        return c->path != NULL ? ASKEW_DISK_PASS : -EBADF;
    if (c->op == ASKEW_DCALL_RENAME)
        return rename_call(loop, c);
    if (c->path == NULL)
        return fd_call(loop, c);
    char abs[PATH_MAX];
    const int r = resolve(loop, c->fd, c->path, abs, sizeof(abs));
    if (r != 0)
        return r < 0 ? r : ASKEW_DISK_PASS;
    const char *rel = NULL;
    struct mount *m = NULL;
    const int64_t where = mount_of(loop, abs, &m, &rel);
    if (where == 0)
        m = temp_file(loop, abs, &rel);
    if (m == NULL || where < 0 || where == ASKEW_DISK_REFUSE)
        return where == 0 ? ASKEW_DISK_PASS : where;
    struct askew_disk *d = m->disk;
    struct askew_disk_stat st;
    int64_t rc;
    switch (c->op) {
    case ASKEW_DCALL_OPEN:
        return open_file(loop, m, rel, c);
    case ASKEW_DCALL_STAT:
        rc = charged(loop, m, askew_disk_stat(d, rel, &st));
        if (rc == 0 && c->st != NULL)
            fill_stat(loop, &st, c->st);
        return rc;
    case ASKEW_DCALL_ACCESS: /* modes are kept, never enforced */
        return charged(loop, m, askew_disk_stat(d, rel, &st));
    case ASKEW_DCALL_UNLINK:
        return charged(loop, m,
                       (c->flags & AT_REMOVEDIR) ? askew_disk_rmdir(d, rel)
                                                 : askew_disk_unlink(d, rel));
    case ASKEW_DCALL_MKDIR:
        return charged(loop, m, askew_disk_mkdir(d, rel, c->mode));
    case ASKEW_DCALL_TRUNCATE:
        return charged(loop, m, askew_disk_truncate(d, rel, c->off));
    case ASKEW_DCALL_ROUTE:
        return 0;
    default:
        return ASKEW_DISK_REFUSE;
    }
}

/* ---- the Python side ------------------------------------------------------ */

/* _preload_disk_mount(loop, node, mount, capsule, owner): C code that node
 * runs reaches `mount` (an absolute path) on the disk in `capsule` (a
 * PyCapsule named "askew._core.disk" holding a struct askew_disk *), which
 * `owner` keeps alive. A mount for another loop first drops every mount
 * and simulated fd of the previous one. */
static PyObject *disk_mount(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *loop, *capsule, *owner;
    long long node;
    const char *path;
    if (!PyArg_ParseTuple(args, "OLsOO:_preload_disk_mount", &loop, &node, &path,
                          &capsule, &owner))
        return NULL;
    struct askew_disk *disk = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (disk == NULL)
        return NULL;
    if (path[0] != '/') {
        PyErr_Format(PyExc_ValueError,
                     "a disk's mount must be an absolute path, not %R",
                     PyTuple_GET_ITEM(args, 2));
        return NULL;
    }
    char norm[PATH_MAX];
    if (normalise(path, norm, sizeof(norm)) < 0 || strcmp(norm, "/") == 0) {
        PyErr_Format(PyExc_ValueError, "a disk cannot be mounted at %R",
                     PyTuple_GET_ITEM(args, 2));
        return NULL;
    }
    if (owner_loop != loop)
        mounts_clear();
    temp_dirs_read();
    size_t i = 0;
    while (i < mounts_len &&
           !(mounts[i]->node == node && strcmp(mounts[i]->path, norm) == 0))
        i++;
    if (i == mounts_len) {
        struct mount *fresh = calloc(1, sizeof(*fresh));
        char *copy = strdup(norm);
        if (fresh == NULL || copy == NULL ||
            askew__grow((void **)&mounts, &mounts_cap, mounts_len + 1,
                        sizeof(*mounts)) < 0) {
            free(fresh);
            free(copy);
            return PyErr_NoMemory();
        }
        fresh->node = node;
        fresh->path = copy;
        fresh->path_len = strlen(norm);
        mounts[mounts_len++] = fresh;
    }
    struct mount *m = mounts[i];
    m->disk = disk;
    Py_INCREF(capsule);
    Py_XSETREF(m->capsule, capsule);
    Py_INCREF(owner);
    Py_XSETREF(m->owner, owner);
    if (owner_loop == NULL) {
        Py_INCREF(loop);
        owner_loop = loop;
    }
    Py_RETURN_NONE;
}

/* _preload_disk_unmount(loop): forget every mount and simulated fd of that
 * loop (the world calls it when its run ends). */
static PyObject *disk_unmount(PyObject *Py_UNUSED(module), PyObject *loop)
{
    if (owner_loop == loop)
        mounts_clear();
    Py_RETURN_NONE;
}

/* _preload_disk_routed(loop, path) -> int: 1 when C code of the running
 * node would reach `path` on its disk, -1 when on a disk it cannot reach, 0
 * when on the real file system (askew/_loop/preload.py's sqlite3 guard). */
static PyObject *disk_routed(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *loop;
    PyObject *path_obj;
    if (!PyArg_ParseTuple(args, "OO&:_preload_disk_routed", &loop,
                          PyUnicode_FSConverter, &path_obj))
        return NULL;
    char abs[PATH_MAX];
    int r = resolve(NULL, AT_FDCWD, PyBytes_AS_STRING(path_obj), abs, sizeof(abs));
    Py_DECREF(path_obj);
    const char *rel;
    struct mount *m;
    if (r != 0 || owner_loop != loop)
        return PyLong_FromLong(0);
    const int64_t where = mount_of((struct askew_loop_state *)loop, abs, &m, &rel);
    return PyLong_FromLong(where == ASKEW_DISK_REFUSE ? -1 : where != 0);
}

static PyMethodDef disk_methods[] = {
    {"_preload_disk_mount", disk_mount, METH_VARARGS,
     "_preload_disk_mount(loop, node, mount, capsule, owner): C code of node reaches "
     "mount on that disk."},
    {"_preload_disk_unmount", disk_unmount, METH_O,
     "_preload_disk_unmount(loop): forget that loop's mounts and simulated fds."},
    {"_preload_disk_routed", disk_routed, METH_VARARGS,
     "_preload_disk_routed(loop, path) -> 1 (the running node's disk), -1 (another "
     "node's), 0 (the real file system)."},
    {NULL, NULL, 0, NULL},
};

int askew__preload_disk_setup(PyObject *module)
{
    /* The numbering of simulated fds, for askew/_disk/: defined once. */
    if (PyModule_AddIntConstant(module, "DISK_FD_BASE", ASKEW_DISK_FD_BASE) < 0 ||
        PyModule_AddIntConstant(module, "DISK_FD_NODE_SHIFT", FD_NODE_SHIFT) < 0 ||
        PyModule_AddIntConstant(module, "DISK_FD_NODES_MAX", FD_NODES_MAX) < 0 ||
        PyModule_AddIntConstant(module, "DISK_DEV_BASE", ASKEW_DISK_DEV_BASE) < 0)
        return -1;
    return PyModule_AddFunctions(module, disk_methods);
}
