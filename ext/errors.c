/* SPDX-License-Identifier: Apache-2.0 */
/* The one helper that turns an engine code (a negative errno) into a Python
 * exception: ENOMEM is MemoryError, EINVAL ValueError, anything else
 * RuntimeError naming what failed. It never decides what is an error, only
 * how one is raised. Every binding unit may call it (errors.h). */
#include <errno.h>
#include <string.h>

#include "errors.h"

PyObject *askew__raise_engine(int rc, const char *what)
{
    if (rc == -ENOMEM)
        return PyErr_NoMemory();
    PyErr_Format(rc == -EINVAL ? PyExc_ValueError : PyExc_RuntimeError, "%s failed: %s",
                 what, strerror(-rc));
    return NULL;
}
