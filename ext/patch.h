/* SPDX-License-Identifier: Apache-2.0 */
/* The virtual time.*, time.sleep and os.urandom (patch.c), as the module's
 * askew._core.virtual namespace. Binding files only. */
#ifndef ASKEW_PATCH_H
#define ASKEW_PATCH_H

#include "core.h"

/* Module init: askew._core.virtual, each replacement with its original. */
int askew__patch_setup(PyObject *module);

#endif
