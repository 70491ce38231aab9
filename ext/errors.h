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

#endif
