/* SPDX-License-Identifier: Apache-2.0 */
/* Interleaving coverage (see coverage.h). A site must hash the same in
 * every process, since the sweep that steers by it must be replayable: it
 * is built from code names and line numbers (FNV-1a over the UTF-8 of
 * co_qualname, then the lines), never from addresses or str hashes, which
 * PYTHONHASHSEED randomises. */
#include "coverage.h"

#include <string.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME  0x100000001b3ULL

static uint64_t fnv_bytes(uint64_t h, const char *s, Py_ssize_t len)
{
    for (Py_ssize_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t code_site(PyCodeObject *code, int line)
{
    Py_ssize_t len;
    const char *name = PyUnicode_AsUTF8AndSize(code->co_qualname, &len);
    uint64_t h = FNV_OFFSET;

    if (name != NULL)
        h = fnv_bytes(h, name, len);
    else
        PyErr_Clear();
    h = fnv_u64(h, (uint64_t)code->co_firstlineno);
    return fnv_u64(h, (uint64_t)line);
}

/* Where a task's coroutine is suspended now: its frame's code and line; 0
 * when it has none (done, or not a coroutine). */
static uint64_t task_site(PyObject *task)
{
    uint64_t site = 0;
    PyObject *coro = PyObject_CallMethod(task, "get_coro", NULL);
    if (coro == NULL)
        return 0;
    PyObject *frame = PyObject_GetAttrString(coro, "cr_frame");
    if (frame != NULL && PyFrame_Check(frame)) {
        PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);
        site = code_site(code, PyFrame_GetLineNumber((PyFrameObject *)frame));
        Py_DECREF(code);
    }
    Py_XDECREF(frame);
    Py_DECREF(coro);
    return site;
}

static uint64_t site_of(const struct askew_state *st, PyObject *callback)
{
    /* askew's Task sits on _asyncio.Task; a user's factory may make either. */
    PyTypeObject *task = st->task_type->tp_base;
    PyObject *self = NULL;

    if (PyMethod_Check(callback)) {
        self = PyMethod_GET_SELF(callback);
        callback = PyMethod_GET_FUNCTION(callback);
    } else if (PyCFunction_Check(callback)) {
        self = PyCFunction_GET_SELF(callback); /* a task's wakeup */
    } else if (strcmp(Py_TYPE(callback)->tp_name, "TaskStepMethWrapper") == 0) {
        uint64_t site = 0;
        PyObject *owner = PyObject_GetAttrString(callback, "__self__");
        if (owner != NULL && PyObject_TypeCheck(owner, task))
            site = task_site(owner);
        Py_XDECREF(owner);
        return site;
    }
    if (self != NULL && PyObject_TypeCheck(self, task))
        return task_site(self);
    if (PyFunction_Check(callback)) {
        PyCodeObject *code = (PyCodeObject *)PyFunction_GET_CODE(callback);
        return code_site(code, code->co_firstlineno);
    }
    const char *name = Py_TYPE(callback)->tp_name;
    return fnv_bytes(FNV_OFFSET, name, (Py_ssize_t)strlen(name));
}

void askew__coverage_note(struct askew_coverage *cov, const struct askew_state *st,
                          int64_t node, PyObject *callback)
{
    if (!PyErr_Occurred()) {
        uint64_t site = fnv_u64(site_of(st, callback), (uint64_t)node);
        PyErr_Clear(); /* a site we could not read counts as its fallback */
        /* splitmix64's finaliser spreads the bits before the index is cut. */
        site ^= site >> 30;
        site *= 0xbf58476d1ce4e5b9ULL;
        site ^= site >> 27;
        const uint64_t edge = (site ^ cov->prev) & (ASKEW_COVERAGE_BITS - 1);
        cov->map[edge >> 3] |= (uint8_t)(1u << (edge & 7));
        cov->prev = site >> 1;
    }
    Py_DECREF(callback);
}

int askew__coverage_set(struct askew_coverage **cov, PyObject *on)
{
    const int want = PyObject_IsTrue(on);
    if (want < 0)
        return -1;
    if (want && *cov == NULL) {
        *cov = PyMem_Calloc(1, sizeof(**cov));
        if (*cov == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    } else if (!want) {
        PyMem_Free(*cov);
        *cov = NULL;
    }
    return 0;
}

PyObject *askew__coverage_take(struct askew_coverage *cov)
{
    if (cov == NULL)
        Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize((const char *)cov->map, sizeof(cov->map));
    if (out != NULL) {
        memset(cov->map, 0, sizeof(cov->map));
        cov->prev = 0;
    }
    return out;
}
