/* SPDX-License-Identifier: Apache-2.0 */
/* The running node's identity (hook_identity.c), as the open family and
 * syscall() ask. Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_IDENTITY_H
#define ASKEW_PRELOAD_HOOK_IDENTITY_H

#include <sys/types.h>

#include "internal.h"

/* The running node's pid as getpid answers it inside a run; -1 when the
 * extension gives no identity (the host's pid stands). */
long askew__sim_pid(const struct askew_preload_hooks *h) ASKEW_HIDDEN;
/* getpid, getppid and gettid inside a run, for a caller at `ret`. */
long askew__sim_getpid(const struct askew_preload_hooks *h,
                       const void *ret) ASKEW_HIDDEN;
long askew__sim_getppid(const struct askew_preload_hooks *h) ASKEW_HIDDEN;
long askew__sim_gettid(const struct askew_preload_hooks *h,
                       const void *ret) ASKEW_HIDDEN;
/* The pid a signal inside a run goes to: the node's own pid (or 0 for
 * "this process", -1 outside the process) as the host's; `call` and `ret`
 * name the interposer for a refusal. -1 with errno EPERM, recorded, when
 * the target is another process. */
long askew__sim_signal_target(const struct askew_preload_hooks *h, long pid,
                              const char *call, void *ret) ASKEW_HIDDEN;
/* The same for a thread id (tgkill's): the node's main thread is the
 * simulation thread. */
long askew__sim_thread_target(const struct askew_preload_hooks *h,
                              long tid) ASKEW_HIDDEN;

#endif
