/* SPDX-License-Identifier: Apache-2.0 */
/* What a real fd is, seen from inside a run (hook_fds.c), as the I/O, open,
 * poll and syscall families ask, and the AF_UNIX addresses the run bound.
 * Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_FDS_H
#define ASKEW_PRELOAD_HOOK_FDS_H

#include <sys/socket.h>

#include "internal.h"

enum askew_fd_kind {
    ASKEW_FD_OTHER = 0,   /* a directory, an anonymous inode, the null device... */
    ASKEW_FD_REGULAR,     /* a regular file: a write stamps its mtime */
    ASKEW_FD_ENTROPY,     /* /dev/random or /dev/urandom: reads come from the run */
    ASKEW_FD_OUTSIDE,     /* a socket reaching outside the process: I/O refused */
    ASKEW_FD_PIPE_BEFORE, /* a pipe or FIFO the run did not make: fed from outside */
    ASKEW_FD_TTY,         /* a character device but the memory ones: real input */
    ASKEW_FD_BAD          /* fstat failed (EBADF): the call's own error follows */
};

/* One fstat (and for a socket one or two getsockopt), straight to the
 * kernel; errno is kept. A socket reaches outside when its family is not
 * AF_UNIX, or when it is AF_UNIX and connected to another process. */
enum askew_fd_kind askew__fd_kind(int fd) ASKEW_HIDDEN;
struct stat;
/* The same, with fstat's answer in *st (valid unless ASKEW_FD_BAD). */
enum askew_fd_kind askew__fd_stat(int fd, struct stat *st) ASKEW_HIDDEN;
/* 1 when waiting for fd to become ready waits on the world outside the run
 * (the poll family refuses that): a socket reaching outside, a pipe the run
 * did not make, a terminal. */
int askew__fd_waits_outside(int fd) ASKEW_HIDDEN;
/* After a write that changed a regular file inside a run: its mtime becomes
 * the node's wall clock, as a write at that virtual time would leave it. */
void askew__sim_stamp_mtime(const struct askew_preload_hooks *h, int fd) ASKEW_HIDDEN;
/* 1 when an AF_UNIX address names a socket bound inside this run (so a
 * connect or send to it stays in the process); 0 for every other address,
 * AF_UNIX or not. */
int askew__sim_unix_ours(const struct sockaddr *addr, socklen_t len) ASKEW_HIDDEN;
/* A bind inside the run succeeded: remember an AF_UNIX address. */
void askew__sim_unix_bound(const struct sockaddr *addr, socklen_t len) ASKEW_HIDDEN;
/* A pipe the run made (pipe, pipe2): its fds may be waited on. */
void askew__sim_pipe_made(const int fds[2]) ASKEW_HIDDEN;
/* A new run: forget the last run's addresses and pipes. */
void askew__fds_run_begins(void) ASKEW_HIDDEN;

#endif
