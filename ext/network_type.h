/* SPDX-License-Identifier: Apache-2.0 */
/* The Network type (network_type.c): module init's entry point. Binding
 * files only. */
#ifndef ASKEW_NETWORK_TYPE_H
#define ASKEW_NETWORK_TYPE_H

#include "core.h"

/* Module init: the Network and Message types, NET_OUTCOME_NAMES. */
int askew__network_setup(PyObject *module);

#endif
