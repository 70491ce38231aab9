/* SPDX-License-Identifier: Apache-2.0 */
/* _askew_probe: a tiny test extension, built by tests/test_preload.py, that
 * calls each interposed libc function directly (as a third-party C
 * extension would) and can play askew._core's part with fixed test hooks
 * (a frozen clock, counter bytes), so the preload is tested from Python
 * without the loop. Test code only; never shipped. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "askew_preload.h"

uint32_t arc4random(void);

static const struct askew_preload_api *api;
static int64_t fixed_wall_ns, fixed_mono_ns;
static unsigned char next_byte;
static unsigned long draws;

static int probe_now(void *ctx, int realtime, struct timespec *out)
{
    (void)ctx;
    /* CPU time reads as the monotonic clock here: a fixed value either way. */
    int64_t ns = realtime == ASKEW_CLOCK_REALTIME ? fixed_wall_ns : fixed_mono_ns;
    out->tv_sec = (time_t)(ns / 1000000000);
    out->tv_nsec = (long)(ns % 1000000000);
    return 0;
}

static int probe_random(void *ctx, void *buf, size_t len)
{
    (void)ctx;
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = next_byte++;
    draws++;
    return 0;
}

static int find_api(void)
{
    if (api != NULL)
        return 0;
    askew_preload_get_api_fn get =
        (askew_preload_get_api_fn)dlsym(RTLD_DEFAULT, ASKEW_PRELOAD_GET_API);
    api = get != NULL ? get(ASKEW_PRELOAD_ABI_MAJOR) : NULL;
    if (api == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the preload is not loaded");
        return -1;
    }
    return 0;
}

/* The interpreter's code, as askew._core marks it (its GIL waits stay
 * real-time): the executable segments of the object holding the eval loop. */
static int interp_of(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct askew_code_range *r = data;
    Dl_info self;
    if (dladdr((void *)&PyEval_SaveThread, &self) == 0 ||
        (uintptr_t)info->dlpi_addr != (uintptr_t)self.dli_fbase)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (r->hi == 0 || lo < r->lo)
            r->lo = lo;
        if (hi > r->hi)
            r->hi = hi;
    }
    return 1;
}

static PyObject *probe_enter(PyObject *self, PyObject *args)
{
    (void)self;
    long long wall, mono;
    if (!PyArg_ParseTuple(args, "LL", &wall, &mono) || find_api() < 0)
        return NULL;
    static struct askew_preload_hooks hooks = {
        .size = sizeof(struct askew_preload_hooks),
        .now = probe_now,
        .random = probe_random,
    };
    if (hooks.interp[0].hi == 0)
        dl_iterate_phdr(interp_of, &hooks.interp[0]);
    fixed_wall_ns = wall;
    fixed_mono_ns = mono;
    next_byte = 0;
    draws = 0;
    int rc = api->enter(&hooks);
    if (rc < 0)
        return PyErr_Format(PyExc_OSError, "enter failed: %d", rc);
    Py_RETURN_NONE;
}

static PyObject *probe_leave(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (api != NULL)
        api->leave();
    Py_RETURN_NONE;
}

/* The names of the refused calls since enter, oldest first (ring-limited). */
static PyObject *probe_violations(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (find_api() < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    uint64_t n = api->violations();
    for (uint64_t i = n > ASKEW_VIOLATION_RING ? n - ASKEW_VIOLATION_RING : 0; i < n;
         i++) {
        struct askew_violation v;
        if (api->violation_get(i, &v) != 0)
            continue;
        PyObject *s = PyUnicode_FromString(v.call);
        if (s == NULL || PyList_Append(out, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(s);
    }
    return out;
}

static PyObject *probe_draws(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyLong_FromUnsignedLong(draws);
}

static PyObject *probe_clock_gettime(PyObject *self, PyObject *args)
{
    (void)self;
    int clk;
    struct timespec ts;
    if (!PyArg_ParseTuple(args, "i", &clk))
        return NULL;
    if (clock_gettime((clockid_t)clk, &ts) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLongLong((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

static PyObject *probe_time(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyLong_FromLongLong((long long)time(NULL));
}

static PyObject *probe_gettimeofday(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return PyLong_FromLongLong((long long)tv.tv_sec * 1000000LL + tv.tv_usec);
}

static PyObject *probe_getrandom(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n;
    unsigned int flags = 0;
    if (!PyArg_ParseTuple(args, "n|I", &n, &flags))
        return NULL;
    PyObject *b = PyBytes_FromStringAndSize(NULL, n);
    if (b == NULL)
        return NULL;
    if (getrandom(PyBytes_AS_STRING(b), (size_t)n, flags) != n) {
        Py_DECREF(b);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return b;
}

static PyObject *probe_getentropy(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    unsigned char buf[512];
    if (n < 0 || n > (Py_ssize_t)sizeof(buf))
        return PyErr_Format(PyExc_ValueError, "n out of range");
    if (getentropy(buf, (size_t)n) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyBytes_FromStringAndSize((const char *)buf, n);
}

static PyObject *probe_arc4random(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyLong_FromUnsignedLong(arc4random());
}

static void *nothing(void *arg)
{
    return arg;
}

/* Each returns 0 on success or the errno (error number) of the refusal. */
static PyObject *probe_pthread_create(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    pthread_t t;
    int rc = pthread_create(&t, NULL, nothing, NULL);
    if (rc == 0)
        pthread_join(t, NULL);
    return PyLong_FromLong(rc);
}

static PyObject *probe_fork(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    if (pid < 0)
        return PyLong_FromLong(errno);
    int status;
    waitpid(pid, &status, 0);
    return PyLong_FromLong(0);
}

static PyObject *probe_socket(PyObject *self, PyObject *args)
{
    (void)self;
    int family;
    if (!PyArg_ParseTuple(args, "i", &family))
        return NULL;
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0)
        return PyLong_FromLong(errno);
    close(fd);
    return PyLong_FromLong(0);
}

static PyObject *probe_nanosleep(PyObject *self, PyObject *args)
{
    (void)self;
    long sec;
    if (!PyArg_ParseTuple(args, "l", &sec))
        return NULL;
    struct timespec ts = {sec, 0};
    return PyLong_FromLong(nanosleep(&ts, NULL) == 0 ? 0 : errno);
}

/* As nanosleep, with the GIL released around the call, as CPython itself
 * does for blocking calls: the preload's on_violation hook then runs
 * without the GIL. */
static PyObject *probe_nanosleep_nogil(PyObject *self, PyObject *args)
{
    (void)self;
    long sec;
    int rc;
    if (!PyArg_ParseTuple(args, "l", &sec))
        return NULL;
    struct timespec ts = {sec, 0};
    PyThreadState *save = PyEval_SaveThread();
    rc = nanosleep(&ts, NULL) == 0 ? 0 : errno;
    PyEval_RestoreThread(save);
    return PyLong_FromLong(rc);
}

/* pthread_create with the GIL released: a refusal whose on_violation hook
 * runs without the GIL. */
static PyObject *probe_pthread_create_nogil(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    pthread_t t;
    PyThreadState *save = PyEval_SaveThread();
    int rc = pthread_create(&t, NULL, nothing, NULL);
    if (rc == 0)
        pthread_join(t, NULL);
    PyEval_RestoreThread(save);
    return PyLong_FromLong(rc);
}

static PyObject *probe_usleep(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long usec;
    if (!PyArg_ParseTuple(args, "k", &usec))
        return NULL;
    return PyLong_FromLong(usleep((useconds_t)usec) == 0 ? 0 : errno);
}

static PyObject *probe_sleep(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned int sec;
    if (!PyArg_ParseTuple(args, "I", &sec))
        return NULL;
    return PyLong_FromUnsignedLong(sleep(sec));
}

/* clock_nanosleep(clock, flags, {sec, nsec}): its return value, an errno. */
static PyObject *probe_clock_nanosleep(PyObject *self, PyObject *args)
{
    (void)self;
    int clk, flags;
    long long sec;
    long nsec;
    if (!PyArg_ParseTuple(args, "iiLl", &clk, &flags, &sec, &nsec))
        return NULL;
    struct timespec ts = {(time_t)sec, nsec};
    return PyLong_FromLong(clock_nanosleep((clockid_t)clk, flags, &ts, NULL));
}

/* n bytes read from a freshly opened /dev/urandom, or the errno of the
 * open or the read. */
static PyObject *probe_read_urandom(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n;
    unsigned char buf[64];
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    if (n < 0 || n > (Py_ssize_t)sizeof(buf))
        return PyErr_Format(PyExc_ValueError, "at most %zu bytes", sizeof(buf));
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0)
        return PyLong_FromLong(errno);
    ssize_t got = read(fd, buf, (size_t)n);
    int err = errno;
    close(fd);
    if (got < 0)
        return PyLong_FromLong(err);
    return PyBytes_FromStringAndSize((const char *)buf, got);
}

static PyMethodDef methods[] = {
    {"enter", probe_enter, METH_VARARGS, NULL},
    {"leave", probe_leave, METH_NOARGS, NULL},
    {"violations", probe_violations, METH_NOARGS, NULL},
    {"draws", probe_draws, METH_NOARGS, NULL},
    {"clock_gettime", probe_clock_gettime, METH_VARARGS, NULL},
    {"time", probe_time, METH_NOARGS, NULL},
    {"gettimeofday", probe_gettimeofday, METH_NOARGS, NULL},
    {"getrandom", probe_getrandom, METH_VARARGS, NULL},
    {"getentropy", probe_getentropy, METH_VARARGS, NULL},
    {"arc4random", probe_arc4random, METH_NOARGS, NULL},
    {"pthread_create", probe_pthread_create, METH_NOARGS, NULL},
    {"fork", probe_fork, METH_NOARGS, NULL},
    {"socket", probe_socket, METH_VARARGS, NULL},
    {"nanosleep", probe_nanosleep, METH_VARARGS, NULL},
    {"nanosleep_nogil", probe_nanosleep_nogil, METH_VARARGS, NULL},
    {"pthread_create_nogil", probe_pthread_create_nogil, METH_NOARGS, NULL},
    {"usleep", probe_usleep, METH_VARARGS, NULL},
    {"sleep", probe_sleep, METH_VARARGS, NULL},
    {"clock_nanosleep", probe_clock_nanosleep, METH_VARARGS, NULL},
    {"read_urandom", probe_read_urandom, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_askew_probe", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__askew_probe(void)
{
    return PyModule_Create(&module);
}
