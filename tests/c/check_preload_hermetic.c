/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for what ABI 1.4 of libaskew-preload.so adds (hermetic runs):
 * the cost of an enter, libc's generators swapped per run, each node's
 * identity, the report of a death after a refusal, the kernel's other
 * clocks and timers, and what an older table still gets. Run under
 * LD_PRELOAD in fork mode, playing the extension with the fixture's hooks,
 * as check_preload.c does; nothing here asserts on how long anything took. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_fixture.h"

pid_t gettid(void);

/* The identity hook: node "db1", pid 4242, ppid 7. */
static int test_identity(void *ctx, struct askew_identity *out)
{
    (void)ctx;
    out->pid = 4242;
    out->ppid = 7;
    snprintf(out->hostname, sizeof(out->hostname), "db1");
    return 0;
}

/* A 1.4 table: the fixture's hooks with a sleep, an identity, a seed. */
static struct askew_preload_hooks hermetic(uint32_t new_run, uint64_t seed)
{
    struct askew_preload_hooks h = sleep_hooks;
    h.identity = test_identity;
    h.new_run = new_run;
    h.seed = seed;
    h.libc_seed = seed * 2654435761u;
    return h;
}

/* Read syscalls this process made so far (/proc/self/io's syscr). */
static long read_syscalls(void)
{
    char buf[512];
    int fd = open("/proc/self/io", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "syscr: ");
    return p != NULL ? atol(p + 7) : -1;
}

START_TEST(test_an_enter_reads_the_stack_bounds_once_per_thread)
{
    /* pthread_getattr_np reads /proc/self/maps for the main thread: once,
     * not at every enter (an empty run cost 2.2 times plain when it did). */
    ck_assert_int_eq(api->enter(&hooks), 0);
    api->leave();
    const long before = read_syscalls();
    if (before < 0)
        return; /* no /proc/self/io here: nothing to count */
    for (int i = 0; i < 50; i++) {
        ck_assert_int_eq(api->enter(&hooks), 0);
        api->leave();
    }
    /* The read of /proc/self/io itself is the one read in between. */
    ck_assert_int_le(read_syscalls() - before, 2);
}
END_TEST

START_TEST(test_libcs_generators_are_the_runs_from_its_start_and_the_hosts_between)
{
    srand(5);
    srand48(5);
    const int host1 = rand();
    const double hostd1 = drand48();
    struct askew_preload_hooks h = hermetic(1, 99);
    ck_assert_int_eq(api->enter(&h), 0);
    const int run1 = rand();
    const double rund1 = drand48();
    api->leave();
    const int host2 = rand();
    h.new_run = 0; /* the same run, entered again: it goes on where it was */
    ck_assert_int_eq(api->enter(&h), 0);
    const int run2 = rand();
    api->leave();
    h.new_run = 1; /* the same seed from its start: the same draws */
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(rand(), run1);
    ck_assert(drand48() == rund1);
    ck_assert_int_eq(rand(), run2);
    api->leave();
    srand(5);
    srand48(5);
    ck_assert_int_eq(rand(), host1);
    ck_assert(drand48() == hostd1);
    ck_assert_int_eq(rand(), host2);
    /* A table from before ABI 1.4 leaves them alone. */
    struct askew_preload_hooks old = sleep_hooks;
    old.size = (uint32_t)offsetof(struct askew_preload_hooks, identity);
    srand(5);
    ck_assert_int_eq(api->enter(&old), 0);
    ck_assert_int_eq(rand(), host1);
    api->leave();
}
END_TEST

START_TEST(test_the_node_has_its_identity_and_a_signal_to_it_reaches_this_process)
{
    const pid_t real = getpid();
    struct utsname host;
    ck_assert_int_eq(uname(&host), 0);
    struct askew_preload_hooks h = hermetic(1, 1);
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(getpid(), 4242);
    ck_assert_int_eq(gettid(), 4242);
    ck_assert_int_eq(getppid(), 7);
    ck_assert_int_eq(syscall(SYS_getpid), 4242);
    char name[16];
    ck_assert_int_eq(gethostname(name, sizeof(name)), 0);
    ck_assert_str_eq(name, "db1");
    ck_assert_int_eq(gethostname(name, 3), -1); /* glibc's contract: truncated */
    ck_assert_int_eq(errno, ENAMETOOLONG);
    struct utsname u;
    ck_assert_int_eq(uname(&u), 0);
    ck_assert_str_eq(u.nodename, "db1");
    ck_assert_str_eq(u.sysname, host.sysname);
    /* /proc/<the node's pid> is this process. */
    char path[64], link[64];
    snprintf(path, sizeof(path), "/proc/%d/status", 4242);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    ck_assert_int_gt(n, 0);
    link[n] = '\0';
    snprintf(path, sizeof(path), "/proc/%d/status", (int)real);
    ck_assert_str_eq(link, path);
    close(fd);
    /* A signal to the node's pid reaches this process; to another, refused. */
    signal(SIGUSR1, SIG_IGN);
    ck_assert_int_eq(kill(4242, SIGUSR1), 0);
    ck_assert_int_eq(kill(real, SIGUSR1), 0);
    ck_assert_int_eq(api->violations(), 0);
    ck_assert_int_eq(kill(1, 0), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_str_eq(last_call(), "kill");
    api->leave();
    ck_assert_int_eq(getpid(), real);
    /* The interpreter's own getpid is the host's (3.11's asyncio). */
    mark_self_as_interp(&h);
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(getpid(), real);
    api->leave();
}
END_TEST

START_TEST(test_without_an_identity_hook_the_host_is_itself)
{
    const pid_t real = getpid();
    char host[65], inside[65];
    gethostname(host, sizeof(host));
    enter();
    ck_assert_int_eq(getpid(), real);
    gethostname(inside, sizeof(inside));
    ck_assert_str_eq(inside, host);
    api->leave();
}
END_TEST

/* Run `body` in a child that enters with `note`; its stderr and status. */
static int die_in_child(const char *note, void (*body)(void), char *err, size_t len)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(p[1], 2);
        struct askew_preload_hooks h = hermetic(1, 31337);
        h.note = note;
        if (api->enter(&h) != 0)
            _exit(3);
        body();
        _exit(0);
    }
    close(p[1]);
    size_t got = 0;
    ssize_t n;
    while (got + 1 < len && (n = read(p[0], err + got, len - 1 - got)) > 0)
        got += (size_t)n;
    err[got] = '\0';
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static void refuse_then_abort(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) == EAGAIN)
        abort();
}

static void abort_without_refusal(void)
{
    abort();
}

START_TEST(test_a_death_after_a_refusal_reports_the_seed_and_leaves_a_record)
{
    char dir[] = "/tmp/askew-death-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char note[512];
    snprintf(note, sizeof(note),
             "test=t.py::test_x\nreplay=ASKEW_SEED={seed} pytest 't.py::test_x'\n"
             "dir=%s/db/crashes\n",
             dir);
    char err[4096];
    const int status = die_in_child(note, refuse_then_abort, err, sizeof(err));
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    ck_assert_ptr_nonnull(strstr(err, "askew: the process is dying of SIGABRT"));
    ck_assert_ptr_nonnull(strstr(err, "refused pthread_create()"));
    ck_assert_ptr_nonnull(strstr(err, "seed: 31337"));
    ck_assert_ptr_nonnull(
        strstr(err, "replay: ASKEW_SEED=31337 pytest 't.py::test_x'"));
    const char *at = strstr(err, "recorded for the next session: ");
    ck_assert_ptr_nonnull(at);
    char path[512];
    snprintf(path, sizeof(path), "%s", at + strlen("recorded for the next session: "));
    path[strcspn(path, "\n")] = '\0';
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char record[1024];
    size_t n = fread(record, 1, sizeof(record) - 1, f);
    record[n] = '\0';
    fclose(f);
    ck_assert_str_eq(
        record, "seed=31337\nsignal=6\nrefused=pthread_create\n"
                "test=t.py::test_x\nreplay=ASKEW_SEED=31337 pytest 't.py::test_x'\n");
    unlink(path);
    /* Without a refusal, a death is none of ours: nothing is said. */
    const int quiet = die_in_child(note, abort_without_refusal, err, sizeof(err));
    ck_assert(WIFSIGNALED(quiet) && WTERMSIG(quiet) == SIGABRT);
    ck_assert_ptr_null(strstr(err, "askew:"));
    snprintf(path, sizeof(path), "%s/db/crashes", dir);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/db", dir);
    rmdir(path);
    rmdir(dir);
}
END_TEST

START_TEST(test_the_handlers_from_before_the_refusal_come_back_at_leave)
{
    struct sigaction before, after;
    sigaction(SIGSEGV, NULL, &before);
    struct askew_preload_hooks h = hermetic(1, 1);
    ck_assert_int_eq(api->enter(&h), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), EAGAIN);
    sigaction(SIGSEGV, NULL, &after);
    ck_assert_ptr_ne((void *)after.sa_sigaction, (void *)before.sa_sigaction);
    api->leave();
    sigaction(SIGSEGV, NULL, &after);
    ck_assert_ptr_eq((void *)after.sa_sigaction, (void *)before.sa_sigaction);
}
END_TEST

START_TEST(test_timers_are_refused_when_armed_and_the_kernels_readings_are_virtual)
{
    struct askew_preload_hooks h = hermetic(1, 1);
    ck_assert_int_eq(api->enter(&h), 0);
    struct itimerval off = {{0, 0}, {0, 0}}, on = {{0, 0}, {1, 0}};
    ck_assert_int_eq(setitimer(ITIMER_REAL, &off, NULL), 0); /* disarming passes */
    ck_assert_int_eq(api->violations(), 0);
    ck_assert_int_eq(setitimer(ITIMER_REAL, &on, NULL), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_str_eq(last_call(), "setitimer");
    ck_assert_uint_eq(alarm(3), 0);
    ck_assert_str_eq(last_call(), "alarm");
    ck_assert_int_eq(syscall(SYS_timerfd_create, CLOCK_MONOTONIC, 0), -1);
    ck_assert_int_eq(errno, EACCES);
    struct sysinfo info;
    ck_assert_int_eq(sysinfo(&info), 0);
    ck_assert_int_eq(info.uptime, MONO_S);
    /* sigtimedwait with nothing pending costs its timeout, then EAGAIN. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, NULL);
    struct timespec three = {3, 0};
    ck_assert_int_eq(sigtimedwait(&set, NULL, &three), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(st.slept_ns, 3000000000LL);
    api->leave();
}
END_TEST

START_TEST(test_the_poll_family_refuses_fds_fed_from_outside_the_run)
{
    int before[2], inside[2];
    ck_assert_int_eq(pipe(before), 0);
    struct askew_preload_hooks h = hermetic(1, 1);
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(pipe(inside), 0);
    ck_assert_int_eq(write(inside[1], "x", 1), 1);
    struct pollfd own = {.fd = inside[0], .events = POLLIN};
    ck_assert_int_eq(poll(&own, 1, 1000), 1);
    ck_assert_int_eq(api->violations(), 0);
    struct pollfd theirs = {.fd = before[0], .events = POLLIN};
    ck_assert_int_eq(poll(&theirs, 1, 0), -1); /* even without waiting */
    ck_assert_int_eq(errno, EACCES);
    ck_assert_str_eq(last_call(), "poll");
    api->leave();
    /* The next run forgets this one's pipes. */
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(poll(&own, 1, 0), -1);
    api->leave();
}
END_TEST

START_TEST(test_a_connect_reaches_only_af_unix_addresses_the_run_bound)
{
    char dir[] = "/tmp/askew-unix-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct sockaddr_un outside = {.sun_family = AF_UNIX}, own = {.sun_family = AF_UNIX},
                       spelled = {.sun_family = AF_UNIX};
    snprintf(outside.sun_path, sizeof(outside.sun_path), "%s/outside", dir);
    snprintf(own.sun_path, sizeof(own.sun_path), "%s/own", dir);
    snprintf(spelled.sun_path, sizeof(spelled.sun_path), "%s/./own", dir);
    int server = socket(AF_UNIX, SOCK_STREAM, 0); /* bound before the run */
    ck_assert_int_eq(bind(server, (struct sockaddr *)&outside, sizeof(outside)), 0);
    ck_assert_int_eq(listen(server, 1), 0);
    struct askew_preload_hooks h = hermetic(1, 1);
    ck_assert_int_eq(api->enter(&h), 0);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(c, (struct sockaddr *)&outside, sizeof(outside)), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_str_eq(last_call(), "connect");
    const uint64_t refused = api->violations();
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&own, sizeof(own)), 0);
    ck_assert_int_eq(listen(s, 1), 0);
    ck_assert_int_eq(connect(c, (struct sockaddr *)&spelled, sizeof(spelled)), 0);
    ck_assert_uint_eq(api->violations(), refused);
    api->leave();
    close(c);
    close(s);
    close(server);
    unlink(own.sun_path);
    unlink(outside.sun_path);
    rmdir(dir);
}
END_TEST

START_TEST(test_at_random_is_the_runs_and_drawn_once_a_run)
{
    const unsigned char *host = (const unsigned char *)getauxval(AT_RANDOM);
    unsigned char before[16];
    memcpy(before, host, 16);
    struct askew_preload_hooks h = hermetic(1, 1);
    ck_assert_int_eq(api->enter(&h), 0);
    const unsigned char *run = (const unsigned char *)getauxval(AT_RANDOM);
    ck_assert_ptr_ne(run, host);
    for (int i = 0; i < 16; i++)
        ck_assert_uint_eq(run[i], i); /* the hook's counter bytes */
    ck_assert_ptr_eq((const void *)getauxval(AT_RANDOM), run);
    ck_assert_uint_eq(st.draws, 1);
    api->leave();
    ck_assert_ptr_eq((const void *)getauxval(AT_RANDOM), host);
    ck_assert_int_eq(memcmp(host, before, 16), 0); /* the process's own: untouched */
}
END_TEST

static Suite *hermetic_suite(void)
{
    Suite *s = suite_create("preload-hermetic");
    TCase *tc = tcase_create("hermetic");
    tcase_add_checked_fixture(tc, find_api, NULL);
    tcase_add_test(tc, test_an_enter_reads_the_stack_bounds_once_per_thread);
    tcase_add_test(
        tc, test_libcs_generators_are_the_runs_from_its_start_and_the_hosts_between);
    tcase_add_test(
        tc, test_the_node_has_its_identity_and_a_signal_to_it_reaches_this_process);
    tcase_add_test(tc, test_without_an_identity_hook_the_host_is_itself);
    tcase_add_test(tc,
                   test_a_death_after_a_refusal_reports_the_seed_and_leaves_a_record);
    tcase_add_test(tc, test_the_handlers_from_before_the_refusal_come_back_at_leave);
    tcase_add_test(
        tc, test_timers_are_refused_when_armed_and_the_kernels_readings_are_virtual);
    tcase_add_test(tc, test_the_poll_family_refuses_fds_fed_from_outside_the_run);
    tcase_add_test(tc, test_a_connect_reaches_only_af_unix_addresses_the_run_bound);
    tcase_add_test(tc, test_at_random_is_the_runs_and_drawn_once_a_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(hermetic_suite);
}
