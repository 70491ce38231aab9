/* SPDX-License-Identifier: Apache-2.0 */
/* The binding's error helpers: engine codes (a negative errno) become
 * Python exceptions here and nowhere else, and NondeterminismError is found
 * here for every unit that refuses something. Every binding unit may
 * include this; it includes nothing of theirs. */
#ifndef ASKEW_ERRORS_H
#define ASKEW_ERRORS_H

#include "core.h"

/* Map an engine code (a negative errno) to an exception; returns NULL. The
 * one place that does so. */
PyObject *askew__raise_engine(int rc, const char *what);

/* NondeterminismError of the module whose state is `st`, or RuntimeError
 * when none is known (st NULL, or askew not imported). Borrowed. */
static inline PyObject *askew__nondeterminism_error(const struct askew_state *st)
{
    return st != NULL && st->nondeterminism_error != NULL ? st->nondeterminism_error
                                                          : PyExc_RuntimeError;
}

/* Set a hook slot: *slot = fn, or NULL for None; anything else not
 * callable is a TypeError naming `what` and the value. 0, or -1 with the
 * exception set (the slot unchanged). */
static inline int askew__set_hook(PyObject **slot, PyObject *fn, const char *what)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "%s must be callable or None, got %R", what, fn);
        return -1;
    }
    Py_XSETREF(*slot, fn == Py_None ? NULL : Py_NewRef(fn));
    return 0;
}

#endif
