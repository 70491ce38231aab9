/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Task (asyncio's C Task hashed by creation number) and the
 * C Future type that create_future returns. Binding files only. */
#ifndef ASKEW_TASK_H
#define ASKEW_TASK_H

#include "core.h"

extern PyTypeObject *askew__TaskType;
extern PyObject *askew__FutureType; /* _asyncio.Future itself */

int askew__task_types_init(PyObject *module);
/* The creation number the next Task made will carry (0: none). */
void askew__task_set_next_seq(uint64_t seq);

#endif
