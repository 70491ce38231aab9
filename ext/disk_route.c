/* SPDX-License-Identifier: Apache-2.0 */
/* Descriptors of simulated files: fd -> (node's disk, handle), and the
 * patched os.fsync, os.fdatasync, os.read, os.pread, os.write, os.pwrite and
 * os.lseek that send a simulated descriptor to its disk and any other to
 * the real call. Never touches a real descriptor itself. Python's side of
 * the disks (askew/_disk/) calls it; DiskFile (disk_file.c) shares its
 * error path and asks it whether the run is still live. */
#include <errno.h>

#include "askew_preload.h"
#include "disk.h"
#include "disk_route.h"
#include "disk_type.h"
#include "node.h"

/* A simulated descriptor is ASKEW_DISK_FD_BASE + (node <<
 * ASKEW_DISK_FD_NODE_SHIFT) + handle, decoded by askew_disk_fd_decode
 * (askew_preload.h, shared with ext/preload_disk.c; askew/_disk/ makes
 * them); it is valid only in its own node's code, while its world runs. The
 * patched os.* functions and askew/_disk/ find its disk here. The state is
 * the interpreter's one run at a time: the node context variable, set once,
 * and the world, set by disk_route_begin. */

static struct {
    PyObject *node_var; /* the running node's token (askew/_world/) */
    PyObject *on_eio;   /* _disk._eio(nd, what): logs an injected EIO */
    PyObject *real[7];  /* the real os functions, by enum os_call */
    PyObject *s_ended, *s_disk, *s_fileno;
    PyObject *world; /* the running world, NULL outside a run */
    PyObject *disks; /* world._disks: node id -> NodeDisk */
} route;

PyObject *askew__disk_fail(PyObject *nd, int64_t rc, const char *what)
{
    if (rc == -EIO && route.on_eio != NULL) {
        PyObject *r = PyObject_CallFunction(route.on_eio, "Os", nd, what);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    return askew__disk_raise_errno(rc, NULL);
}

int askew__disk_route_live(void)
{
    if (route.world == NULL)
        return 0;
    PyObject *ended = PyObject_GetAttr(route.world, route.s_ended);
    const int live = ended == NULL ? -1 : !PyObject_IsTrue(ended);
    Py_XDECREF(ended);
    return live;
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
        askew__disk_raise_errno(-EBADF, NULL);
        return -1;
    }
    PyObject *d = PyObject_GetAttr(*nd, route.s_disk);
    if (d == NULL || !PyObject_TypeCheck(d, askew__disk_type)) {
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
    PyObject *out = askew__disk_settle(disk) < 0 ? NULL
                    : rc < 0                     ? askew__disk_fail(nd, rc, "fsync")
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
static PyObject *by_fd(enum os_call op, askew_disk_handle_call call,
                       PyObject *const *args, Py_ssize_t n)
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
            askew__disk_fail(nd, rc, os_names[op]);
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
BY_FD(m_read, OS_READ, askew__disk_pread_call)
BY_FD(m_pread, OS_PREAD, askew__disk_pread_call)
BY_FD(m_write, OS_WRITE, askew__disk_pwrite_call)
BY_FD(m_pwrite, OS_PWRITE, askew__disk_pwrite_call)
BY_FD(m_lseek, OS_LSEEK, askew__disk_lseek_call)
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

int askew__disk_route_setup(PyObject *module)
{
#define INTERN(field, text)                                                            \
    if (route.field == NULL &&                                                         \
        (route.field = PyUnicode_InternFromString(text)) == NULL)                      \
        return -1;
    INTERN(s_ended, "_ended")
    INTERN(s_disk, "disk")
    INTERN(s_fileno, "fileno")
#undef INTERN
    return PyModule_AddFunctions(module, route_functions);
}
