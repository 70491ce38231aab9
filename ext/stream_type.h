/* SPDX-License-Identifier: Apache-2.0 */
/* The Stream and StreamStack types (stream_type.c): module init's entry
 * point. Binding files only. */
#ifndef ASKEW_STREAM_TYPE_H
#define ASKEW_STREAM_TYPE_H

#include "core.h"

/* Module init: Stream and StreamStack into the module. */
int askew__stream_types_init(PyObject *module);

#endif
