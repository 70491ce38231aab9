/* SPDX-License-Identifier: Apache-2.0 */
/* What every binding file of askew._core shares: Python.h, the engine's
 * API, the preload's ABI, and the module state. Nothing else: a unit's own
 * symbols are declared in its own header (errors.h, loop.h, ...), so that
 * who uses whom shows in the includes. Only the files directly under ext/
 * include this (and so Python.h); module.c defines what it declares. */
#ifndef ASKEW_CORE_H
#define ASKEW_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "askew_preload.h"
#include "engine.h"

/* ---- module state (module.c) ------------------------------------------- */

/* What one askew._core module object owns (PyModule_GetState): its types,
 * the asyncio objects it calls, its interned strings and the handle free
 * list. Binding code reaches it through a loop (`loop->state`), a type of
 * ours (askew__state_of_type), or the module. What is process-wide by
 * nature stays static and says why: the active loop (askew__active, read by
 * the preload without the GIL), the preload's API table, the refusal slot
 * and its atomic flag. docs/design.md §1 has the decision. */
#define ASKEW_HANDLE_FREELIST_MAX 256
struct askew_handle;
struct askew_handle_loop;
struct askew_state {
    PyTypeObject *handle_type;
    PyTypeObject *timer_handle_type;
    PyTypeObject *task_type;
    PyTypeObject *network_type;
    PyTypeObject *message_type;    /* askew.Message, a struct sequence */
    PyObject *recv_expire_fn;      /* the callback of a recv()'s timeout */
    PyTypeObject *receive_type;    /* askew._core.Receive: what Node.recv returns */
    PyTypeObject *node_base_type;  /* askew._core.NodeBase: Node's C half */
    PyObject *future_type;         /* _asyncio.Future itself */
    PyTypeObject *sim_future_type; /* askew._core.Future: what create_future makes */
    /* Future's methods through their descriptors: no attribute lookup per
     * call on the hot paths (a message delivered, a sleep's timer firing). */
    PyObject *future_done;
    PyObject *future_cancelled;
    PyObject *future_set_result;
    /* asyncio.futures._set_result_unless_cancelled, what asyncio.sleep's
     * timer calls: run in C when its future is an exact Future. */
    PyObject *set_result_unless_cancelled;
    /* asyncio.Handle and asyncio.TimerHandle: what our handles' __class__
     * reports. */
    PyObject *asyncio_handle_classes[2];
    /* askew.errors.NondeterminismError, handed over by askew/_loop/loop.py
     * through _core._configure_errors() at import. */
    PyObject *nondeterminism_error;
    PyObject *str_context; /* interned "context" */
    /* The first other string object equal to "context" seen as a keyword
     * (asyncio's C Task passes its own on every step), so that its address
     * stays its own. */
    PyObject *str_context_seen;
    PyObject *str_name;
    PyObject *str_loop;
    PyObject *str_ended;      /* interned "_ended" and "_check_live": a World's, */
    PyObject *str_check_live; /* which a Receive asks first (recv.c) */
    PyObject *str_timeout;    /* interned "timeout": recv's keyword */
    PyObject *empty_tuple;
    /* Handles come and go once per step: a few dead ones of the exact types
     * skip the allocator. The GIL guards the list. */
    struct askew_handle *freelist[ASKEW_HANDLE_FREELIST_MAX];
    int freelist_len;
    /* What a handle asks of the loop that made it (handle.h), handed down
     * by the loop's type init: handle.c sits below the loop. */
    const struct askew_handle_loop *handle_loop;
};

extern struct PyModuleDef askew__module_def;
/* The state of the askew._core module that defined `type` or its base;
 * never NULL for our types and their subclasses. Borrowed. */
static inline struct askew_state *askew__state_of_type(PyTypeObject *type)
{
    return PyModule_GetState(PyType_GetModuleByDef(type, &askew__module_def));
}

#endif
