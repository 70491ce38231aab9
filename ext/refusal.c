/* SPDX-License-Identifier: Apache-2.0 */
/* Refusals that user code cannot swallow. Every refusal askew makes inside
 * a run is noted here before it is raised: the Python-level ones
 * (refuse in askew/_loop/refusal.py, Thread.start in askew/_loop/patches.py), the
 * loop's own (a call from another thread), a blocking sleep past the time
 * budget, and the preload's (preload.c). The note adds the task and the
 * user's line to the exception's message and keeps the first refusal of the
 * step in a one-exception slot; after the step the run loop calls
 * askew__preload_check, which raises what the slot holds. So `except
 * Exception` or `pytest.raises(RuntimeError)` around a refused call cannot
 * turn the run green, and a refusal that propagated fails the run once: the
 * slot raises the very exception object the task failed with. */
#include <string.h>

#include "active.h"
#include "loop.h"
#include "refusal.h"

/* Static: the preload sets it without the GIL (core.h). */
atomic_int askew__refusal_flag;

/* The first refusal since the last check and the task it was raised in;
 * GIL-protected (notes from other threads hold the GIL too). Process-wide,
 * not module state, like the flag beside it: it is the one simulation
 * thread's slot, which the preload binding raises and resets. */
static PyObject *noted;
static PyObject *noted_task;
static uint64_t noted_more; /* refusals noted after it in the same step */

/* "<askew package>/" and "<standard library>/": frames there are askew's or
 * asyncio's, not the user's. Found on first use, when both are imported;
 * process-wide facts (where the files are), so static. */
static char askew_dir[4096];
static char stdlib_dir[4096];

/* dirname(path) + "/" into out; 0, or -1 when it does not fit. */
static int parent_dir(const char *path, int up, char *out, size_t len)
{
    size_t n = strlen(path);
    for (int i = 0; i < up; i++) {
        while (n > 0 && path[n - 1] != '/')
            n--;
        if (n > 0 && i + 1 < up)
            n--; /* step over the slash to the next level */
    }
    if (n == 0 || n >= len)
        return -1;
    memcpy(out, path, n);
    out[n] = '\0';
    return 0;
}

static int module_dir(const char *name, int up, char *out, size_t len)
{
    PyObject *mod = PyImport_ImportModule(name); // new reference
    PyObject *file = mod ? PyObject_GetAttrString(mod, "__file__") : NULL;
    const char *path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
    const int rc = path != NULL ? parent_dir(path, up, out, len) : -1;
    Py_XDECREF(mod);
    Py_XDECREF(file);
    PyErr_Clear();
    return rc;
}

static int find_dirs(void)
{
    if (askew_dir[0] != '\0' && stdlib_dir[0] != '\0')
        return 0;
    /* asyncio is a package of the standard library: two levels up from its
     * __init__.py is the library, wherever this Python keeps it. */
    if (module_dir("askew", 1, askew_dir, sizeof askew_dir) < 0 ||
        module_dir("asyncio", 2, stdlib_dir, sizeof stdlib_dir) < 0) {
        askew_dir[0] = stdlib_dir[0] = '\0';
        return -1;
    }
    return 0;
}

/* Library code for the purpose of "the user's line": askew itself and the
 * standard library, but not packages installed inside it, which are code
 * the user chose to run. */
static int is_library(PyObject *filename)
{
    const char *f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
    if (f == NULL) {
        PyErr_Clear();
        return 1;
    }
    if (strncmp(f, "<frozen", 7) == 0 || strncmp(f, askew_dir, strlen(askew_dir)) == 0)
        return 1;
    return strncmp(f, stdlib_dir, strlen(stdlib_dir)) == 0 &&
           strstr(f + strlen(stdlib_dir), "-packages/") == NULL;
}

static int is_askew(PyObject *filename)
{
    const char *f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
    if (f == NULL) {
        PyErr_Clear();
        return 0;
    }
    return strncmp(f, askew_dir, strlen(askew_dir)) == 0;
}

static PyObject *frame_text(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame); // new reference
    PyObject *text = PyUnicode_FromFormat("%U:%d in %U()", code->co_filename,
                                          PyFrame_GetLineNumber(frame), code->co_name);
    Py_DECREF(code);
    return text;
}

/* The innermost frame of this thread outside askew and the standard
 * library, as "file:line in function()"; the innermost frame when every
 * frame is library code; NULL when no Python frame runs. `strict` (a C-level
 * refusal noted from inside the refused call): NULL also when askew's own
 * frames come first, as they do when the loop called a C callback itself,
 * since the frames above them only show who started the run. */
static PyObject *user_line(int strict)
{
    PyFrameObject *innermost = PyEval_GetFrame(); // borrowed
    if (innermost == NULL || find_dirs() < 0)
        return NULL;
    PyFrameObject *frame = (PyFrameObject *)Py_NewRef(innermost);
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame); // new reference
        const int library = is_library(code->co_filename);
        const int own = strict && is_askew(code->co_filename);
        Py_DECREF(code);
        if (own) {
            Py_DECREF(frame);
            return NULL;
        }
        if (!library) {
            PyObject *text = frame_text(frame);
            Py_DECREF(frame);
            return text;
        }
        PyFrameObject *back = PyFrame_GetBack(frame); // new reference
        Py_DECREF(frame);
        frame = back;
    }
    return frame_text(innermost);
}

/* Who made the refused call: repr(asyncio.current_task()) and its node, or
 * why there is no task. *task receives the task (new reference) or NULL. */
static PyObject *task_text(PyObject **task)
{
    *task = NULL;
    if (PyThread_get_thread_ident() != askew__active_thread) {
        PyObject *threading = PyImport_ImportModule("threading"); // new reference
        PyObject *thread =
            threading ? PyObject_CallMethod(threading, "current_thread", NULL) : NULL;
        PyObject *name = thread ? PyObject_GetAttrString(thread, "name") : NULL;
        PyObject *text =
            name ? PyUnicode_FromFormat("none: thread %R, not the simulation's", name)
                 : NULL;
        Py_XDECREF(threading);
        Py_XDECREF(thread);
        Py_XDECREF(name);
        return text;
    }
    PyObject *asyncio = PyImport_ImportModule("asyncio"); // new reference
    PyObject *current =
        asyncio ? PyObject_CallMethod(asyncio, "current_task", NULL) : NULL;
    Py_XDECREF(asyncio);
    PyObject *text;
    if (current != NULL && current != Py_None) {
        /* Its name and coroutine: the repr adds state and done-callbacks,
         * which say nothing here. */
        PyObject *name = PyObject_CallMethod(current, "get_name", NULL);
        PyObject *coro = name ? PyObject_CallMethod(current, "get_coro", NULL) : NULL;
        PyObject *qual = coro ? PyObject_GetAttrString(coro, "__qualname__") : NULL;
        /* "test_x.<locals>.body" says "body" twice over: keep what follows
         * the last "<locals>.", which still says Class.method. */
        const char *q = qual && PyUnicode_Check(qual) ? PyUnicode_AsUTF8(qual) : NULL;
        for (const char *at = q ? strstr(q, "<locals>.") : NULL; at != NULL;
             at = strstr(q, "<locals>."))
            q = at + strlen("<locals>.");
        text = q != NULL ? PyUnicode_FromFormat("%S running %s()", name, q)
                         : PyObject_Repr(current);
        Py_XDECREF(name);
        Py_XDECREF(coro);
        Py_XDECREF(qual);
        PyErr_Clear();
        *task = current;
    } else {
        Py_XDECREF(current);
        PyErr_Clear();
        text = PyUnicode_FromString("none (between callbacks)");
    }
    if (text != NULL && askew__active != NULL && askew__active->node_current >= 0)
        Py_SETREF(text, PyUnicode_FromFormat("%U on node %lld", text,
                                             (long long)askew__active->node_current));
    return text;
}

/* Append to a one-string args tuple: the message str(exc) shows. */
static void append_message(PyObject *exc, PyObject *more)
{
    PyObject *args = PyObject_GetAttrString(exc, "args"); // new reference
    if (args != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 &&
        PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
        PyObject *msg = PyUnicode_Concat(PyTuple_GET_ITEM(args, 0), more);
        PyObject *new_args = msg ? PyTuple_Pack(1, msg) : NULL;
        if (new_args != NULL)
            (void)PyObject_SetAttrString(exc, "args", new_args);
        Py_XDECREF(msg);
        Py_XDECREF(new_args);
    }
    Py_XDECREF(args);
    PyErr_Clear();
}

/* Name the task and the user's line, in the message and as the attributes
 * `task` and `where`, once per exception. where_known is 0 when no Python
 * frame ran since the refused call (a preload refusal seen at the step's
 * end): the frames then are the loop's, not the caller's;
 * ASKEW_WHERE_C_CALL when noted from inside the refused C call. Returns the task
 * (new reference) or NULL; never fails: a refusal without its task is
 * still a refusal. */
static PyObject *annotate(PyObject *exc, int where_known)
{
    PyObject *seen = PyObject_GetAttrString(exc, "where"); // new reference
    PyErr_Clear();
    const int done = seen != NULL && seen != Py_None;
    Py_XDECREF(seen);
    if (done)
        return NULL;
    PyObject *task;
    PyObject *who = task_text(&task);
    PyObject *where =
        where_known ? user_line(/* strict */ where_known == ASKEW_WHERE_C_CALL) : NULL;
    PyErr_Clear();
    PyObject *more =
        where != NULL
            ? PyUnicode_FromFormat("\n  task: %S\n  at: %U", who ? who : Py_None, where)
            : PyUnicode_FromFormat("\n  task: %S\n  at: not known (no Python code ran "
                                   "between the refused call and the end of its step)",
                                   who ? who : Py_None);
    if (more != NULL) {
        append_message(exc, more);
        Py_DECREF(more);
    }
    (void)PyObject_SetAttrString(exc, "task", who ? who : Py_None);
    (void)PyObject_SetAttrString(exc, "where", where ? where : Py_None);
    PyErr_Clear();
    Py_XDECREF(who);
    Py_XDECREF(where);
    return task;
}

int askew__refusal_note_at(PyObject *exc, int where_known)
{
    /* Outside a run there is no run to fail: the raise is the whole story. */
    if (askew__active == NULL || noted == exc)
        return 0;
    PyObject *task = annotate(exc, where_known);
    if (noted == NULL) {
        noted = Py_NewRef(exc);
        noted_task = task;
    } else {
        noted_more++;
        Py_XDECREF(task);
    }
    atomic_store_explicit(&askew__refusal_flag, 1, memory_order_relaxed);
    return 0;
}

/* The exception set now, kept aside while the note calls into Python. */
struct stash {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *value;
#else
    PyObject *type, *value, *tb;
#endif
};

static void stash_take(struct stash *st)
{
#if PY_VERSION_HEX >= 0x030C0000
    st->value = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&st->type, &st->value, &st->tb);
    if (st->type != NULL) {
        PyErr_NormalizeException(&st->type, &st->value, &st->tb);
        if (st->tb != NULL)
            PyException_SetTraceback(st->value, st->tb);
    }
#endif
}

static void stash_put_back(struct stash *st)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(st->value);
#else
    PyErr_Restore(st->type, st->value, st->tb);
#endif
}

int askew__refusal_note(PyObject *exc)
{
    if (exc != NULL && !PyExceptionInstance_Check(exc)) {
        PyErr_Format(PyExc_TypeError, "a refusal must be an exception instance, not %R",
                     exc);
        return -1;
    }
    /* NULL: the exception set now, as the instance that will propagate
     * (made here if only its type and arguments were set); it stays set. */
    struct stash st;
    stash_take(&st);
    if (exc == NULL)
        exc = st.value;
    const int rc = exc != NULL ? askew__refusal_note_at(exc, 1) : 0;
    stash_put_back(&st);
    return rc;
}

/* Whether the task caught the refusal: it is still running or it returned.
 * A task that failed, with this exception or with the OSError the refused
 * C call turned into, did not catch it. Asking a failed task for its
 * exception also marks it retrieved: the run's failure reports it, asyncio
 * need not. */
static int was_caught(PyObject *task, PyObject *exc)
{
    (void)exc;
    PyObject *done = PyObject_CallMethod(task, "done", NULL); // new reference
    PyObject *cancelled =
        done == Py_True ? PyObject_CallMethod(task, "cancelled", NULL) : NULL;
    PyObject *failed =
        cancelled == Py_False ? PyObject_CallMethod(task, "exception", NULL) : NULL;
    const int caught = done == Py_False || failed == Py_None;
    Py_XDECREF(done);
    Py_XDECREF(cancelled);
    Py_XDECREF(failed);
    PyErr_Clear();
    return caught;
}

int askew__refusal_raise(void)
{
    if (noted == NULL)
        return 0;
    PyObject *exc = noted, *task = noted_task;
    const uint64_t more = noted_more;
    noted = noted_task = NULL;
    noted_more = 0;
    if (task != NULL && was_caught(task, exc)) {
        PyObject *line = PyUnicode_FromString(
            "\n  caught by the code under test; askew fails the run all the same");
        if (line != NULL) {
            append_message(exc, line);
            Py_DECREF(line);
        }
    }
    if (more > 0) {
        PyObject *line =
            PyUnicode_FromFormat("\n  (and %llu more refusal%s in the same step)",
                                 (unsigned long long)more, more == 1 ? "" : "s");
        if (line != NULL) {
            append_message(exc, line);
            Py_DECREF(line);
        }
    }
    PyErr_Clear();
    /* The same object user code saw: its traceback (the user's frames) and
     * identity go with it, so a refusal that also failed its task is one
     * failure, not two. */
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    Py_XDECREF(task);
    return -1;
}

void askew__refusal_reset(void)
{
    Py_CLEAR(noted);
    Py_CLEAR(noted_task);
    noted_more = 0;
    atomic_store_explicit(&askew__refusal_flag, 0, memory_order_relaxed);
}

static PyObject *note_refusal(PyObject *Py_UNUSED(module), PyObject *exc)
{
    if (askew__refusal_note(exc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef refusal_methods[] = {
    {"_note_refusal", note_refusal, METH_O,
     "_note_refusal(exc): a refusal about to be raised inside a run; the step's end "
     "raises it again if user code catches it."},
    {NULL, NULL, 0, NULL},
};

int askew__refusal_setup(PyObject *module)
{
    return PyModule_AddFunctions(module, refusal_methods);
}
