/* SPDX-License-Identifier: Apache-2.0 */
/* The extension's side of ABI 1.5's thread hook (preload_thread.h). Each
 * switch point of a C thread of the run comes here on the thread that makes
 * it, which holds the baton: the GIL is taken (a C thread gets a thread
 * state of its own for the call), the call is handed to
 * askew._loop.cthreads.serve, which decides with the run's threads and the
 * Baton as a Python thread's switch point does, and its answer goes back.
 * Whatever exception the calling C code had pending is kept aside. A wait's
 * C caller is found with dladdr, for the deadlock report. */
#include "preload_thread.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

static PyObject *serve; /* askew._loop.cthreads.serve, looked up once */

/* The object a return address lies in, and its offset there; "" when none
 * (askew._loop.cthreads names the function from the file's symbol table). */
static const char *caller_of(const void *ret, uintptr_t *offset)
{
    Dl_info info;
    *offset = 0;
    if (ret == NULL || dladdr((const char *)ret - 1, &info) == 0 ||
        info.dli_fname == NULL)
        return "";
    *offset = (uintptr_t)ret - (uintptr_t)info.dli_fbase;
    return info.dli_fname;
}

int askew__preload_thread(void *ctx, struct askew_thread_call *call)
{
    (void)ctx;
    if (!Py_IsInitialized())
        return ASKEW_THREAD_KILLED;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    long rc = -EINVAL;
    if (serve == NULL) {
        PyObject *mod = PyImport_ImportModule("askew._loop.cthreads"); // new reference
        serve = mod != NULL ? PyObject_GetAttrString(mod, "serve") : NULL;
        Py_XDECREF(mod);
    }
    uintptr_t offset = 0;
    const char *path = "";
    if (call->op == ASKEW_THREAD_BLOCK || call->op == ASKEW_THREAD_JOIN)
        path = caller_of(call->caller, &offset);
    PyObject *res = serve == NULL
                        ? NULL
                        : PyObject_CallFunction(
                              serve, "IIIIKKLIiissK", call->op, call->actor,
                              call->target, call->kind, (unsigned long long)call->key,
                              (unsigned long long)call->release,
                              (long long)call->timeout_ns, call->count, call->status,
                              call->holder, call->call != NULL ? call->call : "", path,
                              (unsigned long long)offset); // new reference
    if (res != NULL) {
        rc = PyLong_AsLong(res);
        if (rc == -1 && PyErr_Occurred())
            rc = -EINVAL;
        Py_DECREF(res);
    }
    if (res == NULL || PyErr_Occurred())
        PyErr_WriteUnraisable(serve); /* askew's own bug: said, never swallowed */
    if (call->op == ASKEW_THREAD_CREATE && rc >= 0) {
        call->target = (uint32_t)rc;
        rc = 0;
    }
    PyErr_Restore(type, value, tb);
    PyGILState_Release(gil);
    return (int)rc;
}

int askew__preload_thread_setup(PyObject *module)
{
    static const struct {
        const char *name;
        long value;
    } constants[] = {
        {"THREAD_CREATE", ASKEW_THREAD_CREATE},
        {"THREAD_START", ASKEW_THREAD_START},
        {"THREAD_BEGIN", ASKEW_THREAD_BEGIN},
        {"THREAD_SWITCH", ASKEW_THREAD_SWITCH},
        {"THREAD_BLOCK", ASKEW_THREAD_BLOCK},
        {"THREAD_WAKE", ASKEW_THREAD_WAKE},
        {"THREAD_WAKE_ALL", (long)ASKEW_THREAD_WAKE_ALL},
        {"THREAD_JOIN", ASKEW_THREAD_JOIN},
        {"THREAD_EXIT", ASKEW_THREAD_EXIT},
        {"THREAD_KILLED", ASKEW_THREAD_KILLED},
        {"THREAD_DEADLOCK", ASKEW_THREAD_DEADLOCK},
        {"SYNC_MUTEX", ASKEW_SYNC_MUTEX},
        {"SYNC_COND", ASKEW_SYNC_COND},
        {"SYNC_SEM", ASKEW_SYNC_SEM},
        {"SYNC_SLEEP", ASKEW_SYNC_SLEEP},
        {"CTHREADS_MAX", ASKEW_CTHREADS_MAX},
    };
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++)
        if (PyModule_AddIntConstant(module, constants[i].name, constants[i].value) < 0)
            return -1;
    return 0;
}
