/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk's interposers (hook_disk.c), as the open and socket
 * I/O families reach them: the fd test, a path call, a call on a simulated
 * fd. Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_DISK_H
#define ASKEW_PRELOAD_HOOK_DISK_H

#include "internal.h"

/* The simulated disk (hook_disk.c). A simulated fd is one the disk hook
 * handed out: one comparison tells it from a real one. */
static inline int askew__disk_fd(int fd)
{
    return ASKEW_UNLIKELY(fd >= ASKEW_DISK_FD_BASE);
}
/* A path call inside a run: 1 when the disk answered it (*rc is the call's
 * result, errno set on -1; a refusal is recorded), 0 when libc's call must
 * run. `name` and `ret` name the interposer for a refusal's record. */
int askew__disk_path(const struct askew_preload_hooks *h, struct askew_disk_call *call,
                     const char *name, void *ret, long *rc) ASKEW_HIDDEN;
/* A call on a simulated fd: its result, or -1 and errno (EBADF outside a
 * run or without a disk hook). */
long askew__disk_fdcall(struct askew_disk_call *call, const char *name,
                        void *ret) ASKEW_HIDDEN;

#endif
