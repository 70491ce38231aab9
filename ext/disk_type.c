/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Disk: one node's simulated disk (ext/engine/disk.h) as a
 * Python type, made by askew/_disk/ for a node spawned with a mount. Each
 * method is one engine call; -errno becomes OSError with that errno (so
 * FileNotFoundError and the rest), and the latency a disk fault drew is
 * charged to the calling node's clock at once, as a blocking time.sleep
 * would be. It keeps its loop alive: the engine borrows the loop's
 * scheduler for the clock and the trace. The lowest of the disk's binding
 * units: the descriptors (disk_route.c) and DiskFile (disk_file.c) build on
 * its object, its errors and its by-handle calls. */
#include <errno.h>

#include "disk.h"
#include "disk_type.h"
#include "errors.h"
#include "loop.h"

/* Borrowed: the module keeps it. Process-wide, as the descriptor table that
 * checks against it (disk_route.c). */
PyTypeObject *askew__disk_type;

PyObject *askew__disk_raise_errno(int64_t rc, PyObject *path)
{
    errno = (int)-rc;
    if (path != NULL)
        return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
    return PyErr_SetFromErrno(PyExc_OSError);
}

int askew__disk_settle(askew_disk_object *self)
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
    if (askew__disk_settle(self) < 0)
        return NULL;
    if (rc < 0)
        return askew__disk_raise_errno(rc, path);
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
    return Py_BuildValue("(KKKIIiLK)", (unsigned long long)st->ino,
                         (unsigned long long)st->size, (unsigned long long)st->blocks,
                         st->mode, st->nlink, st->is_dir, (long long)st->mtime_ns,
                         (unsigned long long)st->dev);
}

static PyObject *d_stat(askew_disk_object *self, PyObject *args)
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:stat", PyUnicode_FSConverter, &path))
        return NULL;
    struct askew_disk_stat st;
    const int rc = askew_disk_stat(self->disk, PyBytes_AS_STRING(path), &st);
    PyObject *out = askew__disk_settle(self) < 0 ? NULL
                    : rc < 0                     ? askew__disk_raise_errno(rc, path)
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

/* locate(mount, path) -> (1, the path's part on the disk), (0, None) when it
 * is not on it, (2, the real path it names) when it left the disk by ".."
 * again; OSError for a component on the disk it cannot pass. */
static PyObject *d_locate(askew_disk_object *self, PyObject *args)
{
    PyObject *mount, *path;
    if (!PyArg_ParseTuple(args, "O&O&:locate", PyUnicode_FSConverter, &mount,
                          PyUnicode_FSConverter, &path))
        return NULL;
    const char *rel = NULL;
    char real[ASKEW_DISK_PATH_MAX];
    const int rc = askew_disk_locate(self->disk, PyBytes_AS_STRING(mount),
                                     PyBytes_AS_STRING(path), &rel, real, sizeof(real));
    PyObject *out = rc < 0    ? askew__disk_raise_errno(rc, path)
                    : rc == 0 ? Py_BuildValue("(iO)", 0, Py_None)
                              : Py_BuildValue("(iO&)", rc, PyUnicode_DecodeFSDefault,
                                              rc == 1 ? rel : real);
    Py_DECREF(mount);
    Py_DECREF(path);
    return out;
}

/* handle_path(fh) -> the directory's current path on the disk ("/a/b"). */
static PyObject *d_handle_path(askew_disk_object *self, PyObject *fh_obj)
{
    int fh;
    if (handle_of(fh_obj, &fh) < 0)
        return NULL;
    char out[ASKEW_DISK_PATH_MAX];
    const int rc = askew_disk_handle_path(self->disk, fh, out, sizeof(out));
    if (rc < 0)
        return askew__disk_raise_errno(rc, NULL);
    return PyUnicode_DecodeFSDefault(out);
}

/* setattr(path, fh, mode, mtime_ns): chmod and utime, by path (a str or
 * bytes) or, with path None, by handle; mode and mtime_ns None leave them. */
static PyObject *d_setattr(askew_disk_object *self, PyObject *args)
{
    PyObject *path_obj, *fh_obj, *mode_obj, *mtime_obj, *path = NULL;
    if (!PyArg_ParseTuple(args, "OOOO:setattr", &path_obj, &fh_obj, &mode_obj,
                          &mtime_obj))
        return NULL;
    struct askew_disk_attr attr = {.set_mode = mode_obj != Py_None,
                                   .set_mtime = mtime_obj != Py_None};
    int fh = -1;
    if ((path_obj != Py_None && !PyUnicode_FSConverter(path_obj, &path)) ||
        (path_obj == Py_None && handle_of(fh_obj, &fh) < 0))
        return NULL;
    if (attr.set_mode)
        attr.mode = (uint32_t)PyLong_AsUnsignedLongMask(mode_obj);
    if (attr.set_mtime)
        attr.mtime_ns = PyLong_AsLongLong(mtime_obj);
    PyObject *out = NULL;
    if (!PyErr_Occurred())
        out = result(self,
                     askew_disk_setattr(
                         self->disk, path ? PyBytes_AS_STRING(path) : NULL, fh, &attr),
                     path);
    Py_XDECREF(path);
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
    if (out && (askew__disk_settle(self) < 0 || rc == -1 ||
                (rc < 0 && !askew__disk_raise_errno(rc, path))))
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

PyObject *askew__disk_pread_call(askew_disk_object *self, PyObject *args, int64_t *rc)
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
    if (askew__disk_settle(self) < 0 || got < 0) {
        Py_DECREF(buf);
        *rc = got;
        return NULL;
    }
    if (got != n && _PyBytes_Resize(&buf, (Py_ssize_t)got) < 0)
        return NULL;
    return buf;
}

/* A count or an offset, or NULL and *rc (see askew_disk_handle_call). */
static PyObject *count(askew_disk_object *self, int64_t got, int64_t *rc)
{
    if (askew__disk_settle(self) < 0)
        return NULL;
    *rc = got;
    return got < 0 ? NULL : PyLong_FromLongLong(got);
}

PyObject *askew__disk_pwrite_call(askew_disk_object *self, PyObject *args, int64_t *rc)
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

PyObject *askew__disk_lseek_call(askew_disk_object *self, PyObject *args, int64_t *rc)
{
    int fh, whence;
    long long off;
    if (!PyArg_ParseTuple(args, "iLi:lseek", &fh, &off, &whence))
        return NULL;
    return count(self, askew_disk_lseek(self->disk, fh, off, whence), rc);
}

/* A handle call as a Disk method: the engine's error raised as is. */
static PyObject *raising(askew_disk_handle_call call, askew_disk_object *self,
                         PyObject *args)
{
    int64_t rc = 0;
    PyObject *out = call(self, args, &rc);
    return out == NULL && !PyErr_Occurred() ? askew__disk_raise_errno(rc, NULL) : out;
}

static PyObject *d_pread(askew_disk_object *self, PyObject *args)
{
    return raising(askew__disk_pread_call, self, args);
}

static PyObject *d_pwrite(askew_disk_object *self, PyObject *args)
{
    return raising(askew__disk_pwrite_call, self, args);
}

static PyObject *d_lseek(askew_disk_object *self, PyObject *args)
{
    return raising(askew__disk_lseek_call, self, args);
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
    if (askew__disk_settle(self) < 0)
        return NULL;
    return rc < 0 ? askew__disk_raise_errno(rc, NULL) : stat_tuple(&st);
}

static PyObject *d_flags(askew_disk_object *self, PyObject *fh)
{
    int h;
    if (handle_of(fh, &h) < 0)
        return NULL;
    const int rc = askew_disk_flags(self->disk, h);
    return rc < 0 ? askew__disk_raise_errno(rc, NULL) : PyLong_FromLong(rc);
}

/* ---- the crash, faults, usage ------------------------------------------------ */

static PyObject *d_crash(askew_disk_object *self, PyObject *Py_UNUSED(a))
{
    struct askew_disk_crash_result r;
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

/* One path of dirops() or None (its directory was removed since). */
static PyObject *dirop_path(int rc, const char *path)
{
    if (rc < 0 || path[0] == '\0')
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(path);
}

/* dirops() -> [(kind, is_dir, dir_synced, path, path2)]: the unsynced
 * directory operations, oldest first (what a crash keeps a prefix of). */
static PyObject *d_dirops(askew_disk_object *self, PyObject *Py_UNUSED(a))
{
    const size_t n = askew_disk_dirops(self->disk);
    PyObject *list = PyList_New((Py_ssize_t)n); // new reference
    if (list == NULL)
        return NULL;
    char path[ASKEW_DISK_PATH_MAX], path2[ASKEW_DISK_PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        struct askew_disk_dirop op;
        const int rc =
            askew_disk_dirop_get(self->disk, i, &op, path, path2, sizeof(path));
        PyObject *one = dirop_path(rc, path);
        PyObject *two = one == NULL ? NULL : dirop_path(rc, path2);
        PyObject *item =
            two == NULL
                ? NULL
                : Py_BuildValue("(iOOOO)", op.kind, op.is_dir ? Py_True : Py_False,
                                op.dir_synced ? Py_True : Py_False, one, two);
        Py_XDECREF(one);
        Py_XDECREF(two);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item); // steals item
    }
    return list;
}

static PyObject *d_set_faults(askew_disk_object *self, PyObject *args)
{
    struct askew_disk_faults f = {0};
    PyObject *capacity_obj;
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "IIIILLO:set_faults", &f.eio_read_ppm, &f.eio_write_ppm,
                          &f.eio_fsync_ppm, &f.bitrot_ppm, &lo, &hi, &capacity_obj))
        return NULL;
    /* Checked, never masked: 2**64 + 5 is not a 5-byte disk. */
    const unsigned long long capacity = PyLong_AsUnsignedLongLong(capacity_obj);
    if (capacity == (unsigned long long)-1 && PyErr_Occurred())
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
     "stat(path) -> (ino, size, blocks, mode, nlink, is_dir, mtime_ns, dev)"},
    {"rename", (PyCFunction)d_rename, METH_VARARGS, NULL},
    {"unlink", (PyCFunction)d_unlink, METH_VARARGS, NULL},
    {"rmdir", (PyCFunction)d_rmdir, METH_VARARGS, NULL},
    {"mkdir", (PyCFunction)d_mkdir, METH_VARARGS, NULL},
    {"truncate", (PyCFunction)d_truncate, METH_VARARGS, NULL},
    {"locate", (PyCFunction)d_locate, METH_VARARGS,
     "locate(mount, path) -> (1, its part on this disk mounted there), (0, None), or "
     "(2, the real path it names after leaving the disk)"},
    {"handle_path", (PyCFunction)d_handle_path, METH_O,
     "handle_path(fh) -> the open directory's current path on the disk"},
    {"setattr", (PyCFunction)d_setattr, METH_VARARGS,
     "setattr(path, fh, mode, mtime_ns): chmod/utime by path, or by handle when path "
     "is "
     "None; None leaves a field"},
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
    {"dirops", (PyCFunction)d_dirops, METH_NOARGS,
     "dirops() -> [(kind, is_dir, dir_synced, path, path2)], the unsynced directory "
     "operations, oldest first"},
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
    return PyLong_FromUnsignedLongLong(askew_disk_crashes(self->disk));
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

int askew__disk_setup(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &disk_spec, NULL);
    if (type == NULL)
        return -1;
    askew__disk_type = (PyTypeObject *)type; /* borrowed: the module keeps it */
    const int rc = PyModule_AddObjectRef(module, "Disk", type);
    Py_DECREF(type);
    if (rc < 0 ||
        PyModule_AddIntConstant(module, "STREAM_DISK", ASKEW_STREAM_DISK) < 0 ||
        PyModule_AddIntConstant(module, "DISK_SECTOR", ASKEW_DISK_SECTOR) < 0 ||
        PyModule_AddIntConstant(module, "DISK_CAPACITY_DEFAULT",
                                (long)ASKEW_DISK_CAPACITY_DEFAULT) < 0 ||
        PyModule_AddIntConstant(module, "DISK_HANDLES_MAX", ASKEW_DISK_HANDLES_MAX) <
            0 ||
        PyModule_AddIntConstant(module, "DISK_FILES_MAX", ASKEW_DISK_FILES_MAX) < 0)
        return -1;
    return 0;
}
