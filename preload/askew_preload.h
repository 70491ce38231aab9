/* SPDX-License-Identifier: Apache-2.0 */
/* The control ABI between libaskew-preload.so and askew._core: the one
 * header the two share, and nothing at link time. The extension finds the
 * preload with dlsym(RTLD_DEFAULT, "askew_preload_get_api") and hands it a
 * hooks table on the simulation thread; the preload calls the hooks for
 * virtual time and entropy and records refusals. Plain C, no Python. */
#ifndef ASKEW_PRELOAD_H
#define ASKEW_PRELOAD_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ASKEW_PRELOAD_ABI_MAJOR 1u
#define ASKEW_PRELOAD_ABI_MINOR 5u
#define ASKEW_PRELOAD_GET_API   "askew_preload_get_api"

/* The default wall epoch, Unix seconds: 2020-01-01T00:00:00Z. The wall
 * clock inside a run is the run's epoch (RunConfig.wall_epoch, this one
 * unless set) plus virtual time (plus the node's skew); the preload reads it
 * whole through the `now` hook and never adds an epoch itself. */
#define ASKEW_WALL_EPOCH_S 1577836800LL

/* The clocks `now` answers. CPU time is the running node's: the CPU time
 * the scheduler charged to the steps it ran. */
#define ASKEW_CLOCK_MONOTONIC 0
#define ASKEW_CLOCK_REALTIME  1
#define ASKEW_CLOCK_CPUTIME   2

/* What the extension provides; every hook runs on the simulation thread,
 * possibly without the GIL, and must not call Python or any interposed
 * function. Each returns 0 or a negative errno. The table only grows at its
 * end, with a minor ABI bump: `size` says which hooks a caller knows, and
 * the preload treats every hook past it as NULL. */
/* Since ABI 1.3: file calls on a node's simulated disk (the `disk` hook).
 * Every fd the hook hands out is at least ASKEW_DISK_FD_BASE, which the
 * kernel never hands out (an fd is below RLIMIT_NOFILE, itself at most
 * fs.nr_open: 2^20 by default), so the preload tells a simulated fd from a
 * real one by one comparison, and a simulated fd that reaches a call the
 * preload does not interpose fails there with EBADF, never touching a file. */
#define ASKEW_DISK_FD_BASE 0x40000000
/* A simulated fd is ASKEW_DISK_FD_BASE + (node << ASKEW_DISK_FD_NODE_SHIFT)
 * + the engine disk's handle: one numbering for Python's descriptors
 * (ext/disk_route.c) and C's (ext/preload_disk.c), so either side's fd works on
 * the other. The node's bits keep every fd below 2^31. */
#define ASKEW_DISK_FD_NODE_SHIFT  16
#define ASKEW_DISK_FD_HANDLE_MASK ((1 << ASKEW_DISK_FD_NODE_SHIFT) - 1)
#define ASKEW_DISK_FD_NODES_MAX   16384

/* The one decoding of that numbering, for both sides: 1 when fd is a
 * simulated fd, with its node and the disk's handle; 0 for a real one. It
 * says nothing of whether that node runs or that handle is open. */
static inline int askew_disk_fd_decode(int64_t fd, int64_t *node, int *handle)
{
    if (fd < ASKEW_DISK_FD_BASE)
        return 0;
    *node = (fd - ASKEW_DISK_FD_BASE) >> ASKEW_DISK_FD_NODE_SHIFT;
    *handle = (int)((fd - ASKEW_DISK_FD_BASE) & ASKEW_DISK_FD_HANDLE_MASK);
    return 1;
}

/* The simulated fd of `handle` on `node`'s disk (node below
 * ASKEW_DISK_FD_NODES_MAX, handle within ASKEW_DISK_FD_HANDLE_MASK). */
static inline int askew_disk_fd_encode(int64_t node, int handle)
{
    return (int)(ASKEW_DISK_FD_BASE + ((uint32_t)node << ASKEW_DISK_FD_NODE_SHIFT) +
                 (uint32_t)handle);
}

/* What a disk call asks. Path calls carry `path` (and `dirfd`: AT_FDCWD, a
 * simulated directory fd, or a real one); fd calls carry `fd`. */
enum askew_disk_call_op {
    ASKEW_DCALL_OPEN = 1,     /* path, flags, mode: a new fd */
    ASKEW_DCALL_CLOSE = 2,    /* fd */
    ASKEW_DCALL_READ = 3,     /* fd, buf, len, off (-1: at the fd's offset) */
    ASKEW_DCALL_WRITE = 4,    /* fd, buf, len, off (-1: at the fd's offset) */
    ASKEW_DCALL_SEEK = 5,     /* fd, off, flags = whence: the new offset */
    ASKEW_DCALL_SYNC = 6,     /* fd, flags = 1 for fdatasync */
    ASKEW_DCALL_TRUNCATE = 7, /* fd, or path; off = the length */
    ASKEW_DCALL_STAT = 8,     /* fd, or path; st */
    ASKEW_DCALL_ACCESS = 9,   /* path, mode = access's mode */
    ASKEW_DCALL_UNLINK = 10,  /* path, flags = AT_REMOVEDIR for rmdir */
    ASKEW_DCALL_RENAME = 11,  /* path, dirfd, path2, dirfd2, flags = renameat2's */
    ASKEW_DCALL_MKDIR = 12,   /* path, mode */
    ASKEW_DCALL_FCNTL = 13,   /* fd, flags = cmd, off = the int argument, lock */
    ASKEW_DCALL_ROUTE = 14    /* path: 0 when it is on the node's disk */
};

/* stat's fields as the disk has them; the preload fills struct stat and
 * struct statx from it. */
struct askew_disk_stat_out {
    uint64_t dev;
    uint64_t ino;
    uint64_t size;
    uint64_t blocks; /* 512-byte blocks */
    uint32_t mode;   /* S_IFREG or S_IFDIR | permission bits */
    uint32_t nlink;
    int64_t mtime_ns;
};

/* struct flock, whatever off_t the caller was built with. */
struct askew_disk_flock {
    int32_t type;   /* F_RDLCK, F_WRLCK, F_UNLCK */
    int32_t whence; /* SEEK_SET, SEEK_CUR, SEEK_END */
    int64_t start;
    int64_t len; /* 0: to the end of the file, however it grows */
    int32_t pid; /* F_GETLK: the holder's */
};

struct askew_disk_call {
    uint32_t op; /* enum askew_disk_call_op */
    int32_t fd;  /* the simulated fd, or a path's directory fd */
    int32_t dirfd2;
    int32_t flags;
    uint32_t mode;
    const char *path;
    const char *path2;
    void *buf;
    uint64_t len;
    int64_t off;
    struct askew_disk_stat_out *st;
    struct askew_disk_flock *lock;
};

/* The handoff hook's `waiting` for a post that wakes nobody (ABI 1.4). */
#define ASKEW_HANDOFF_POST_IDLE 2

/* The disk hook's answers besides a result >= 0 or a negative errno. */
#define ASKEW_DISK_PASS   INT64_MIN       /* not on a simulated disk: libc's call */
#define ASKEW_DISK_REFUSE (INT64_MIN + 1) /* a disk this node cannot reach: refused */

/* Since ABI 1.4: who the running node is, as getpid, getppid, gettid,
 * gethostname and uname report it inside a run (the identity hook). */
#define ASKEW_HOSTNAME_MAX 64 /* HOST_NAME_MAX on Linux */
struct askew_identity {
    int32_t pid;  /* getpid, and gettid: the node's process and main thread */
    int32_t ppid; /* getppid */
    char hostname[ASKEW_HOSTNAME_MAX + 1]; /* NUL-terminated */
};

/* Since ABI 1.4: a range of code addresses [lo, hi). */
struct askew_code_range {
    uintptr_t lo, hi;
};
#define ASKEW_INTERP_RANGES 4

/* Since ABI 1.5: C threads of the run (preload/hook_cthread.c, hook_sync.c).
 * A thread C code starts with pthread_create inside a run is an actor of the
 * run's baton, as a Python thread of the run is: it runs only while it holds
 * the baton, and the baton moves only at a switch point, where the preload
 * calls the `thread` hook. Every hook call below is one of these. */
enum askew_thread_op {
    /* A new actor for a thread the caller is about to start: its id in
     * `target`; -EAGAIN when this run takes no C thread (then the preload
     * refuses pthread_create as before 1.5). */
    ASKEW_THREAD_CREATE = 1,
    /* The thread of actor `target` was started (`status` 0) or could not be
     * (`status` its error, and the actor is done): runnable, then a switch
     * point of the caller. */
    ASKEW_THREAD_START = 2,
    /* On the new thread, first: until it holds the baton. */
    ASKEW_THREAD_BEGIN = 3,
    /* A switch point that does not wait (a lock taken, a trylock). */
    ASKEW_THREAD_SWITCH = 4,
    /* Wait on `key` (of kind `kind`) until woken, or until `timeout_ns` of
     * the node's clock pass (-1: no timeout); the waiters of `release` (a
     * condvar wait's mutex, or 0) are woken first, with no switch between.
     * -ETIMEDOUT when the time passed. A sleep is a wait on key 0. */
    ASKEW_THREAD_BLOCK = 5,
    /* Wake `count` waiters of `key` (ASKEW_THREAD_WAKE_ALL: all), in the order
     * they began to wait, then a switch point. */
    ASKEW_THREAD_WAKE = 6,
    /* Until the thread of actor `target` has exited (a switch point even
     * when it has). */
    ASKEW_THREAD_JOIN = 7,
    /* The caller's thread ends: the baton goes on, and the call returns
     * without it. */
    ASKEW_THREAD_EXIT = 8
};

/* What a BLOCK or WAKE key is, for the deadlock report. */
enum askew_sync_kind {
    ASKEW_SYNC_MUTEX = 1,
    ASKEW_SYNC_COND = 2,
    ASKEW_SYNC_SEM = 3,
    ASKEW_SYNC_SLEEP = 4
};

/* A WAKE of every waiter. */
#define ASKEW_THREAD_WAKE_ALL UINT32_MAX
/* The loop's actor: the simulation thread. */
#define ASKEW_THREAD_LOOP 0u
/* The most C threads of one run alive (started and not yet joined, or
 * detached and not yet exited) at a time; one more is refused by name. */
#define ASKEW_CTHREADS_MAX 64

struct askew_thread_call {
    uint32_t op;        /* enum askew_thread_op */
    uint32_t actor;     /* the caller: ASKEW_THREAD_LOOP or its C thread's actor */
    uint32_t target;    /* CREATE (out), START, JOIN: the thread's actor */
    uint32_t kind;      /* BLOCK, WAKE: enum askew_sync_kind */
    uintptr_t key;      /* BLOCK, WAKE: the object's address */
    uintptr_t release;  /* BLOCK: an object released first, or 0 */
    int64_t timeout_ns; /* BLOCK: the longest wait, -1 for none */
    uint32_t count;     /* WAKE */
    int32_t status;     /* START: 0 or pthread_create's error */
    int32_t holder;     /* BLOCK on a mutex: its holder's actor, -1 unknown */
    const char *call;   /* the interposed call: "pthread_mutex_lock" */
    const void *caller; /* the interposer's return address */
};

/* What the thread hook answers besides 0 and -ETIMEDOUT: the caller's
 * thread was killed (its node crashed, or the run ended) and must end now;
 * or (on the loop only) nothing can ever run again: a deadlock, which the
 * extension reports at the end of the step, and the call fails. */
#define ASKEW_THREAD_KILLED   (-ECANCELED)
#define ASKEW_THREAD_DEADLOCK (-EDEADLK)

struct askew_preload_hooks {
    uint32_t size; /* sizeof(struct askew_preload_hooks) */
    void *ctx;
    /* realtime is an ASKEW_CLOCK_* kind: the running node's wall clock, its
     * monotonic clock, or CPU time. */
    int (*now)(void *ctx, int realtime, struct timespec *out);
    int (*random)(void *ctx, void *buf, size_t len);
    /* Called once per recorded refusal, after it is recorded; may schedule
     * a pending call so a spinning caller still sees the error. */
    void (*on_violation)(void *ctx);
    /* Since ABI 1.1. A blocking sleep on the simulation thread: let `ns`
     * (> 0) nanoseconds of the running node's clock pass, as the sleep would
     * on a real loop. A negative errno when the simulation cannot let that
     * much time pass (-EOVERFLOW: past the end of virtual time; -ETIME: past
     * the run's time budget); the preload then refuses and records the
     * sleep, which is what it does with every sleep when this is NULL. */
    int (*sleep)(void *ctx, int64_t ns);
    /* Since ABI 1.2. The simulation thread releases a semaphore (sem_post,
     * which may wake another thread) or is about to wait for another thread
     * (a sem_wait that would block): 1 when that hands work to another
     * thread and must be refused, 0 when it may go on unrecorded. Called on
     * every sem_post inside a run (after the post: the semaphore is never
     * held while the hook runs), so it must be cheap. `waiting` is 1 for
     * the sem_wait; then it may take the GIL. Since ABI 1.4 it is
     * ASKEW_HANDOFF_POST_IDLE for a post that no thread waits on, which can
     * still hand over work a busy thread takes later, but not a result
     * (0 is then a post that wakes a waiting thread). When NULL, no handoff
     * is ever recorded. */
    int (*handoff)(void *ctx, int waiting);
    /* Since ABI 1.3. A file call on the simulation thread for a path, or on
     * a simulated fd: a result >= 0 or a negative errno as the system call
     * would return it, ASKEW_DISK_PASS when the path is not on the running
     * node's disk (libc's call then runs), ASKEW_DISK_REFUSE when it is on
     * a disk the running node cannot reach (another node's mount, or no
     * node runs): the preload refuses and records the call. Never called
     * outside a run: a simulated fd there is EBADF. When NULL (an older
     * table), every path passes and every simulated fd is EBADF. */
    int64_t (*disk)(void *ctx, struct askew_disk_call *call);
    /* Since ABI 1.4. The running node's identity (the test body's when no
     * node runs): 0, or a negative errno, and then the call sees the
     * host's. When NULL, every call sees the host's. */
    int (*identity)(void *ctx, struct askew_identity *out);
    /* Since ABI 1.4: 1 when this enter starts a run (the first since the
     * loop's reset), 0 when it goes on with one (a run is entered again to
     * finish its cancelled tasks). A new run reseeds libc's global
     * generators (rand, random, drand48) from libc_seed and forgets what the
     * last run made (its AF_UNIX addresses, its pipes). */
    uint32_t new_run;
    uint64_t seed;      /* the run's seed, as a death after a refusal names it */
    uint64_t libc_seed; /* the run's stream for libc's global generators */
    /* What a report of a death after a refusal says besides the seed:
     * "key=value" lines (test=<node id>, replay=<command>, where "{seed}"
     * stands for the seed). Static storage the extension keeps unchanged
     * while the run lasts; NULL when there is nothing to say. */
    const char *note;
    /* The interpreter's own code (an empty range ends the list). A call
     * from it is the host's bookkeeping, not the code under test: its
     * getpid is the host's (CPython 3.11's asyncio compares the pid of the
     * running loop with it on every lookup) and its timed condvar waits
     * (the GIL's) last as long in real time as asked. Every other timed
     * condvar wait on the simulation thread costs virtual time. */
    struct askew_code_range interp[ASKEW_INTERP_RANGES];
    /* An object carrying its own random generator (see
     * ASKEW_VIOLATION_OWN_RNG), asked once per object: the code ranges,
     * at most `max`, of its functions whose draws never reach an output
     * (RSA's blinding: the signature is the same whatever is drawn). A
     * clock or entropy read with one of them among its callers is not
     * refused. Returns how many it wrote; may take the GIL. */
    int (*quiet_draws)(void *ctx, const char *path, uintptr_t base,
                       struct askew_code_range *out, int max);
    /* Since ABI 1.5: a switch point of a C thread of the run, or of the
     * simulation thread while the run has C threads (see askew_thread_op).
     * Runs on the calling thread, which holds the baton, possibly without
     * the GIL (it takes it). When NULL, pthread_create is refused. */
    int (*thread)(void *ctx, struct askew_thread_call *call);
    /* Since ABI 1.5: the extension's own code, whose pthread calls (the
     * baton's own mutex and condition variables) are never switch points. */
    struct askew_code_range own;
};

enum askew_violation_kind {
    /* pthread_create, aio; since ABI 1.5, while a run has C threads, an
     * rwlock or barrier wait and a cancel of the run's thread */
    ASKEW_VIOLATION_THREAD = 1,
    ASKEW_VIOLATION_PROCESS = 2, /* fork, vfork, posix_spawn, exec* */
    ASKEW_VIOLATION_SOCKET = 3,  /* socket, connect, bind on real families */
    ASKEW_VIOLATION_DNS = 4,     /* getaddrinfo of a real name */
    ASKEW_VIOLATION_SLEEP = 5,   /* timed waits, poll; sleeps the hook cannot take */
    /* The kernel's entropy past the run's: /proc/sys/kernel/random/uuid, a
     * process's auxiliary vector (ABI 1.3 and before: opening /dev/urandom
     * or /dev/random, whose reads are served since 1.4). */
    ASKEW_VIOLATION_DEVRANDOM = 6,
    ASKEW_VIOLATION_HANDOFF =
        7, /* work handed to another thread (sem_post, sem_wait) */
    /* A clock or entropy read from an object carrying its own OpenSSL (its
     * generator cannot replay); the call itself is answered as usual. */
    ASKEW_VIOLATION_OWN_RNG = 8,
    /* A file call the simulated disk cannot serve: mmap or another call on
     * a simulated fd that the disk does not handle, a path on a disk the
     * running node cannot reach. */
    ASKEW_VIOLATION_DISK = 9,
    /* Since ABI 1.4: a real clock the simulation does not model (the
     * kernel's uptime or a process's times through /proc, a timer armed in
     * real time, a timerfd). */
    ASKEW_VIOLATION_CLOCK = 10,
    /* Since ABI 1.4: the host's identity past the node's (its hostname or
     * boot id through /proc), or a signal to a process outside the run. */
    ASKEW_VIOLATION_IDENTITY = 11
};

#define ASKEW_VIOLATION_FRAMES 8

struct askew_violation {
    uint32_t kind;
    const char *call;                         /* a static string: "pthread_create" */
    uintptr_t frames[ASKEW_VIOLATION_FRAMES]; /* return addresses, caller first */
    uint32_t nframes;
    long arg0;
    long arg1;
};

struct askew_preload_api {
    uint32_t size; /* sizeof(struct askew_preload_api) */
    uint32_t abi_minor;
    /* Activate on the calling thread; -EBUSY if it is active already. */
    int (*enter)(const struct askew_preload_hooks *hooks);
    void (*leave)(void);
    /* Refusals recorded since enter; the newest ASKEW_VIOLATION_RING kept. */
    uint64_t (*violations)(void);
    int (*violation_get)(uint64_t index, struct askew_violation *out);
    /* 0 when the interposers come first in lookup order; else -1 and a
     * message naming what shadows them. */
    int (*self_test)(char *msg, size_t len);
};

#define ASKEW_VIOLATION_RING 16u

/* NULL when abi_major differs. The only non-interposer the library exports. */
const struct askew_preload_api *askew_preload_get_api(uint32_t abi_major);
typedef const struct askew_preload_api *(*askew_preload_get_api_fn)(uint32_t);

#ifdef __cplusplus
}
#endif
#endif
