/* SPDX-License-Identifier: Apache-2.0 */
/* Who the process is: getpid, getppid, gettid, gethostname and uname, and
 * the signals that name a process by its pid (kill, sigqueue, tgkill).
 * Inside a run each node is a machine of its own: its hostname is the
 * world's name for it and its ids are seeded and stable for the run
 * (hooks->identity, the extension's), so a log line's pid or hostname
 * replays on any machine. The interpreter's own getpid and gettid stay the
 * host's (hooks->interp: CPython 3.11's asyncio checks the running loop's
 * pid on every lookup, in every node). A signal to the node's own pid goes
 * to this process; one to any other process would reach outside the run
 * and is refused (EPERM), recorded. Outside a run, or when the extension
 * gives no identity, every call is libc's. */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "hook_identity.h"
#include "internal.h"

/* glibc >= 2.30 declares gettid and tgkill; older headers do not. */
pid_t gettid(void);
int tgkill(pid_t tgid, pid_t tid, int sig);

static long raw_getpid(void)
{
    return askew__raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

static long raw_gettid(void)
{
    return askew__raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

/* The node's identity, or 0 when the host's stands. */
static int node_identity(const struct askew_preload_hooks *h, struct askew_identity *id)
{
    int saved = errno;
    int ok = askew__hook_identity(h, id) == 0;
    errno = saved;
    return ok;
}

long askew__sim_pid(const struct askew_preload_hooks *h)
{
    struct askew_identity id;
    return node_identity(h, &id) ? id.pid : -1;
}

long askew__sim_getpid(const struct askew_preload_hooks *h, const void *ret)
{
    struct askew_identity id;
    if (askew__interp_caller(h, ret) || !node_identity(h, &id))
        return raw_getpid();
    return id.pid;
}

long askew__sim_getppid(const struct askew_preload_hooks *h)
{
    struct askew_identity id;
    if (!node_identity(h, &id))
        return askew__raw_syscall(SYS_getppid, 0, 0, 0, 0, 0, 0);
    return id.ppid;
}

/* The simulation thread is the node's main thread: its tid is the pid. */
long askew__sim_gettid(const struct askew_preload_hooks *h, const void *ret)
{
    struct askew_identity id;
    if (askew__interp_caller(h, ret) || !node_identity(h, &id))
        return raw_gettid();
    return id.pid;
}

long askew__sim_signal_target(const struct askew_preload_hooks *h, long pid,
                              const char *call, void *ret)
{
    const long self = raw_getpid();
    if (pid == self)
        return self;
    if (pid > 0 && pid == askew__sim_pid(h))
        return self;
    /* Another process, a process group (0, -pgid) or every process (-1). */
    return askew__refuse_errno(h, ASKEW_VIOLATION_IDENTITY, call, pid, 0, ret, EPERM);
}

long askew__sim_thread_target(const struct askew_preload_hooks *h, long tid)
{
    return tid > 0 && tid == askew__sim_pid(h) ? raw_gettid() : tid;
}

ASKEW_EXPORT pid_t getpid(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        pid_t (*real)(void) = REAL(getpid);
        if (ASKEW_LIKELY(real != NULL))
            return real();
        return (pid_t)raw_getpid();
    }
    return (pid_t)askew__sim_getpid(h, __builtin_return_address(0));
}

ASKEW_EXPORT pid_t getppid(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        pid_t (*real)(void) = REAL(getppid);
        if (ASKEW_LIKELY(real != NULL))
            return real();
        return (pid_t)askew__raw_syscall(SYS_getppid, 0, 0, 0, 0, 0, 0);
    }
    return (pid_t)askew__sim_getppid(h);
}

ASKEW_EXPORT pid_t gettid(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        pid_t (*real)(void) = REAL(gettid);
        if (ASKEW_LIKELY(real != NULL))
            return real();
        return (pid_t)raw_gettid();
    }
    return (pid_t)askew__sim_gettid(h, __builtin_return_address(0));
}

ASKEW_EXPORT int gethostname(char *name, size_t len)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    struct askew_identity id;
    if (ASKEW_LIKELY(h == NULL) || !node_identity(h, &id)) {
        int (*real)(char *, size_t) = REAL(gethostname);
        if (ASKEW_LIKELY(real != NULL))
            return real(name, len);
        struct utsname u;
        if (askew__raw_syscall(SYS_uname, (long)&u, 0, 0, 0, 0, 0) != 0)
            return -1;
        memcpy(id.hostname, u.nodename, sizeof(id.hostname));
        id.hostname[sizeof(id.hostname) - 1] = '\0';
    }
    /* glibc's contract: the name truncated and ENAMETOOLONG when it does
     * not fit with its NUL. */
    const size_t n = strlen(id.hostname) + 1;
    memcpy(name, id.hostname, n < len ? n : len);
    if (n > len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

ASKEW_EXPORT int uname(struct utsname *buf)
{
    int (*real)(struct utsname *) = REAL(uname);
    int rc = ASKEW_LIKELY(real != NULL)
                 ? real(buf)
                 : (int)askew__raw_syscall(SYS_uname, (long)buf, 0, 0, 0, 0, 0);
    const struct askew_preload_hooks *h = askew__t_hooks;
    struct askew_identity id;
    if (ASKEW_UNLIKELY(h != NULL) && rc == 0 && node_identity(h, &id)) {
        memset(buf->nodename, 0, sizeof(buf->nodename));
        memcpy(buf->nodename, id.hostname,
               strnlen(id.hostname, sizeof(buf->nodename) - 1));
    }
    return rc;
}

ASKEW_EXPORT int kill(pid_t pid, int sig)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL)) {
        long to = askew__sim_signal_target(h, pid, "kill", __builtin_return_address(0));
        if (to < 0)
            return -1;
        pid = (pid_t)to;
    }
    int (*real)(pid_t, int) = REAL(kill);
    if (ASKEW_LIKELY(real != NULL))
        return real(pid, sig);
    return (int)askew__raw_syscall(SYS_kill, pid, sig, 0, 0, 0, 0);
}

ASKEW_EXPORT int sigqueue(pid_t pid, int sig, const union sigval value)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL)) {
        long to =
            askew__sim_signal_target(h, pid, "sigqueue", __builtin_return_address(0));
        if (to < 0)
            return -1;
        pid = (pid_t)to;
    }
    int (*real)(pid_t, int, const union sigval) = REAL(sigqueue);
    if (ASKEW_LIKELY(real != NULL))
        return real(pid, sig, value);
    errno = EAGAIN; /* the siginfo glibc would build is its own */
    return -1;
}

ASKEW_EXPORT int tgkill(pid_t tgid, pid_t tid, int sig)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL)) {
        long to =
            askew__sim_signal_target(h, tgid, "tgkill", __builtin_return_address(0));
        if (to < 0)
            return -1;
        tgid = (pid_t)to;
        tid = (pid_t)askew__sim_thread_target(h, tid);
    }
    int (*real)(pid_t, pid_t, int) = REAL(tgkill);
    if (ASKEW_LIKELY(real != NULL))
        return real(tgid, tid, sig);
    return (int)askew__raw_syscall(SYS_tgkill, tgid, tid, sig, 0, 0, 0);
}
