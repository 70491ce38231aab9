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

/* The on/off switch: non-NULL only on the thread running a simulation, and
 * only outside a hook call (the dispatcher clears it while a hook runs so a
 * hook that reaches an interposed function gets the real one). Static TLS:
 * one %fs-relative load, no __tls_get_addr, async-signal-safe. */
extern __thread const struct askew_preload_hooks *askew__t_hooks
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Every function in preload/fns.def, in its order. Only rows with a slot
 * (EAGER, LATE) are ever resolved through askew__fn_real; the others have
 * an index so that every table made from fns.def has one shape. */
enum askew_fn {
#define ASKEW_FN(name, slot, export, check) FN_##name,
#include "fns.def"
#undef ASKEW_FN
    FN_COUNT
};

/* fns.def's columns as values, for the tables preload.c makes from it. */
#define ASKEW_SLOT_NONE    0
#define ASKEW_SLOT_EAGER   1
#define ASKEW_SLOT_LATE    2
#define ASKEW_SLOT_CALLER  3
#define ASKEW_CHECK_NOSELF 0
#define ASKEW_CHECK_SELF   1

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

/* The one way an interposer refuses a call that reports errors in errno:
 * record it and fail as libc would, -1 with errno = err. `ret` is the
 * interposer's return address. A call that reports its error another way
 * (an error code, NULL, h_errno) records with ASKEW_RECORD and returns that;
 * timed waits that merely time out record without failing. */
static inline int askew__refuse_errno(const struct askew_preload_hooks *h,
                                      enum askew_violation_kind kind, const char *call,
                                      long arg0, long arg1, void *ret, int err)
{
    askew__refuse(h, kind, call, arg0, arg1, ret);
    errno = err;
    return -1;
}

/* The same, in an interposer's own body, naming its caller. */
#define ASKEW_REFUSE(h, kind, call, a0, a1, err)                                       \
    askew__refuse_errno((h), (kind), (call), (a0), (a1), __builtin_return_address(0),  \
                        (err))
#define ASKEW_RECORD(h, kind, call, a0, a1)                                            \
    askew__refuse((h), (kind), (call), (a0), (a1), __builtin_return_address(0))

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
/* ASKEW_DISK_PASS without a disk hook (a table from before ABI 1.3). */
int64_t askew__hook_disk(const struct askew_preload_hooks *h,
                         struct askew_disk_call *call) ASKEW_HIDDEN;

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

/* 1 when `ret` (an interposer's return address) lies in an object that
 * carries its own OpenSSL random generator (hook_ownrng.c); simulation
 * thread only. ASKEW_OWN_RNG records the refusal for a clock or entropy
 * interposer's caller and lets the call be answered as usual. */
int askew__sim_own_rng(const void *ret) ASKEW_HIDDEN;
#define ASKEW_OWN_RNG(h, call)                                                         \
    do {                                                                               \
        if (ASKEW_UNLIKELY(askew__sim_own_rng(__builtin_return_address(0))))           \
            ASKEW_RECORD((h), ASKEW_VIOLATION_OWN_RNG, (call), 0, 0);                  \
    } while (0)

/* Debug output under ASKEW_DEBUG only, to fd 2 with an "askew-preload: "
 * prefix; a no-op otherwise. No stdio, no malloc. */
void askew__debug(const char *what, const char *call) ASKEW_HIDDEN;

#endif
