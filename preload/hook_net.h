/* SPDX-License-Identifier: Apache-2.0 */
/* The socket families refused inside a simulation (hook_net.c), as socket
 * I/O and syscall() ask. Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_NET_H
#define ASKEW_PRELOAD_HOOK_NET_H

#include <sys/socket.h>

#include "internal.h"

/* 1 when the socket family is refused inside a simulation. */
int askew__sim_family_refused(int family) ASKEW_HIDDEN;
/* 1 when a connect to this address inside a simulation leaves the run: a
 * refused family, or an AF_UNIX address the run did not bind. */
int askew__sim_connect_refused(const struct sockaddr *addr, socklen_t len) ASKEW_HIDDEN;

#endif
