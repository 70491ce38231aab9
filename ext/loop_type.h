/* SPDX-License-Identifier: Apache-2.0 */
/* The Loop type (loop_type.c): module init's entry point. Binding files
 * only. */
#ifndef ASKEW_LOOP_TYPE_H
#define ASKEW_LOOP_TYPE_H

#include "core.h"

/* Module init: the Loop type, RUN_* and STRATEGIES; hands the loop's
 * handle hooks to the module state. */
int askew__loop_type_init(PyObject *module);

#endif
