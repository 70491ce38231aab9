/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.DiskFile (disk_file.c), the raw file of a simulated file.
 * Binding files only. */
#ifndef ASKEW_DISK_FILE_H
#define ASKEW_DISK_FILE_H

#include "core.h"

/* Module init: the DiskFile type, a subclass of _io._RawIOBase. */
int askew__disk_file_setup(PyObject *module);

#endif
