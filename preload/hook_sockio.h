/* SPDX-License-Identifier: Apache-2.0 */
/* Sockets of refused families made before a run (hook_sockio.c), as
 * syscall() asks. Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_SOCKIO_H
#define ASKEW_PRELOAD_HOOK_SOCKIO_H

#include "internal.h"

/* 1 when fd is a socket of a refused family (one made before the run, say):
 * I/O on it inside a simulation would reach the real network. */
int askew__sim_fd_refused(int fd) ASKEW_HIDDEN;

#endif
