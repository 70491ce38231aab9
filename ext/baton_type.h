/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Baton (baton_type.c): a loop's baton (ext/engine/baton.h) for
 * askew/_loop/threads.py. Binding files only. */
#ifndef ASKEW_BATON_TYPE_H
#define ASKEW_BATON_TYPE_H

#include "core.h"

/* Module init: the Baton type and the BATON_* state constants. */
int askew__baton_setup(PyObject *module);

#endif
