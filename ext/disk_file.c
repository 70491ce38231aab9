/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.DiskFile: the raw file of a simulated file, what open()
 * returns for a path on a node's disk (askew/_disk/ makes them). Every
 * call is one call of its Disk's engine handle, settled and raised as the
 * Disk's own calls are (disk_type.c); an injected EIO is logged as a call
 * by descriptor's is (disk_route.c). It never outlives its incarnation: a
 * crash since it was opened makes it EBADF. */
#include <errno.h>
#include <limits.h>

#include "disk.h"
#include "disk_file.h"
#include "disk_route.h"
#include "disk_type.h"

/* What FileIO is for a real descriptor, over an engine handle: a subclass of
 * _io._RawIOBase (registered with io.RawIOBase by askew/_disk/), so open()
 * wraps it in the C buffered and text objects and a write crosses no Python
 * frame. Its fields follow the base's layout, whose size is known only at
 * run time. name and mode live in the instance dict, as FileIO's name. */
typedef struct {
    PyObject *nd;            /* the NodeDisk, for the EIO log */
    askew_disk_object *disk; /* strong */
    long long fd;
    uint64_t crashes; /* the disk's crashes at open: a crash since makes it EBADF */
    int handle;
    char readable, writable, closefd, closed;
} diskfile_fields;

/* Process-wide facts of _io (the base's layout), so static, as Task's
 * offset is; the strings are interned once. */
static Py_ssize_t diskfile_offset;  /* the base's basicsize */
static PyTypeObject *diskfile_base; /* strong */
static PyObject *unsupported_error; /* io.UnsupportedOperation */
static PyObject *base_close;        /* _io._RawIOBase.close */
static PyObject *s_name, *s_mode;

static diskfile_fields *F(PyObject *self)
{
    return (diskfile_fields *)((char *)self + diskfile_offset);
}

/* Every call but close: the file must be open and of this incarnation. */
static int live(diskfile_fields *f)
{
    if (askew_disk_crashes(f->disk->disk) != f->crashes) {
        askew__disk_raise_errno(-EBADF, NULL);
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
    PyErr_SetString(unsupported_error, what);
    return NULL;
}

static PyObject *df_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *nd, *disk;
    int handle, readable, writable, closefd;
    long long fd;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)
        return PyErr_Format(PyExc_TypeError, "DiskFile takes no keyword arguments");
    if (!PyArg_ParseTuple(args, "OO!iLppp:DiskFile", &nd, askew__disk_type, &disk,
                          &handle, &fd, &readable, &writable, &closefd))
        return NULL;
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    diskfile_fields *f = F(self);
    f->nd = Py_NewRef(nd);
    f->disk = (askew_disk_object *)Py_NewRef(disk);
    f->fd = fd;
    f->crashes = askew_disk_crashes(f->disk->disk);
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
    if (PyObject_GetOptionalAttr(self, s_name, &name) < 0 ||
        PyObject_GetOptionalAttr(self, s_mode, &mode) < 0) {
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
    if (askew__disk_settle(f->disk) < 0 ||
        (got < 0 && askew__disk_fail(f->nd, got, "read") == NULL))
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
    if (askew__disk_settle(f->disk) < 0)
        return NULL;
    return put < 0 ? askew__disk_fail(f->nd, put, "write") : PyLong_FromLongLong(put);
}

/* lseek(2) on the handle: the new offset, or -1 with an exception set. */
static int64_t seek_to(diskfile_fields *f, long long pos, long whence)
{
    if (live(f) < 0)
        return -1;
    const int64_t at = askew_disk_lseek(f->disk->disk, f->handle, pos, (int)whence);
    if (askew__disk_settle(f->disk) < 0 ||
        (at < 0 && askew__disk_fail(f->nd, at, "lseek") == NULL))
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
    if (askew__disk_settle(f->disk) < 0 ||
        (rc < 0 && askew__disk_fail(f->nd, rc, "ftruncate") == NULL))
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
    /* The base's close cannot end the run: look first. */
    const int live_run =
        askew_disk_crashes(f->disk->disk) == f->crashes ? askew__disk_route_live() : 0;
    if (live_run < 0)
        return NULL;
    PyObject *res = PyObject_CallOneArg(base_close, self);
    f->closed = 1;
    if (f->closefd && live_run) {
        const int rc = askew_disk_close(f->disk->disk, f->handle);
        if (askew__disk_settle(f->disk) < 0 ||
            (rc < 0 && askew__disk_raise_errno(rc, NULL) == NULL)) {
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
                "file of a simulated file, as FileIO (askew/_disk/ makes them)."},
    {0, NULL},
};

static PyType_Spec diskfile_spec = {
    .name = "askew._core.DiskFile",
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = diskfile_slots,
};

int askew__disk_file_setup(PyObject *module)
{
    PyObject *io = PyImport_ImportModule("_io");
    if (io == NULL)
        return -1;
    PyObject *base = PyObject_GetAttrString(io, "_RawIOBase");
    Py_XSETREF(unsupported_error, PyObject_GetAttrString(io, "UnsupportedOperation"));
    Py_DECREF(io);
    if (base == NULL || unsupported_error == NULL || !PyType_Check(base)) {
        Py_XDECREF(base);
        return -1;
    }
    Py_XSETREF(base_close, PyObject_GetAttrString(base, "close"));
    Py_XSETREF(diskfile_base, (PyTypeObject *)base);
    if (base_close == NULL)
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
#define INTERN(var, text)                                                              \
    if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL)               \
        return -1;
    INTERN(s_name, "name")
    INTERN(s_mode, "mode")
#undef INTERN
    return 0;
}
