/* SPDX-License-Identifier: Apache-2.0 */
/* Processes: fork, _Fork, vfork, forkpty, daemon, posix_spawn(p), the exec
 * family, system and popen. Inside a run each is refused (-1 with EAGAIN,
 * the spawn error code, or NULL) and recorded, because a child is real
 * concurrency and a real pid. Outside a run they forward to libc. vfork is
 * a jump, not a call: a C wrapper cannot vfork safely (the child would
 * return through the wrapper's frame on the parent's shared stack), so a
 * few lines of assembly ask a C function where to go and jump there with
 * the caller's own stack and return address. */
#include <pty.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* More arguments than any variadic exec call site plausibly has; the
 * vector lives on the stack, as glibc's own execl does it. */
#define EXECL_MAX_ARGS 4096

/* -1 with EAGAIN, recorded; spawn's error-code form records with RECORD. */
#define REFUSE(h, call, a0)                                                            \
    ASKEW_REFUSE((h), ASKEW_VIOLATION_PROCESS, (call), (a0), 0, EAGAIN)
#define RECORD(h, call) ASKEW_RECORD((h), ASKEW_VIOLATION_PROCESS, (call), 0, 0)

static pid_t real_fork(void)
{
    pid_t (*real)(void) = REAL(fork);
    if (ASKEW_LIKELY(real != NULL))
        return real();
    errno = EAGAIN;
    return -1;
}

ASKEW_EXPORT pid_t fork(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return real_fork();
    return REFUSE(h, "fork", 0);
}

/* glibc >= 2.34 declares it; older headers do not. */
pid_t _Fork(void);

ASKEW_EXPORT pid_t _Fork(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        pid_t (*real)(void) = REAL(_Fork);
        if (ASKEW_LIKELY(real != NULL))
            return real();
        return real_fork();
    }
    return REFUSE(h, "_Fork", 0);
}

/* glibc forks inside forkpty and daemon through its own internal fork,
 * which the fork interposer never sees (os.forkpty, pty.fork). */
ASKEW_EXPORT int forkpty(int *amaster, char *name, const struct termios *termp,
                         const struct winsize *winp)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        __typeof__(&forkpty) real = REAL(forkpty);
        if (ASKEW_LIKELY(real != NULL))
            return real(amaster, name, termp, winp);
        errno = ENOSYS;
        return -1;
    }
    return REFUSE(h, "forkpty", 0);
}

ASKEW_EXPORT int daemon(int nochdir, int noclose)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(int, int) = REAL(daemon);
        if (ASKEW_LIKELY(real != NULL))
            return real(nochdir, noclose);
        errno = EAGAIN;
        return -1;
    }
    return REFUSE(h, "daemon", 0);
}

/* What vfork jumps to, called as if by vfork's own caller. */
__attribute__((used)) static pid_t vfork_refused(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (h != NULL)
        return REFUSE(h, "vfork", 0);
    errno = EAGAIN;
    return -1;
}

__attribute__((used)) static pid_t vfork_as_fork(void)
{
    return real_fork();
}

/* Where vfork goes: libc's vfork outside a run (real vfork, no page-table
 * copy, which is what makes subprocess fast from a large process), the
 * refusal inside one. Called from the stub below with nothing of the
 * caller's on the stack but its return address, so it may not touch the
 * argument registers vfork does not have anyway. */
__attribute__((used)) static void *vfork_target(void)
{
    if (ASKEW_UNLIKELY(askew__t_hooks != NULL))
        return (void *)&vfork_refused;
    void *real = askew__real(FN_vfork);
    return real != NULL ? real : (void *)&vfork_as_fork;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        "vfork:\n"
        "    .cfi_startproc\n"
        "    subq $8, %rsp\n" /* align the stack for the call */
        "    .cfi_adjust_cfa_offset 8\n"
        "    call vfork_target\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    jmp *%rax\n" /* the caller's return address is on top again */
        "    .cfi_endproc\n"
        ".size vfork, .-vfork\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, %function\n"
        "vfork:\n"
        "    .cfi_startproc\n"
        "    stp x29, x30, [sp, #-16]!\n"
        "    .cfi_def_cfa_offset 16\n"
        "    .cfi_offset 29, -16\n"
        "    .cfi_offset 30, -8\n"
        "    mov x29, sp\n"
        "    bl vfork_target\n"
        "    ldp x29, x30, [sp], #16\n"
        "    .cfi_def_cfa_offset 0\n"
        "    br x0\n" /* x30 is the caller's return address again */
        "    .cfi_endproc\n"
        ".size vfork, .-vfork\n");
#else
/* No stub for this architecture: vfork becomes fork outside a run. */
ASKEW_EXPORT pid_t vfork(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return real_fork();
    return REFUSE(h, "vfork", 0);
}
#endif

ASKEW_EXPORT int posix_spawn(pid_t *restrict pid, const char *restrict path,
                             const posix_spawn_file_actions_t *fa,
                             const posix_spawnattr_t *restrict attr,
                             char *const argv[restrict], char *const envp[restrict])
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        __typeof__(&posix_spawn) real = REAL(posix_spawn);
        if (ASKEW_LIKELY(real != NULL))
            return real(pid, path, fa, attr, argv, envp);
        return EAGAIN;
    }
    RECORD(h, "posix_spawn");
    return EAGAIN;
}

ASKEW_EXPORT int posix_spawnp(pid_t *restrict pid, const char *restrict file,
                              const posix_spawn_file_actions_t *fa,
                              const posix_spawnattr_t *restrict attr,
                              char *const argv[restrict], char *const envp[restrict])
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        __typeof__(&posix_spawnp) real = REAL(posix_spawnp);
        if (ASKEW_LIKELY(real != NULL))
            return real(pid, file, fa, attr, argv, envp);
        return EAGAIN;
    }
    RECORD(h, "posix_spawnp");
    return EAGAIN;
}

static int real_execve(const char *path, char *const argv[], char *const envp[])
{
    int (*real)(const char *, char *const[], char *const[]) = REAL(execve);
    if (ASKEW_LIKELY(real != NULL))
        return real(path, argv, envp);
    return (int)askew__raw_syscall(SYS_execve, (long)path, (long)argv, (long)envp, 0, 0,
                                   0);
}

static int real_execvp(const char *file, char *const argv[])
{
    int (*real)(const char *, char *const[]) = REAL(execvp);
    if (ASKEW_LIKELY(real != NULL))
        return real(file, argv);
    errno = EAGAIN;
    return -1;
}

static int real_execvpe(const char *file, char *const argv[], char *const envp[])
{
    int (*real)(const char *, char *const[], char *const[]) = REAL(execvpe);
    if (ASKEW_LIKELY(real != NULL))
        return real(file, argv, envp);
    errno = EAGAIN;
    return -1;
}

ASKEW_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return real_execve(path, argv, envp);
    return REFUSE(h, "execve", 0);
}

ASKEW_EXPORT int execv(const char *path, char *const argv[])
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(const char *, char *const[]) = REAL(execv);
        if (ASKEW_LIKELY(real != NULL))
            return real(path, argv);
        return real_execve(path, argv, environ);
    }
    return REFUSE(h, "execv", 0);
}

ASKEW_EXPORT int execvp(const char *file, char *const argv[])
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return real_execvp(file, argv);
    return REFUSE(h, "execvp", 0);
}

ASKEW_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return real_execvpe(file, argv, envp);
    return REFUSE(h, "execvpe", 0);
}

ASKEW_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(int, char *const[], char *const[]) = REAL(fexecve);
        if (ASKEW_LIKELY(real != NULL))
            return real(fd, argv, envp);
        errno = EAGAIN;
        return -1;
    }
    return REFUSE(h, "fexecve", fd);
}

/* The l-forms are variadic; glibc implements them with its internal
 * execve, which we would never see, so they are interposed here and
 * rebuilt into a vector for the v-form. */
static int collect(const char *arg0, va_list ap, char **argv, int max)
{
    int n = 0;
    argv[n++] = (char *)arg0;
    while (argv[n - 1] != NULL) {
        if (n >= max)
            return -1;
        argv[n++] = va_arg(ap, char *);
    }
    return n;
}

/* The list forms of exec share one body: refused inside a run; outside it,
 * their arguments gathered into an argv for the vector form. `caller` is the
 * exported function's return address, so a refusal names the C caller. */
enum exec_list_kind { EXEC_L, EXEC_LP, EXEC_LE };

static int exec_list(enum exec_list_kind kind, const char *name, const char *target,
                     const char *arg, va_list ap, void *caller)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL))
        return askew__refuse_errno(h, ASKEW_VIOLATION_PROCESS, name, 0, 0, caller,
                                   EAGAIN);
    char *argv[EXECL_MAX_ARGS];
    const int n = collect(arg, ap, argv, EXECL_MAX_ARGS);
    if (n < 0) {
        errno = E2BIG;
        return -1;
    }
    if (kind == EXEC_LP)
        return real_execvp(target, argv);
    char *const *envp = kind == EXEC_LE ? va_arg(ap, char *const *) : environ;
    return real_execve(target, argv, envp);
}

ASKEW_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    const int rc =
        exec_list(EXEC_L, "execl", path, arg, ap, __builtin_return_address(0));
    va_end(ap);
    return rc;
}

ASKEW_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    const int rc =
        exec_list(EXEC_LP, "execlp", file, arg, ap, __builtin_return_address(0));
    va_end(ap);
    return rc;
}

ASKEW_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    const int rc =
        exec_list(EXEC_LE, "execle", path, arg, ap, __builtin_return_address(0));
    va_end(ap);
    return rc;
}

ASKEW_EXPORT int system(const char *command)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(const char *) = REAL(system);
        if (ASKEW_LIKELY(real != NULL))
            return real(command);
        errno = EAGAIN;
        return -1;
    }
    return REFUSE(h, "system", 0);
}

ASKEW_EXPORT FILE *popen(const char *command, const char *type)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        FILE *(*real)(const char *, const char *) = REAL(popen);
        if (ASKEW_LIKELY(real != NULL))
            return real(command, type);
        errno = EAGAIN;
        return NULL;
    }
    (void)REFUSE(h, "popen", 0);
    return NULL;
}
