/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of libaskew-preload.so share and nothing outside it sees:
 * the thread-local activation pointer, the lazily resolved real_* table,
 * the raw-syscall fallback and the refusal recorder. Everything here is
 * hidden; only the interposers (ASKEW_EXPORT) and askew_preload_get_api
 * leave the library. Nothing here may malloc, lock or print on the
 * pass-through path. */
#ifndef ASKEW_PRELOAD_INTERNAL_H
#define ASKEW_PRELOAD_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "askew_preload.h"

#define ASKEW_EXPORT      __attribute__((visibility("default")))
#define ASKEW_HIDDEN      __attribute__((visibility("hidden")))
#define ASKEW_LIKELY(x)   __builtin_expect(!!(x), 1)
#define ASKEW_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* glibc marks some pointer parameters nonnull that the kernel accepts as
 * NULL (gettimeofday's tv, say); hiding the value from the optimizer keeps
 * our NULL checks from being deleted on that promise. */
#define ASKEW_LAUNDER(p)                                                               \
    __extension__({                                                                    \
        __typeof__(p) launder_ = (p);                                                  \
        __asm__("" : "+r"(launder_));                                                  \
        launder_;                                                                      \
    })

/* Our own copy of an interposer, bound inside the library: self_test
 * compares it with what dlsym(RTLD_DEFAULT, name) finds. Referring to the
 * exported name instead would go through the GOT and find whoever comes
 * first, which is exactly what the test must not assume. */
#if defined(__clang__)
#define ASKEW_COPY_ATTRS(name)
#else
#define ASKEW_COPY_ATTRS(name) __attribute__((copy(name)))
#endif
#define ASKEW_SELF(name)                                                               \
    extern __typeof__(name) askew__self_##name ASKEW_COPY_ATTRS(name)                  \
        __attribute__((alias(#name), visibility("hidden")))

/* The on/off switch: non-NULL only on the thread running a simulation, and
 * only outside a hook call (the dispatcher clears it while a hook runs so a
 * hook that reaches an interposed function gets the real one). Static TLS:
 * one %fs-relative load, no __tls_get_addr, async-signal-safe. */
extern __thread const struct askew_preload_hooks *askew__t_hooks
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Every function we may forward to. The order is the table's order. */
enum askew_fn {
    FN_clock_gettime,
    FN_clock_getres,
    FN_gettimeofday,
    FN_time,
    FN_timespec_get,
    FN_clock,
    FN_times,
    FN_getrusage,
    FN_getrandom,
    FN_getentropy,
    FN_syscall,
    FN_pthread_create,
    FN_sem_post,
    FN_sem_wait,
    FN_sem_trywait,
    FN_fork,
    FN_posix_spawn,
    FN_posix_spawnp,
    FN_execve,
    FN_execv,
    FN_execvp,
    FN_execvpe,
    FN_fexecve,
    FN_system,
    FN_popen,
    FN_socket,
    FN_connect,
    FN_bind,
    FN_getaddrinfo,
    FN_gethostbyname,
    FN_gethostbyname2,
    FN_gethostbyname_r,
    FN_gethostbyaddr,
    FN_gethostbyaddr_r,
    FN_getnameinfo,
    FN_send,
    FN_recv,
    FN_sendto,
    FN_recvfrom,
    FN_sendmsg,
    FN_recvmsg,
    FN_sendmmsg,
    FN_recvmmsg,
    FN_read,
    FN_write,
    FN_readv,
    FN_writev,
    FN_accept,
    FN_accept4,
    FN___read_chk,
    FN___recv_chk,
    FN___recvfrom_chk,
    FN_daemon,
    FN_nanosleep,
    FN_clock_nanosleep,
    FN_usleep,
    FN_sleep,
    FN_sem_timedwait,
    FN_sem_clockwait,
    FN_pthread_cond_timedwait,
    FN_pthread_cond_clockwait,
    FN_poll,
    FN_ppoll,
    FN_select,
    FN_pselect,
    FN_epoll_wait,
    FN_epoll_pwait,
    FN_open,
    FN_open64,
    FN___open_2,
    FN___open64_2,
    FN_openat,
    FN_openat64,
    FN_fopen,
    FN_fopen64,
    /* Resolved on first use only: glibc < 2.36 lacks them, and a failed
     * dlsym allocates, so the constructor must not ask for them. */
    FN_FIRST_OPTIONAL,
    FN_arc4random = FN_FIRST_OPTIONAL,
    FN_arc4random_buf,
    FN_arc4random_uniform,
    FN_forkpty, /* in libutil before glibc 2.34 */
    FN__Fork,   /* glibc 2.34 */
    FN_vfork,
    FN_COUNT
};

/* The resolved real functions, filled by the constructor or on first use.
 * A slot only ever goes from NULL to libc's address, and the code it points
 * at was mapped before the store, so a relaxed load is enough. */
extern _Atomic(void *) askew__fn_real[FN_COUNT] ASKEW_HIDDEN;

/* Resolve one slot: NULL while this thread is already inside dlsym
 * (re-entrant resolution) or when libc has no such symbol. Callers then
 * fall back to a raw syscall or fail with the call's own error. */
void *askew__resolve(enum askew_fn fn) ASKEW_HIDDEN;

/* The pass-through fast path: one load and one well-predicted branch. */
static inline void *askew__real(enum askew_fn fn)
{
    void *p = atomic_load_explicit(&askew__fn_real[fn], memory_order_relaxed);
    if (ASKEW_LIKELY(p != NULL))
        return p;
    return askew__resolve(fn);
}

#define REAL(name) ((__typeof__(&name))askew__real(FN_##name))

/* A system call that never goes through an interposer (ours included). */
long askew__raw_syscall(long nr, long a0, long a1, long a2, long a3, long a4,
                        long a5) ASKEW_HIDDEN;

/* Record a refusal in the ring and tell the extension. `ret` is the
 * interposer's return address (the C caller). Preserves errno. */
void askew__refuse(const struct askew_preload_hooks *h, enum askew_violation_kind kind,
                   const char *call, long arg0, long arg1, void *ret) ASKEW_HIDDEN;

/* Call a hook with the switch off, so anything the hook reaches is real. */
int askew__hook_now(const struct askew_preload_hooks *h, int realtime,
                    struct timespec *out) ASKEW_HIDDEN;
int askew__hook_random(const struct askew_preload_hooks *h, void *buf,
                       size_t len) ASKEW_HIDDEN;
/* 1 when the extension says a wake-up or wait is a handoff to refuse; 0
 * without a handoff hook (a table from before ABI 1.2). */
int askew__hook_handoff(const struct askew_preload_hooks *h, int waiting) ASKEW_HIDDEN;
/* -ENOSYS when the extension gave no sleep hook (a table from ABI 1.0). */
int askew__hook_sleep(const struct askew_preload_hooks *h, int64_t ns) ASKEW_HIDDEN;

/* The simulation side of calls that syscall() also dispatches. Each keeps
 * the libc contract of the call it is named after (-1 and errno). */
int askew__sim_clock_gettime(const struct askew_preload_hooks *h, clockid_t id,
                             struct timespec *ts) ASKEW_HIDDEN;
int askew__sim_clock_getres(clockid_t id, struct timespec *res) ASKEW_HIDDEN;
/* 1 when the simulation answers clock `id`, 0 when the real clock must. */
int askew__sim_clock_known(clockid_t id) ASKEW_HIDDEN;
long askew__sim_getrandom(const struct askew_preload_hooks *h, void *buf, size_t len,
                          unsigned int flags) ASKEW_HIDDEN;
/* A sleep on the simulation thread, for clock_nanosleep's arguments: 0 or
 * an errno (returned, not set), as clock_nanosleep has it. `call` names the
 * interposer for the record, `ret` is its return address. */
int askew__sim_sleep(const struct askew_preload_hooks *h, clockid_t clock, int flags,
                     const struct timespec *req, const char *call,
                     void *ret) ASKEW_HIDDEN;
/* 1 when the socket family is refused inside a simulation. */
int askew__sim_family_refused(int family) ASKEW_HIDDEN;
/* 1 when fd is a socket of a refused family (one made before the run, say):
 * I/O on it inside a simulation would reach the real network. */
int askew__sim_fd_refused(int fd) ASKEW_HIDDEN;

/* Debug output under ASKEW_DEBUG only, to fd 2 with an "askew-preload: "
 * prefix; a no-op otherwise. No stdio, no malloc. */
void askew__debug(const char *what, const char *call) ASKEW_HIDDEN;

#endif
