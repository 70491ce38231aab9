/* SPDX-License-Identifier: Apache-2.0 */
/* A refusal must never kill the process silently. C code often treats a
 * refused call as impossible and aborts (a C++ std::thread refused inside a
 * library, then std::terminate): the whole test session would die with no
 * seed. So from a run's first refusal until it leaves, the fatal signals
 * (SIGABRT, which abort and std::terminate raise, and the crashes SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGSYS) first print the run's seed, the refused
 * call and the replay command to stderr (the real one: pytest's capture of
 * fd 2 dies with the process, so the plugin hands down a copy taken
 * before it began), and leave the same as a record
 * in the directory the extension names (the pytest plugin reads it on its
 * next start: docs/preload.md), then go on to whatever handler was there
 * (faulthandler's, or the default death). The handler uses only raw system
 * calls: no stdio, no malloc, no lock. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook_death.h"
#include "internal.h"

static const int fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS};
static const char *const fatal_names[] = {"SIGABRT", "SIGSEGV", "SIGBUS",
                                          "SIGILL",  "SIGFPE",  "SIGSYS"};
#define FATAL_COUNT (sizeof(fatal) / sizeof(fatal[0]))

static struct sigaction before[FATAL_COUNT];
static int armed;
/* The run's seed and note, taken at arm: the handler reads no hooks table. */
static uint64_t death_seed;
static const char *death_note;

/* ---- async-signal-safe output ------------------------------------------ */

static void put_n(int fd, const char *s, size_t n)
{
    while (n > 0) {
        long w = askew__raw_syscall(SYS_write, fd, (long)s, (long)n, 0, 0, 0);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void put(int fd, const char *s)
{
    put_n(fd, s, strlen(s));
}

/* v in decimal into buf (at least 21 bytes); returns buf. */
static const char *decimal(uint64_t v, char *buf)
{
    char tmp[21];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return buf;
}

/* The value of "key=..." among the note's lines, and its length; NULL when
 * the note has no such line. */
static const char *note_value(const char *key, size_t *len)
{
    const size_t k = strlen(key);
    for (const char *p = death_note; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        const size_t line = nl != NULL ? (size_t)(nl - p) : strlen(p);
        if (line > k && strncmp(p, key, k) == 0 && p[k] == '=') {
            *len = line - k - 1;
            return p + k + 1;
        }
        p += line + (nl != NULL);
    }
    return NULL;
}

/* A note's value with every "{seed}" written as the seed. */
static void put_with_seed(int fd, const char *s, size_t n)
{
    char num[24];
    decimal(death_seed, num);
    while (n > 0) {
        if (n >= 6 && strncmp(s, "{seed}", 6) == 0) {
            put(fd, num);
            s += 6;
            n -= 6;
            continue;
        }
        put_n(fd, s, 1);
        s++;
        n--;
    }
}

/* ---- the record for the next session -------------------------------------- */

static long mkdir_raw(const char *path)
{
    return askew__raw_syscall(SYS_mkdirat, AT_FDCWD, (long)path, 0777, 0, 0, 0);
}

/* <dir>/crash-<pid>-<seed>.txt, written whole (a temporary name, then a
 * rename): path holds it on success. */
static int write_record(int sig, const char *refused, char *path, size_t size)
{
    size_t dlen = 0;
    const char *dir = note_value("dir", &dlen);
    char pid[24], seed[24], num[24];
    if (dir == NULL || dlen == 0 || dlen + 64 > size)
        return -1;
    decimal((uint64_t)askew__raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0), pid);
    decimal(death_seed, seed);
    memcpy(path, dir, dlen);
    path[dlen] = '\0';
    /* The database's directory may not exist yet: make it and its parent. */
    char *slash = strrchr(path, '/');
    if (slash != NULL && slash != path) {
        *slash = '\0';
        (void)mkdir_raw(path);
        *slash = '/';
    }
    (void)mkdir_raw(path);
    char tmp[4200];
    size_t n = dlen;
    const char *parts[] = {"/crash-", pid, "-", seed, ".txt"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        size_t l = strlen(parts[i]);
        memcpy(path + n, parts[i], l);
        n += l;
    }
    path[n] = '\0';
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    int fd =
        (int)askew__raw_syscall(SYS_openat, AT_FDCWD, (long)tmp,
                                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
    if (fd < 0)
        return -1;
    put(fd, "seed=");
    put(fd, seed);
    put(fd, "\nsignal=");
    put(fd, decimal((uint64_t)sig, num));
    put(fd, "\nrefused=");
    put(fd, refused != NULL ? refused : "");
    put(fd, "\n");
    static const char *const keys[] = {"test", "replay"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        size_t len = 0;
        const char *v = note_value(keys[i], &len);
        if (v == NULL)
            continue;
        put(fd, keys[i]);
        put(fd, "=");
        put_with_seed(fd, v, len);
        put(fd, "\n");
    }
    (void)askew__raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
    if (askew__raw_syscall(SYS_renameat, AT_FDCWD, (long)tmp, AT_FDCWD, (long)path, 0,
                           0) != 0)
        return -1;
    return 0;
}

/* ---- the handler ---------------------------------------------------------- */

/* Where the report goes: the note's "fd" (a copy of stderr taken before
 * pytest captured fd 2, whose capture dies with the process), else fd 2. */
static int report_fd(void)
{
    size_t len = 0;
    const char *v = note_value("fd", &len);
    int fd = 0;
    for (size_t i = 0; v != NULL && i < len && i < 9; i++) {
        if (v[i] < '0' || v[i] > '9')
            return 2;
        fd = fd * 10 + (v[i] - '0');
    }
    return v != NULL && len > 0 ? fd : 2;
}

static void report(int sig, const char *name)
{
    const char *refused = askew__first_refusal();
    const int out = report_fd();
    char num[24];
    put(out, "askew: the process is dying of ");
    put(out, name);
    put(out, " (signal ");
    put(out, decimal((uint64_t)sig, num));
    put(out, ") inside a simulation, after the preload refused ");
    put(out, refused != NULL ? refused : "a call");
    put(out, "()\naskew:   seed: ");
    put(out, decimal(death_seed, num));
    size_t len = 0;
    const char *replay = note_value("replay", &len);
    put(out, "\naskew:   replay: ");
    if (replay != NULL) {
        put_with_seed(out, replay, len);
    } else {
        put(out, "the same command with ASKEW_SEED=");
        put(out, num);
        put(out, " ASKEW_ITERATIONS=1");
    }
    char path[4200];
    if (write_record(sig, refused, path, sizeof(path)) == 0) {
        put(out, "\naskew:   recorded for the next session: ");
        put(out, path);
    }
    put(out, "\n");
}

static void on_fatal(int sig, siginfo_t *info, void *context)
{
    (void)info;
    (void)context;
    const int saved = errno;
    for (size_t i = 0; i < FATAL_COUNT; i++) {
        if (fatal[i] != sig)
            continue;
        if (armed) {
            armed = 0; /* one report, even if the report itself faults */
            report(sig, fatal_names[i]);
        }
        /* What was there before handles it next: the signal is blocked
         * while this runs, so it is delivered again as this returns (a
         * fault would also recur at its instruction). */
        (void)sigaction(sig, &before[i], NULL);
        (void)askew__raw_syscall(
            SYS_tgkill, askew__raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0),
            askew__raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
    }
    errno = saved;
}

void askew__death_arm(const struct askew_preload_hooks *h)
{
    if (armed || !askew__hooks_have(h, ASKEW_HOOKS_END(note)))
        return;
    death_seed = h->seed;
    death_note = h->note;
    struct sigaction ours;
    memset(&ours, 0, sizeof(ours));
    ours.sa_sigaction = on_fatal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset(&ours.sa_mask);
    for (size_t i = 0; i < FATAL_COUNT; i++)
        (void)sigaction(fatal[i], &ours, &before[i]);
    armed = 1;
}

void askew__death_disarm(void)
{
    if (!armed)
        return;
    armed = 0;
    for (size_t i = 0; i < FATAL_COUNT; i++) {
        struct sigaction now;
        if (sigaction(fatal[i], NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 &&
            now.sa_sigaction == on_fatal)
            (void)sigaction(fatal[i], &before[i], NULL);
    }
}
