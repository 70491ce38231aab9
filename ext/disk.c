/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Disk: one node's simulated disk (ext/engine/disk.h) as a
 * Python type, made by askew/_disk.py for a node spawned with a mount. Each
 * method is one engine call; -errno becomes OSError with that errno (so
 * FileNotFoundError and the rest), and the latency a disk fault drew is
 * charged to the calling node's clock at once, as a blocking time.sleep
 * would be. It keeps its loop alive: the engine borrows the loop's
 * scheduler for the clock and the trace. */
#include <errno.h>
#include <limits.h>

#include "askew_preload.h"
#include "disk.h"
#include "loop.h"
#include "node.h"

#if PY_VERSION_HEX < 0x030D0000
#define PyObject_GetOptionalAttr _PyObject_LookupAttr
#endif

typedef struct {
    PyObject_HEAD struct askew_disk *disk;
    PyObject *loop; /* strong: the scheduler the engine borrows */
    long crashes;   /* crash() calls so far: a DiskFile of an earlier one is stale */
} askew_disk_object;

static PyObject *raise_errno(int64_t rc, PyObject *path)
{
    errno = (int)-rc;
    if (path != NULL)
        return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
    return PyErr_SetFromErrno(PyExc_OSError);
}

/* After each call: the latency the call drew passes on the node's clock. */
static int settle(askew_disk_object *self)
{
    const int64_t ns = askew_disk_latency_ns(self->disk);
    if (ns <= 0)
        return 0;
    const int rc = askew__loop_consume_ns(self->loop, ns);
    if (rc < 0) {
        PyErr_Format(
            PyExc_RuntimeError,
            "a disk latency of %lld ns would carry virtual time past the run's "
            "time budget or its end",
            (long long)ns);
        return -1;
    }
    return 0;
}

/* The common ending: -errno raises, else settle and return rc as an int. */
static PyObject *result(askew_disk_object *self, int64_t rc, PyObject *path)
{
    if (settle(self) < 0)
        return NULL;
    if (rc < 0)
        return raise_errno(rc, path);
    return PyLong_FromLongLong(rc);
}

static PyObject *disk_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *loop;
    int node;
    static char *kwlist[] = {"loop", "node", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oi:Disk", kwlist, &loop, &node))
        return NULL;
    PyObject *loop_type = PyObject_GetAttrString(PyType_GetModule(type), "Loop");
    if (loop_type == NULL)
        return NULL;
    const int is_loop = PyObject_TypeCheck(loop, (PyTypeObject *)loop_type);
    Py_DECREF(loop_type);
    if (!is_loop)
        return PyErr_Format(PyExc_TypeError,
                            "Disk(loop, node): %R is not an askew loop", loop);
    if (node < 0)
        return PyErr_Format(PyExc_ValueError,
                            "Disk(loop, node): node must be >= 0, got %d", node);
    askew_disk_object *self = (askew_disk_object *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    struct askew_sched *sched = &((struct askew_loop_state *)loop)->sched;
    if (askew_disk_new(&self->disk, sched, node, sched->seed) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->loop = Py_NewRef(loop);
    return (PyObject *)self;
}

static int disk_traverse(askew_disk_object *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->loop);
    return 0;
}

static void disk_dealloc(askew_disk_object *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    askew_disk_free(self->disk);
    Py_CLEAR(self->loop);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* A handle argument: an int in C's range. -1 with an exception set. */
static int handle_of(PyObject *obj, int *fh)
{
    const long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *fh = v < -1 || v > INT32_MAX ? -1 : (int)v;
    return 0;
}

/* ---- by path ------------------------------------------------------------- */

static PyObject *d_open(askew_disk_object *self, PyObject *args)
{
    PyObject *path;
    int flags;
    unsigned int mode = 0666;
    if (!PyArg_ParseTuple(args, "O&i|I:open", PyUnicode_FSConverter, &path, &flags,
                          &mode))
        return NULL;
    const int rc = askew_disk_open(self->disk, PyBytes_AS_STRING(path), flags, mode);
    PyObject *out = result(self, rc, path);
    Py_DECREF(path);
    return out;
}

static PyObject *stat_tuple(const struct askew_disk_stat *st)
{
    return Py_BuildValue("(KKKIIiL)", (unsigned long long)st->ino,
                         (unsigned long long)st->size, (unsigned long long)st->blocks,
                         st->mode, st->nlink, st->is_dir, (long long)st->mtime_ns);
}

static PyObject *d_stat(askew_disk_object *self, PyObject *args)
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:stat", PyUnicode_FSConverter, &path))
        return NULL;
    struct askew_disk_stat st;
    const int rc = askew_disk_stat(self->disk, PyBytes_AS_STRING(path), &st);
    PyObject *out = settle(self) < 0 ? NULL
                    : rc < 0         ? raise_errno(rc, path)
                                     : stat_tuple(&st);
    Py_DECREF(path);
    return out;
}

static PyObject *d_rename(askew_disk_object *self, PyObject *args)
{
    PyObject *a, *b = NULL;
    if (!PyArg_ParseTuple(args, "O&O&:rename", PyUnicode_FSConverter, &a,
                          PyUnicode_FSConverter, &b))
        return NULL;
    const int rc =
        askew_disk_rename(self->disk, PyBytes_AS_STRING(a), PyBytes_AS_STRING(b));
    PyObject *out = result(self, rc, a);
    Py_DECREF(a);
    Py_DECREF(b);
    return out;
}

/* unlink, rmdir: one path, no result. */
static PyObject *by_path(askew_disk_object *self, PyObject *args,
                         int (*call)(struct askew_disk *, const char *))
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
        return NULL;
    const int rc = call(self->disk, PyBytes_AS_STRING(path));
    PyObject *out = result(self, rc, path);
    Py_DECREF(path);
    return out;
}

static PyObject *d_unlink(askew_disk_object *self, PyObject *args)
{
    return by_path(self, args, askew_disk_unlink);
}

static PyObject *d_rmdir(askew_disk_object *self, PyObject *args)
{
    return by_path(self, args, askew_disk_rmdir);
}

static PyObject *d_mkdir(askew_disk_object *self, PyObject *args)
{
    PyObject *path;
    unsigned int mode = 0777;
    if (!PyArg_ParseTuple(args, "O&|I:mkdir", PyUnicode_FSConverter, &path, &mode))
        return NULL;
    const int rc = askew_disk_mkdir(self->disk, PyBytes_AS_STRING(path), mode);
    PyObject *out = result(self, rc, path);
    Py_DECREF(path);
    return out;
}

static PyObject *d_truncate(askew_disk_object *self, PyObject *args)
{
    PyObject *path;
    long long length;
    if (!PyArg_ParseTuple(args, "O&L:truncate", PyUnicode_FSConverter, &path, &length))
        return NULL;
    const int rc = askew_disk_truncate(self->disk, PyBytes_AS_STRING(path), length);
    PyObject *out = result(self, rc, path);
    Py_DECREF(path);
    return out;
}

static int add_entry(void *ctx, const char *name, uint64_t ino, int is_dir)
{
    PyObject *entry = Py_BuildValue("(yKi)", name, (unsigned long long)ino, is_dir);
    if (entry == NULL)
        return -1;
    const int rc = PyList_Append(ctx, entry);
    Py_DECREF(entry);
    return rc;
}

static PyObject *d_list(askew_disk_object *self, PyObject *args)
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:list", PyUnicode_FSConverter, &path))
        return NULL;
    PyObject *out = PyList_New(0);
    const int rc =
        out ? askew_disk_list(self->disk, PyBytes_AS_STRING(path), add_entry, out) : 0;
    if (out && (settle(self) < 0 || rc == -1 || (rc < 0 && !raise_errno(rc, path))))
        Py_CLEAR(out);
    Py_DECREF(path);
    return out;
}

/* ---- by handle ------------------------------------------------------------ */

static PyObject *d_close(askew_disk_object *self, PyObject *fh)
{
    int h;
    if (handle_of(fh, &h) < 0)
        return NULL;
    return result(self, askew_disk_close(self->disk, h), NULL);
}

/* The by-handle calls the patched os.read/write/pread/pwrite/lseek reach
 * too (by_fd below): each returns NULL with no exception and *rc < 0 for
 * the engine's error, which its caller raises (logging an EIO first). */
typedef PyObject *(*handle_call)(askew_disk_object *, PyObject *, int64_t *);

static PyObject *pread_call(askew_disk_object *self, PyObject *args, int64_t *rc)
{
    int fh;
    Py_ssize_t n;
    long long off = -1;
    if (!PyArg_ParseTuple(args, "in|L:pread", &fh, &n, &off))
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "negative read length %zd", n);
    PyObject *buf = PyBytes_FromStringAndSize(NULL, n);
    if (buf == NULL)
        return NULL;
    const int64_t got =
        PyTuple_GET_SIZE(args) > 2
            ? askew_disk_pread(self->disk, fh, PyBytes_AS_STRING(buf), (size_t)n, off)
            : askew_disk_read(self->disk, fh, PyBytes_AS_STRING(buf), (size_t)n);
    if (settle(self) < 0 || got < 0) {
        Py_DECREF(buf);
        *rc = got;
        return NULL;
    }
    if (got != n && _PyBytes_Resize(&buf, (Py_ssize_t)got) < 0)
        return NULL;
    return buf;
}

/* A count or an offset, or NULL and *rc (see handle_call). */
static PyObject *count(askew_disk_object *self, int64_t got, int64_t *rc)
{
    if (settle(self) < 0)
        return NULL;
    *rc = got;
    return got < 0 ? NULL : PyLong_FromLongLong(got);
}

static PyObject *pwrite_call(askew_disk_object *self, PyObject *args, int64_t *rc)
{
    int fh;
    Py_buffer data;
    long long off = -1;
    if (!PyArg_ParseTuple(args, "iy*|L:pwrite", &fh, &data, &off))
        return NULL;
    const int64_t put =
        PyTuple_GET_SIZE(args) > 2
            ? askew_disk_pwrite(self->disk, fh, data.buf, (size_t)data.len, off)
            : askew_disk_write(self->disk, fh, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    return count(self, put, rc);
}

static PyObject *lseek_call(askew_disk_object *self, PyObject *args, int64_t *rc)
{
    int fh, whence;
    long long off;
    if (!PyArg_ParseTuple(args, "iLi:lseek", &fh, &off, &whence))
        return NULL;
    return count(self, askew_disk_lseek(self->disk, fh, off, whence), rc);
}

/* A handle_call as a Disk method: the engine's error raised as is. */
static PyObject *raising(handle_call call, askew_disk_object *self, PyObject *args)
{
    int64_t rc = 0;
    PyObject *out = call(self, args, &rc);
    return out == NULL && !PyErr_Occurred() ? raise_errno(rc, NULL) : out;
}

static PyObject *d_pread(askew_disk_object *self, PyObject *args)
{
    return raising(pread_call, self, args);
}

static PyObject *d_pwrite(askew_disk_object *self, PyObject *args)
{
    return raising(pwrite_call, self, args);
}

static PyObject *d_lseek(askew_disk_object *self, PyObject *args)
{
    return raising(lseek_call, self, args);
}

static PyObject *d_fsync(askew_disk_object *self, PyObject *args)
{
    int fh, data_only = 0;
    if (!PyArg_ParseTuple(args, "i|p:fsync", &fh, &data_only))
        return NULL;
    const int rc = data_only ? askew_disk_fdatasync(self->disk, fh)
                             : askew_disk_fsync(self->disk, fh);
    return result(self, rc, NULL);
}

static PyObject *d_ftruncate(askew_disk_object *self, PyObject *args)
{
    int fh;
    long long length;
    if (!PyArg_ParseTuple(args, "iL:ftruncate", &fh, &length))
        return NULL;
    return result(self, askew_disk_ftruncate(self->disk, fh, length), NULL);
}

static PyObject *d_fstat(askew_disk_object *self, PyObject *fh)
{
    int h;
    if (handle_of(fh, &h) < 0)
        return NULL;
    struct askew_disk_stat st;
    const int rc = askew_disk_fstat(self->disk, h, &st);
    if (settle(self) < 0)
        return NULL;
    return rc < 0 ? raise_errno(rc, NULL) : stat_tuple(&st);
}

static PyObject *d_flags(askew_disk_object *self, PyObject *fh)
{
    int h;
    if (handle_of(fh, &h) < 0)
        return NULL;
    const int rc = askew_disk_flags(self->disk, h);
    return rc < 0 ? raise_errno(rc, NULL) : PyLong_FromLong(rc);
}

/* ---- the crash, faults, usage ------------------------------------------------ */

static PyObject *d_crash(askew_disk_object *self, PyObject *Py_UNUSED(a))
{
    struct askew_disk_crash_result r;
    self->crashes++;
    const int rc = askew_disk_crash(self->disk, &r);
    if (rc < 0)
        return askew__raise_engine(rc, "disk crash");
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "sectors_kept",
                         (unsigned long long)r.sectors_kept, "sectors_lost",
                         (unsigned long long)r.sectors_lost, "sizes_kept",
                         (unsigned long long)r.sizes_kept, "sizes_lost",
                         (unsigned long long)r.sizes_lost, "dirops_kept",
                         (unsigned long long)r.dirops_kept, "dirops_lost",
                         (unsigned long long)r.dirops_lost, "handles_closed",
                         (unsigned long long)r.handles_closed);
}

static PyObject *d_set_faults(askew_disk_object *self, PyObject *args)
{
    struct askew_disk_faults f = {0};
    unsigned long long capacity;
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "IIIILLK:set_faults", &f.eio_read_ppm, &f.eio_write_ppm,
                          &f.eio_fsync_ppm, &f.bitrot_ppm, &lo, &hi, &capacity))
        return NULL;
    f.latency_ns_min = lo;
    f.latency_ns_max = hi;
    f.capacity_bytes = capacity;
    const int rc = askew_disk_set_faults(self->disk, &f);
    if (rc < 0)
        return askew__raise_engine(rc, "disk set_faults");
    Py_RETURN_NONE;
}

static PyObject *d_get_faults(askew_disk_object *self, PyObject *Py_UNUSED(a))
{
    struct askew_disk_faults f;
    askew_disk_get_faults(self->disk, &f);
    return Py_BuildValue("(IIIILLK)", f.eio_read_ppm, f.eio_write_ppm, f.eio_fsync_ppm,
                         f.bitrot_ppm, (long long)f.latency_ns_min,
                         (long long)f.latency_ns_max,
                         (unsigned long long)f.capacity_bytes);
}

static PyObject *d_usage(askew_disk_object *self, PyObject *Py_UNUSED(a))
{
    struct askew_disk_usage u;
    struct askew_disk_faults f;
    askew_disk_usage(self->disk, &u);
    askew_disk_get_faults(self->disk, &f);
    return Py_BuildValue(
        "{sKsKsKsKsKsK}", "bytes", (unsigned long long)u.bytes, "files",
        (unsigned long long)u.files, "handles", (unsigned long long)u.handles, "dirty",
        (unsigned long long)u.dirty, "dirops", (unsigned long long)u.dirops, "capacity",
        (unsigned long long)f.capacity_bytes);
}

/* _capsule(): the engine disk for the preload's disk hook
 * (ext/preload_disk.c), which the caller keeps alive by holding self. */
static PyObject *d_capsule(askew_disk_object *self, PyObject *Py_UNUSED(ignored))
{
    return PyCapsule_New(self->disk, "askew._core.disk", NULL);
}

static PyMethodDef disk_methods[] = {
    {"_capsule", (PyCFunction)d_capsule, METH_NOARGS, NULL},
    {"open", (PyCFunction)d_open, METH_VARARGS,
     "open(path, flags, mode=0o666) -> handle"},
    {"stat", (PyCFunction)d_stat, METH_VARARGS,
     "stat(path) -> (ino, size, blocks, mode, nlink, is_dir, mtime_ns)"},
    {"rename", (PyCFunction)d_rename, METH_VARARGS, NULL},
    {"unlink", (PyCFunction)d_unlink, METH_VARARGS, NULL},
    {"rmdir", (PyCFunction)d_rmdir, METH_VARARGS, NULL},
    {"mkdir", (PyCFunction)d_mkdir, METH_VARARGS, NULL},
    {"truncate", (PyCFunction)d_truncate, METH_VARARGS, NULL},
    {"list", (PyCFunction)d_list, METH_VARARGS,
     "list(path) -> [(name: bytes, ino, is_dir)], sorted by name"},
    {"close", (PyCFunction)d_close, METH_O, NULL},
    {"pread", (PyCFunction)d_pread, METH_VARARGS,
     "pread(fh, n[, offset]): without offset, read(2) at the handle's offset"},
    {"pwrite", (PyCFunction)d_pwrite, METH_VARARGS,
     "pwrite(fh, data[, offset]): without offset, write(2) at the handle's offset"},
    {"lseek", (PyCFunction)d_lseek, METH_VARARGS, NULL},
    {"fsync", (PyCFunction)d_fsync, METH_VARARGS, "fsync(fh, data_only=False)"},
    {"ftruncate", (PyCFunction)d_ftruncate, METH_VARARGS, NULL},
    {"fstat", (PyCFunction)d_fstat, METH_O, NULL},
    {"flags", (PyCFunction)d_flags, METH_O, NULL},
    {"crash", (PyCFunction)d_crash, METH_NOARGS,
     "The node crashed: what survives, by the seed; a dict of counts."},
    {"set_faults", (PyCFunction)d_set_faults, METH_VARARGS,
     "set_faults(eio_read_ppm, eio_write_ppm, eio_fsync_ppm, bitrot_ppm, "
     "latency_ns_min, latency_ns_max, capacity_bytes)"},
    {"get_faults", (PyCFunction)d_get_faults, METH_NOARGS,
     "The arguments set_faults was last given (the defaults if never)."},
    {"usage", (PyCFunction)d_usage, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *d_get_crashes(askew_disk_object *self, void *Py_UNUSED(c))
{
    return PyLong_FromLong(self->crashes);
}

static PyGetSetDef disk_getset[] = {
    {"crashes", (getter)d_get_crashes, NULL, "crash() calls so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot disk_slots[] = {
    {Py_tp_new, disk_new},
    {Py_tp_getset, disk_getset},
    {Py_tp_dealloc, disk_dealloc},
    {Py_tp_traverse, disk_traverse},
    {Py_tp_methods, disk_methods},
    {Py_tp_doc, "Disk(loop, node): a node's simulated disk (ext/engine/disk.h)."},
    {0, NULL},
};

static PyType_Spec disk_spec = {
    .name = "askew._core.Disk",
    .basicsize = sizeof(askew_disk_object),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = disk_slots,
};

/* ---- descriptors: fd -> (node's disk, handle) ------------------------------
 * A simulated descriptor is ASKEW_DISK_FD_BASE + (node <<
 * ASKEW_DISK_FD_NODE_SHIFT) + handle, decoded by askew_disk_fd_decode
 * (askew_preload.h, shared with ext/preload_disk.c; askew/_disk.py makes
 * them); it is valid only in its own node's code, while its world runs. The
 * patched os.* functions and askew/_disk.py find its disk here. The state is
 * the interpreter's one run at a time: the node context variable, set once,
 * and the world, set by disk_route_begin. */

static struct {
    PyTypeObject *disk_type; /* borrowed: the module keeps it */
    PyObject *node_var;      /* the running node's token (askew/_world.py) */
    PyObject *on_eio;        /* _disk._eio(nd, what): logs an injected EIO */
    PyObject *real[7];       /* the real os functions, by enum os_call */
    PyObject *unsupported;   /* io.UnsupportedOperation */
    PyObject *base_close;    /* _io._RawIOBase.close */
    PyObject *s_ended, *s_disk, *s_fileno, *s_name, *s_mode;
    PyObject *world; /* the running world, NULL outside a run */
    PyObject *disks; /* world._disks: node id -> NodeDisk */
} route;

static PyObject *ebadf(void)
{
    errno = EBADF;
    return PyErr_SetFromErrno(PyExc_OSError);
}

/* An error of a call by descriptor: an injected EIO is logged first (by
 * askew/_disk.py, which owns the world log), then raised as OSError. */
static PyObject *fail(PyObject *nd, int64_t rc, const char *what)
{
    if (rc == -EIO && route.on_eio != NULL) {
        PyObject *r = PyObject_CallFunction(route.on_eio, "Os", nd, what);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    return raise_errno(rc, NULL);
}

/* The running world's disk of the calling node, or NULL (no exception) when
 * there is none. *node is the caller's node id. -1 with an exception set. */
static int caller_disk(PyObject **nd_out, long long *node)
{
    *nd_out = NULL;
    if (route.world == NULL || PyDict_GET_SIZE(route.disks) == 0)
        return 0;
    PyObject *ended = PyObject_GetAttr(route.world, route.s_ended);
    if (ended == NULL)
        return -1;
    const int is_ended = PyObject_IsTrue(ended);
    Py_DECREF(ended);
    if (is_ended != 0)
        return is_ended < 0 ? -1 : 0;
    PyObject *token;
    if (PyContextVar_Get(route.node_var, NULL, &token) < 0)
        return -1;
    if (token == NULL)
        return 0;
    const long long tok = PyLong_AsLongLong(token);
    Py_DECREF(token);
    if (tok == -1 && PyErr_Occurred())
        return -1;
    *node = tok >> ASKEW_NODE_TOKEN_SHIFT;
    PyObject *key = PyLong_FromLongLong(*node);
    if (key == NULL)
        return -1;
    PyObject *nd = PyDict_GetItemWithError(route.disks, key); /* borrowed */
    Py_DECREF(key);
    if (nd == NULL)
        return PyErr_Occurred() ? -1 : 0;
    *nd_out = Py_NewRef(nd);
    return 0;
}

/* Decode fd: 0 for a real descriptor (or no descriptor at all: the real
 * call says what is wrong with it), 1 for a simulated one with *nd, *disk
 * (new references) and *handle set; -1 with an exception set, OSError(EBADF)
 * for a simulated descriptor outside its node's code. An object with a
 * fileno() method is decoded by what it returns, as os.fsync does. */
static int fd_decode(PyObject *fd, PyObject **nd, askew_disk_object **disk, int *handle)
{
    PyObject *num = Py_NewRef(fd);
    if (!PyLong_CheckExact(fd)) {
        PyObject *fileno;
        if (PyObject_GetOptionalAttr(fd, route.s_fileno, &fileno) < 0)
            goto fail;
        if (fileno != NULL) {
            Py_SETREF(num, PyObject_CallNoArgs(fileno));
            Py_DECREF(fileno);
            if (num == NULL)
                return -1;
        }
        if (!PyLong_Check(num)) {
            Py_DECREF(num);
            return 0;
        }
    }
    int overflow;
    const long long v = PyLong_AsLongLongAndOverflow(num, &overflow);
    Py_DECREF(num);
    if (v == -1 && PyErr_Occurred())
        return -1;
    int64_t fd_node = -1;
    int fh = 0;
    if (overflow < 0 || (overflow == 0 && !askew_disk_fd_decode(v, &fd_node, &fh)))
        return 0;
    long long node = -1;
    if (caller_disk(nd, &node) < 0)
        return -1;
    if (*nd == NULL || overflow > 0 || fd_node != node) {
        Py_CLEAR(*nd);
        ebadf();
        return -1;
    }
    PyObject *d = PyObject_GetAttr(*nd, route.s_disk);
    if (d == NULL || !PyObject_TypeCheck(d, route.disk_type)) {
        if (d != NULL)
            PyErr_Format(PyExc_TypeError, "%R.disk is not an askew._core.Disk", *nd);
        Py_XDECREF(d);
        Py_CLEAR(*nd);
        return -1;
    }
    *disk = (askew_disk_object *)d;
    *handle = fh;
    return 1;
fail:
    Py_DECREF(num);
    return -1;
}

static PyObject *m_fd_route(PyObject *Py_UNUSED(m), PyObject *fd)
{
    PyObject *nd;
    askew_disk_object *disk;
    int handle;
    const int rc = fd_decode(fd, &nd, &disk, &handle);
    if (rc <= 0)
        return rc < 0 ? NULL : Py_NewRef(Py_None);
    Py_DECREF(disk);
    PyObject *out = Py_BuildValue("(Ni)", nd, handle);
    return out;
}

/* The os functions patched here, in the order disk_route_init takes the
 * real ones. */
enum os_call {
    OS_FSYNC,
    OS_FDATASYNC,
    OS_READ,
    OS_PREAD,
    OS_WRITE,
    OS_PWRITE,
    OS_LSEEK
};
static const char *const os_names[] = {"fsync", "fdatasync", "read", "pread",
                                       "write", "pwrite",    "lseek"};

/* os.fsync / os.fdatasync, patched: a real descriptor goes straight to the
 * real function, a simulated one to the engine. */
static PyObject *fsync_common(PyObject *fd, int data_only)
{
    PyObject *real = route.real[data_only ? OS_FDATASYNC : OS_FSYNC];
    if (real == NULL)
        return PyErr_Format(PyExc_RuntimeError, "disk_route_init was not called");
    if (PyLong_CheckExact(fd)) {
        int overflow;
        const long long v = PyLong_AsLongLongAndOverflow(fd, &overflow);
        if (overflow < 0 || (overflow == 0 && v < ASKEW_DISK_FD_BASE && v != -1))
            return PyObject_CallOneArg(real, fd);
    }
    PyObject *nd;
    askew_disk_object *disk;
    int handle;
    const int found = fd_decode(fd, &nd, &disk, &handle);
    if (found <= 0)
        return found < 0 ? NULL : PyObject_CallOneArg(real, fd);
    const int rc = data_only ? askew_disk_fdatasync(disk->disk, handle)
                             : askew_disk_fsync(disk->disk, handle);
    PyObject *out = settle(disk) < 0 ? NULL
                    : rc < 0         ? fail(nd, rc, "fsync")
                                     : Py_NewRef(Py_None);
    Py_DECREF(disk);
    Py_DECREF(nd);
    return out;
}

static PyObject *m_fsync(PyObject *Py_UNUSED(m), PyObject *fd)
{
    return fsync_common(fd, 0);
}

static PyObject *m_fdatasync(PyObject *Py_UNUSED(m), PyObject *fd)
{
    return fsync_common(fd, 1);
}

/* os.read/pread/write/pwrite/lseek, patched: as the Disk methods of the
 * same names with the handle for the descriptor. */
static PyObject *by_fd(enum os_call op, handle_call call, PyObject *const *args,
                       Py_ssize_t n)
{
    PyObject *nd;
    askew_disk_object *disk;
    int handle;
    if (route.real[op] == NULL)
        return PyErr_Format(PyExc_RuntimeError, "disk_route_init was not called");
    const int found = n < 1 ? 0 : fd_decode(args[0], &nd, &disk, &handle);
    if (found <= 0)
        return found < 0 ? NULL
                         : PyObject_Vectorcall(route.real[op], args, (size_t)n, NULL);
    PyObject *rest = PyTuple_New(n);
    PyObject *fh = rest ? PyLong_FromLong(handle) : NULL;
    PyObject *out = NULL;
    if (fh != NULL) {
        PyTuple_SET_ITEM(rest, 0, fh);
        for (Py_ssize_t i = 1; i < n; i++)
            PyTuple_SET_ITEM(rest, i, Py_NewRef(args[i]));
        int64_t rc = 0;
        out = call(disk, rest, &rc);
        if (out == NULL && !PyErr_Occurred())
            fail(nd, rc, os_names[op]);
    }
    Py_XDECREF(rest);
    Py_DECREF(disk);
    Py_DECREF(nd);
    /* cppcheck takes out for a pointer into rc, which call only writes */
    // cppcheck-suppress returnDanglingLifetime
    return out;
}

#define BY_FD(name, op, call)                                                          \
    static PyObject *name(PyObject *Py_UNUSED(m), PyObject *const *args, Py_ssize_t n) \
    {                                                                                  \
        return by_fd(op, call, args, n);                                               \
    }
BY_FD(m_read, OS_READ, pread_call)
BY_FD(m_pread, OS_PREAD, pread_call)
BY_FD(m_write, OS_WRITE, pwrite_call)
BY_FD(m_pwrite, OS_PWRITE, pwrite_call)
BY_FD(m_lseek, OS_LSEEK, lseek_call)
#undef BY_FD

static PyObject *m_route_init(PyObject *Py_UNUSED(m), PyObject *args)
{
    PyObject *node_var, *on_eio, *reals;
    if (!PyArg_ParseTuple(args, "O!OO!:disk_route_init", &PyContextVar_Type, &node_var,
                          &on_eio, &PyDict_Type, &reals))
        return NULL;
    for (size_t i = 0; i < sizeof(os_names) / sizeof(os_names[0]); i++) {
        PyObject *real = PyDict_GetItemString(reals, os_names[i]); /* borrowed */
        if (real == NULL)
            return PyErr_Format(PyExc_KeyError, "disk_route_init: no real os.%s",
                                os_names[i]);
        Py_XSETREF(route.real[i], Py_NewRef(real));
    }
    Py_XSETREF(route.node_var, Py_NewRef(node_var));
    Py_XSETREF(route.on_eio, Py_NewRef(on_eio));
    Py_RETURN_NONE;
}

static PyObject *m_route_begin(PyObject *Py_UNUSED(m), PyObject *args)
{
    PyObject *world, *disks;
    if (!PyArg_ParseTuple(args, "OO!:disk_route_begin", &world, &PyDict_Type, &disks))
        return NULL;
    if (route.node_var == NULL)
        return PyErr_Format(PyExc_RuntimeError, "disk_route_init was not called");
    Py_XSETREF(route.world, Py_NewRef(world));
    Py_XSETREF(route.disks, Py_NewRef(disks));
    Py_RETURN_NONE;
}

static PyObject *m_route_end(PyObject *Py_UNUSED(m), PyObject *world)
{
    if (route.world == world) {
        Py_CLEAR(route.world);
        Py_CLEAR(route.disks);
    }
    Py_RETURN_NONE;
}

/* ---- askew._core.DiskFile: the raw file of a simulated file ---------------
 * What FileIO is for a real descriptor, over an engine handle: a subclass of
 * _io._RawIOBase (registered with io.RawIOBase by askew/_disk.py), so open()
 * wraps it in the C buffered and text objects and a write crosses no Python
 * frame. Its fields follow the base's layout, whose size is known only at
 * run time. name and mode live in the instance dict, as FileIO's name. */
typedef struct {
    PyObject *nd;            /* the NodeDisk, for the EIO log */
    askew_disk_object *disk; /* strong */
    long long fd;
    long crashes; /* disk->crashes at open: a crash since makes it EBADF */
    int handle;
    char readable, writable, closefd, closed;
} diskfile_fields;

static Py_ssize_t diskfile_offset;  /* the base's basicsize */
static PyTypeObject *diskfile_base; /* strong */

static diskfile_fields *F(PyObject *self)
{
    return (diskfile_fields *)((char *)self + diskfile_offset);
}

/* Every call but close: the file must be open and of this incarnation. */
static int live(diskfile_fields *f)
{
    if (f->disk->crashes != f->crashes) {
        ebadf();
        return -1;
    }
    if (f->closed) {
        PyErr_SetString(PyExc_ValueError, "I/O operation on closed file");
        return -1;
    }
    return 0;
}

static PyObject *unsupported(const char *what)
{
    PyErr_SetString(route.unsupported, what);
    return NULL;
}

static PyObject *df_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *nd, *disk;
    int handle, readable, writable, closefd;
    long long fd;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)
        return PyErr_Format(PyExc_TypeError, "DiskFile takes no keyword arguments");
    if (!PyArg_ParseTuple(args, "OO!iLppp:DiskFile", &nd, route.disk_type, &disk,
                          &handle, &fd, &readable, &writable, &closefd))
        return NULL;
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    diskfile_fields *f = F(self);
    f->nd = Py_NewRef(nd);
    f->disk = (askew_disk_object *)Py_NewRef(disk);
    f->fd = fd;
    f->crashes = f->disk->crashes;
    f->handle = handle;
    f->readable = (char)readable;
    f->writable = (char)writable;
    f->closefd = (char)closefd;
    return self;
}

static int df_traverse(PyObject *self, visitproc visit, void *arg)
{
    if (!(diskfile_base->tp_flags & Py_TPFLAGS_HEAPTYPE))
        Py_VISIT(Py_TYPE(self)); /* a heap base visits the type itself */
    Py_VISIT(F(self)->nd);
    Py_VISIT(F(self)->disk);
    return diskfile_base->tp_traverse(self, visit, arg);
}

static int df_clear(PyObject *self)
{
    Py_CLEAR(F(self)->nd);
    Py_CLEAR(F(self)->disk);
    return diskfile_base->tp_clear(self);
}

static void df_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (PyObject_CallFinalizerFromDealloc(self) < 0)
        return; /* close() resurrected it */
    PyObject_GC_UnTrack(self);
    if (tp->tp_weaklistoffset)
        PyObject_ClearWeakRefs(self);
    (void)df_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *df_repr(PyObject *self)
{
    PyObject *name = NULL, *mode = NULL;
    if (PyObject_GetOptionalAttr(self, route.s_name, &name) < 0 ||
        PyObject_GetOptionalAttr(self, route.s_mode, &mode) < 0) {
        Py_XDECREF(name);
        return NULL;
    }
    PyObject *out = PyUnicode_FromFormat("<askew DiskFile name=%R mode=%R>",
                                         name ? name : Py_None, mode ? mode : Py_None);
    Py_XDECREF(name);
    Py_XDECREF(mode);
    return out;
}

static PyObject *df_readable(PyObject *self, PyObject *Py_UNUSED(a))
{
    return live(F(self)) < 0 ? NULL : PyBool_FromLong(F(self)->readable);
}

static PyObject *df_writable(PyObject *self, PyObject *Py_UNUSED(a))
{
    return live(F(self)) < 0 ? NULL : PyBool_FromLong(F(self)->writable);
}

static PyObject *df_seekable(PyObject *self, PyObject *Py_UNUSED(a))
{
    return live(F(self)) < 0 ? NULL : Py_NewRef(Py_True);
}

static PyObject *df_isatty(PyObject *self, PyObject *Py_UNUSED(a))
{
    return live(F(self)) < 0 ? NULL : Py_NewRef(Py_False);
}

static PyObject *df_fileno(PyObject *self, PyObject *Py_UNUSED(a))
{
    return live(F(self)) < 0 ? NULL : PyLong_FromLongLong(F(self)->fd);
}

/* One read(2) at the handle's offset into buf: >= 0, or -1 with an
 * exception set. */
static Py_ssize_t read_some(diskfile_fields *f, void *buf, size_t len)
{
    if (live(f) < 0)
        return -1;
    const int64_t got = askew_disk_read(f->disk->disk, f->handle, buf, len);
    if (settle(f->disk) < 0 || (got < 0 && fail(f->nd, got, "read") == NULL))
        return -1;
    return (Py_ssize_t)got;
}

static PyObject *df_readinto(PyObject *self, PyObject *b)
{
    diskfile_fields *f = F(self);
    if (!f->readable)
        return unsupported("read");
    Py_buffer view;
    if (PyObject_GetBuffer(b, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    const Py_ssize_t got = read_some(f, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return got < 0 ? NULL : PyLong_FromSsize_t(got);
}

static PyObject *df_readall(PyObject *self, PyObject *Py_UNUSED(a))
{
    enum { CHUNK = 1 << 16 };
    diskfile_fields *f = F(self);
    if (!f->readable)
        return unsupported("read");
    PyObject *out = PyBytes_FromStringAndSize(NULL, CHUNK);
    Py_ssize_t total = 0;
    while (out != NULL) {
        if (PyBytes_GET_SIZE(out) < total + CHUNK &&
            _PyBytes_Resize(&out, total + CHUNK) < 0)
            return NULL;
        const Py_ssize_t got = read_some(f, PyBytes_AS_STRING(out) + total, CHUNK);
        if (got < 0)
            Py_CLEAR(out);
        else if (got == 0)
            break;
        total += got;
    }
    if (out != NULL && _PyBytes_Resize(&out, total) < 0)
        return NULL;
    return out;
}

static PyObject *df_write(PyObject *self, PyObject *b)
{
    diskfile_fields *f = F(self);
    if (!f->writable)
        return unsupported("write");
    if (live(f) < 0)
        return NULL;
    Py_buffer data;
    if (PyObject_GetBuffer(b, &data, PyBUF_SIMPLE) < 0)
        return NULL;
    const int64_t put =
        askew_disk_write(f->disk->disk, f->handle, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    if (settle(f->disk) < 0)
        return NULL;
    return put < 0 ? fail(f->nd, put, "write") : PyLong_FromLongLong(put);
}

/* lseek(2) on the handle: the new offset, or -1 with an exception set. */
static int64_t seek_to(diskfile_fields *f, long long pos, long whence)
{
    if (live(f) < 0)
        return -1;
    const int64_t at = askew_disk_lseek(f->disk->disk, f->handle, pos, (int)whence);
    if (settle(f->disk) < 0 || (at < 0 && fail(f->nd, at, "lseek") == NULL))
        return -1;
    return at;
}

static PyObject *df_seek(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    if (n < 1 || n > 2)
        return PyErr_Format(PyExc_TypeError,
                            "seek(pos, whence=0) takes 1 or 2 arguments");
    if (live(F(self)) < 0)
        return NULL;
    const long long pos = PyLong_AsLongLong(args[0]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    const long whence = n > 1 ? PyLong_AsLong(args[1]) : SEEK_SET;
    if (whence == -1 && PyErr_Occurred())
        return NULL;
    if (whence < INT_MIN || whence > INT_MAX)
        return PyErr_Format(PyExc_OverflowError, "whence %ld is out of range", whence);
    const int64_t at = seek_to(F(self), pos, whence);
    return at < 0 ? NULL : PyLong_FromLongLong(at);
}

static PyObject *df_tell(PyObject *self, PyObject *Py_UNUSED(a))
{
    const int64_t at = seek_to(F(self), 0, SEEK_CUR);
    return at < 0 ? NULL : PyLong_FromLongLong(at);
}

static PyObject *df_truncate(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    diskfile_fields *f = F(self);
    if (n > 1)
        return PyErr_Format(PyExc_TypeError,
                            "truncate(size=None) takes 0 or 1 arguments");
    if (!f->writable)
        return unsupported("truncate");
    long long size;
    if (n == 0 || args[0] == Py_None) {
        size = seek_to(f, 0, SEEK_CUR);
        if (size < 0)
            return NULL;
    } else {
        size = PyLong_AsLongLong(args[0]);
        if (size == -1 && PyErr_Occurred())
            return NULL;
    }
    if (live(f) < 0)
        return NULL;
    const int rc = askew_disk_ftruncate(f->disk->disk, f->handle, size);
    if (settle(f->disk) < 0 || (rc < 0 && fail(f->nd, rc, "ftruncate") == NULL))
        return NULL;
    return PyLong_FromLongLong(size);
}

/* As FileIO: the base's close (flush, then closed), then the handle, unless
 * closefd is false, the node crashed since (the crash closed it) or the run
 * is over. An error of the handle's close wins over the base's. */
static PyObject *df_close(PyObject *self, PyObject *Py_UNUSED(a))
{
    diskfile_fields *f = F(self);
    if (f->closed)
        Py_RETURN_NONE;
    int live_run = route.world != NULL && f->disk->crashes == f->crashes;
    if (live_run) { /* the base's close cannot end the run: look first */
        PyObject *ended = PyObject_GetAttr(route.world, route.s_ended);
        live_run = ended == NULL ? -1 : !PyObject_IsTrue(ended);
        Py_XDECREF(ended);
        if (live_run < 0)
            return NULL;
    }
    PyObject *res = PyObject_CallOneArg(route.base_close, self);
    f->closed = 1;
    if (f->closefd && live_run) {
        const int rc = askew_disk_close(f->disk->disk, f->handle);
        if (settle(f->disk) < 0 || (rc < 0 && raise_errno(rc, NULL) == NULL)) {
            Py_XDECREF(res);
            return NULL;
        }
    }
    return res;
}

static PyObject *df_get_closed(PyObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(F(self)->closed);
}

static PyMethodDef diskfile_methods[] = {
    {"readable", df_readable, METH_NOARGS, NULL},
    {"writable", df_writable, METH_NOARGS, NULL},
    {"seekable", df_seekable, METH_NOARGS, NULL},
    {"isatty", df_isatty, METH_NOARGS, NULL},
    {"fileno", df_fileno, METH_NOARGS, NULL},
    {"readinto", df_readinto, METH_O, NULL},
    {"readall", df_readall, METH_NOARGS, NULL},
    {"write", df_write, METH_O, NULL},
    {"seek", (PyCFunction)(void (*)(void))df_seek, METH_FASTCALL, NULL},
    {"tell", df_tell, METH_NOARGS, NULL},
    {"truncate", (PyCFunction)(void (*)(void))df_truncate, METH_FASTCALL, NULL},
    {"close", df_close, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *df_get_closefd(PyObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(F(self)->closefd);
}

static PyGetSetDef diskfile_getset[] = {
    {"closed", df_get_closed, NULL, NULL, NULL},
    {"closefd", df_get_closefd, NULL, "whether close() closes the handle, as FileIO's",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot diskfile_slots[] = {
    {Py_tp_new, df_new},
    {Py_tp_dealloc, df_dealloc},
    {Py_tp_traverse, df_traverse},
    {Py_tp_clear, df_clear},
    {Py_tp_repr, df_repr},
    {Py_tp_methods, diskfile_methods},
    {Py_tp_getset, diskfile_getset},
    {Py_tp_doc, "DiskFile(nd, disk, handle, fd, readable, writable, closefd): the raw "
                "file of a simulated file, as FileIO (askew/_disk.py makes them)."},
    {0, NULL},
};

static PyType_Spec diskfile_spec = {
    .name = "askew._core.DiskFile",
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = diskfile_slots,
};

static PyMethodDef route_functions[] = {
    {"disk_route_init", m_route_init, METH_VARARGS,
     "disk_route_init(node_var, on_eio, reals): once; reals maps fsync, fdatasync, "
     "read, pread, write, pwrite, lseek to the real os functions"},
    {"disk_route_begin", m_route_begin, METH_VARARGS,
     "disk_route_begin(world, disks): the run whose descriptors decode"},
    {"disk_route_end", m_route_end, METH_O, "disk_route_end(world): that run is over"},
    {"disk_fd_route", m_fd_route, METH_O,
     "disk_fd_route(fd) -> (node_disk, handle), or None for a real descriptor; "
     "OSError(EBADF) for a simulated one outside its node's code"},
    {"disk_fsync", m_fsync, METH_O, "os.fsync, patched"},
    {"disk_fdatasync", m_fdatasync, METH_O, "os.fdatasync, patched"},
    {"disk_read", (PyCFunction)(void (*)(void))m_read, METH_FASTCALL,
     "os.read, patched"},
    {"disk_pread", (PyCFunction)(void (*)(void))m_pread, METH_FASTCALL,
     "os.pread, patched"},
    {"disk_write", (PyCFunction)(void (*)(void))m_write, METH_FASTCALL,
     "os.write, patched"},
    {"disk_pwrite", (PyCFunction)(void (*)(void))m_pwrite, METH_FASTCALL,
     "os.pwrite, patched"},
    {"disk_lseek", (PyCFunction)(void (*)(void))m_lseek, METH_FASTCALL,
     "os.lseek, patched"},
    {NULL, NULL, 0, NULL},
};

static int diskfile_setup(PyObject *module)
{
    PyObject *io = PyImport_ImportModule("_io");
    if (io == NULL)
        return -1;
    PyObject *base = PyObject_GetAttrString(io, "_RawIOBase");
    Py_XSETREF(route.unsupported, PyObject_GetAttrString(io, "UnsupportedOperation"));
    Py_DECREF(io);
    if (base == NULL || route.unsupported == NULL || !PyType_Check(base)) {
        Py_XDECREF(base);
        return -1;
    }
    Py_XSETREF(route.base_close, PyObject_GetAttrString(base, "close"));
    Py_XSETREF(diskfile_base, (PyTypeObject *)base);
    if (route.base_close == NULL)
        return -1;
    diskfile_offset = diskfile_base->tp_basicsize;
    diskfile_spec.basicsize = (int)(diskfile_offset + sizeof(diskfile_fields));
    PyObject *type = PyType_FromModuleAndSpec(module, &diskfile_spec, base);
    if (type == NULL)
        return -1;
    const int rc = PyModule_AddObjectRef(module, "DiskFile", type);
    Py_DECREF(type);
    if (rc < 0)
        return -1;
#define INTERN(field, text)                                                            \
    if (route.field == NULL &&                                                         \
        (route.field = PyUnicode_InternFromString(text)) == NULL)                      \
        return -1;
    INTERN(s_ended, "_ended")
    INTERN(s_disk, "disk")
    INTERN(s_fileno, "fileno")
    INTERN(s_name, "name")
    INTERN(s_mode, "mode")
#undef INTERN
    return PyModule_AddFunctions(module, route_functions);
}

int askew__disk_setup(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &disk_spec, NULL);
    if (type == NULL)
        return -1;
    route.disk_type = (PyTypeObject *)type; /* borrowed: the module keeps it */
    const int rc = PyModule_AddObjectRef(module, "Disk", type);
    Py_DECREF(type);
    if (rc < 0 || diskfile_setup(module) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_DISK", ASKEW_STREAM_DISK) < 0 ||
        PyModule_AddIntConstant(module, "DISK_SECTOR", ASKEW_DISK_SECTOR) < 0 ||
        PyModule_AddIntConstant(module, "DISK_CAPACITY_DEFAULT",
                                (long)ASKEW_DISK_CAPACITY_DEFAULT) < 0 ||
        PyModule_AddIntConstant(module, "DISK_HANDLES_MAX", ASKEW_DISK_HANDLES_MAX) < 0)
        return -1;
    return 0;
}
