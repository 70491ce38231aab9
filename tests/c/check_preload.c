/* SPDX-License-Identifier: Apache-2.0 */
/* Check suites for libaskew-preload.so, run under LD_PRELOAD in fork mode
 * (each test in its own child, so a test that enters a simulation cannot
 * leak it into the next). The tests play the extension: they find the API
 * with dlsym, enter with fixed test hooks (a frozen clock, counter bytes)
 * and call the interposed functions directly. They never assert on how
 * long anything took: a refused sleep is checked by its result and its
 * record, and a regression that really sleeps trips Check's timeout. */
#include <arpa/inet.h>
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pty.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "askew_preload.h"

#include "preload_fixture.h"

/* ---- the library itself ------------------------------------------------ */

START_TEST(test_api_is_found_and_interposers_come_first)
{
    char msg[256];
    askew_preload_get_api_fn get =
        (askew_preload_get_api_fn)dlsym(RTLD_DEFAULT, ASKEW_PRELOAD_GET_API);
    ck_assert_ptr_null(get(ASKEW_PRELOAD_ABI_MAJOR + 1));
    ck_assert_uint_eq(api->size, sizeof(struct askew_preload_api));
    ck_assert_uint_eq(api->abi_minor, ASKEW_PRELOAD_ABI_MINOR);
    ck_assert_int_eq(api->self_test(msg, sizeof(msg)), 0);
    ck_assert_msg(strncmp(msg, "ok", 2) == 0, "%s", msg);
}
END_TEST

START_TEST(test_enter_twice_is_busy_and_leave_restores_the_real_clock)
{
    struct timespec ts;
    enter();
    ck_assert_int_eq(api->enter(&hooks), -EBUSY);
    api->leave();
    ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
    ck_assert_int_ne(ts.tv_sec, WALL_S);
    ck_assert_int_eq(api->enter(&hooks), 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_enter_rejects_a_hooks_table_without_hooks)
{
    struct askew_preload_hooks bad = hooks;
    bad.now = NULL;
    ck_assert_int_eq(api->enter(&bad), -EINVAL);
    ck_assert_int_eq(api->enter(NULL), -EINVAL);
}
END_TEST

/* ---- pass-through --------------------------------------------------------- */

START_TEST(test_passthrough_clock_gettime_lies_between_two_raw_syscalls)
{
    static const clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME};
    for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
        struct timespec a, b, c;
        ck_assert_int_eq(raw(SYS_clock_gettime, clocks[i], (long)&a, 0), 0);
        ck_assert_int_eq(clock_gettime(clocks[i], &b), 0);
        ck_assert_int_eq(raw(SYS_clock_gettime, clocks[i], (long)&c, 0), 0);
        ck_assert(ns(&a) <= ns(&b) && ns(&b) <= ns(&c));
    }
    time_t t0 = (time_t)raw(SYS_time, 0, 0, 0);
    time_t t1 = time(NULL);
    ck_assert(t1 >= t0 && t1 <= (time_t)raw(SYS_time, 0, 0, 0));
}
END_TEST

START_TEST(test_passthrough_preserves_errno_and_error_contracts)
{
    struct timespec ts;
    unsigned char buf[300];
    errno = 4242;
    ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
    ck_assert_int_eq(getrandom(buf, 0, 0), 0);
    ck_assert_int_eq(getrandom(buf, 8, GRND_NONBLOCK), 8);
    (void)time(NULL);
    ck_assert_int_eq(errno, 4242);
    ck_assert_int_eq(clock_gettime((clockid_t)12345, &ts), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(getrandom(buf, 8, 0x4000), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(getentropy(buf, 257), -1);
    ck_assert_int_eq(errno, EIO);
}
END_TEST

START_TEST(test_passthrough_threads_sockets_and_sleeps_work)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), 0);
    pthread_join(t, NULL);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ck_assert_int_ge(fd, 0);
    close(fd);
    struct timespec zero = {0, 0};
    ck_assert_int_eq(nanosleep(&zero, NULL), 0);
    ck_assert_int_eq(syscall(SYS_getpid), getpid());
}
END_TEST

/* ---- time in a simulation ---------------------------------------------- */

START_TEST(test_sim_clocks_read_the_hooks)
{
    struct timespec ts;
    enter();
    static const clockid_t wall[] = {CLOCK_REALTIME, CLOCK_REALTIME_COARSE};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(clock_gettime(wall[i], &ts), 0);
        ck_assert_int_eq(ts.tv_sec, WALL_S);
        ck_assert_int_eq(ts.tv_nsec, FAKE_NS);
    }
    ck_assert_int_eq(clock_gettime(CLOCK_TAI, &ts), 0);
    ck_assert_int_eq(ts.tv_sec, WALL_S + 37);
    static const clockid_t mono[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
                                     CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME};
    for (size_t i = 0; i < sizeof(mono) / sizeof(mono[0]); i++) {
        ck_assert_int_eq(clock_gettime(mono[i], &ts), 0);
        ck_assert_int_eq(ts.tv_sec, MONO_S);
        ck_assert_int_eq(ts.tv_nsec, FAKE_NS);
    }
    /* CPU-time clocks ask for CPU time, not the node's monotonic clock. */
    static const clockid_t cputime[] = {CLOCK_PROCESS_CPUTIME_ID,
                                        CLOCK_THREAD_CPUTIME_ID};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(clock_gettime(cputime[i], &ts), 0);
        ck_assert_int_eq(ts.tv_sec, CPU_S);
    }
    /* A dynamic CPU clock is not modelled: it stays real. */
    clockid_t cpu;
    ck_assert_int_eq(clock_getcpuclockid(0, &cpu), 0);
    ck_assert_int_eq(clock_gettime(cpu, &ts), 0);
    ck_assert(ts.tv_sec != MONO_S || ts.tv_nsec != FAKE_NS);
    ck_assert_int_eq(clock_gettime((clockid_t)12345, &ts), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(api->violations(), 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_cpu_time_reads_clock_times_and_getrusage_from_the_hook)
{
    enter();
    const long hz = sysconf(_SC_CLK_TCK);
    ck_assert_int_eq(clock(), (clock_t)(CPU_S * CLOCKS_PER_SEC + FAKE_NS / 1000));
    struct tms tm;
    ck_assert_int_eq(times(&tm), (clock_t)(MONO_S * hz));
    ck_assert_int_eq(tm.tms_utime, (clock_t)(CPU_S * hz));
    ck_assert_int_eq(tm.tms_stime + tm.tms_cutime + tm.tms_cstime, 0);
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
    ck_assert_int_eq(ru.ru_utime.tv_sec, CPU_S);
    ck_assert_int_eq(ru.ru_utime.tv_usec, FAKE_NS / 1000);
    ck_assert_int_eq(ru.ru_stime.tv_sec + ru.ru_stime.tv_usec, 0);
    ck_assert_int_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    ck_assert_int_eq(ru.ru_utime.tv_sec + ru.ru_utime.tv_usec, 0);
    ck_assert_int_eq(getrusage(12345, &ru), -1); /* the real call's EINVAL stands */
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(api->violations(), 0);
    api->leave();
    /* Outside a run they are the real ones again. */
    ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
    ck_assert(ru.ru_utime.tv_sec != CPU_S || ru.ru_utime.tv_usec != FAKE_NS / 1000);
}
END_TEST

START_TEST(test_sim_every_time_entry_point_agrees)
{
    struct timespec ts;
    struct timeval tv;
    struct timezone tz = {60, 1};
    time_t t = 0;
    enter();
    ck_assert_int_eq(gettimeofday(&tv, &tz), 0);
    ck_assert_int_eq(tv.tv_sec, WALL_S);
    ck_assert_int_eq(tv.tv_usec, 0);
    ck_assert_int_eq(tz.tz_minuteswest, 0);
    ck_assert_int_eq(time(&t), WALL_S);
    ck_assert_int_eq(t, WALL_S);
    ck_assert_int_eq(time(NULL), WALL_S);
    ck_assert_int_eq(timespec_get(&ts, TIME_UTC), TIME_UTC);
    ck_assert_int_eq(ts.tv_sec, WALL_S);
    ck_assert_int_eq(clock_getres(CLOCK_MONOTONIC, &ts), 0);
    ck_assert_int_eq(ns(&ts), 1);
    ck_assert_int_eq(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts), 0);
    ck_assert_int_eq(ts.tv_sec, MONO_S);
    ck_assert_int_eq(syscall(SYS_gettimeofday, &tv, NULL), 0);
    ck_assert_int_eq(tv.tv_sec, WALL_S);
    ck_assert_int_eq(syscall(SYS_time, &t), WALL_S);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

static int reentrant_now(void *ctx, int realtime, struct timespec *out)
{
    /* A hook that reaches an interposed function must get the real one. */
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    st.reentered_real = real.tv_sec != WALL_S;
    return test_now(ctx, realtime, out);
}

START_TEST(test_a_hook_that_calls_an_interposer_gets_the_real_function)
{
    struct askew_preload_hooks h = hooks;
    h.now = reentrant_now;
    struct timespec ts;
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
    ck_assert_int_eq(ts.tv_sec, WALL_S);
    ck_assert_int_eq(st.reentered_real, 1);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

/* ---- entropy in a simulation ------------------------------------------------ */

START_TEST(test_sim_entropy_comes_from_the_hook)
{
    unsigned char buf[4];
    enter();
    ck_assert_int_eq(getrandom(buf, 4, 0), 4);
    ck_assert_int_eq(buf[0], 0);
    ck_assert_int_eq(buf[3], 3);
    ck_assert_int_eq(getentropy(buf, 4), 0);
    ck_assert_int_eq(buf[0], 4);
    ck_assert_int_eq(syscall(SYS_getrandom, buf, 4, GRND_NONBLOCK), 4);
    ck_assert_int_eq(buf[0], 8);
    arc4random_buf(buf, 4);
    ck_assert_int_eq(buf[0], 12);
    ck_assert_uint_eq(arc4random(), 0x13121110u); /* little-endian bytes 16..19 */
    ck_assert_uint_lt(arc4random_uniform(10), 10);
    ck_assert_uint_eq(arc4random_uniform(1), 0);
    ck_assert_uint_eq(st.draws, 6);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_zero_length_reads_draw_nothing)
{
    unsigned char buf[1];
    enter();
    ck_assert_int_eq(getrandom(buf, 0, 0), 0);
    ck_assert_int_eq(getrandom(NULL, 0, 0), 0);
    ck_assert_int_eq(getentropy(buf, 0), 0);
    ck_assert_int_eq(syscall(SYS_getrandom, buf, 0, 0), 0);
    arc4random_buf(buf, 0);
    ck_assert_uint_eq(st.draws, 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_entropy_keeps_the_error_contracts)
{
    unsigned char buf[300];
    enter();
    errno = 0;
    ck_assert_int_eq(getrandom(buf, 4, 0x4000), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(getrandom(buf, 4, GRND_RANDOM | 0x0004), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(getentropy(buf, 257), -1);
    ck_assert_int_eq(errno, EIO);
    ck_assert_int_eq(getentropy(buf, 256), 0);
    ck_assert_uint_eq(st.draws, 1);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_reads_of_the_random_devices_come_from_the_run)
{
    int before = open("/dev/urandom", O_RDONLY); /* opened before the run */
    ck_assert_int_ge(before, 0);
    unsigned char b[4];
    enter();
    uint8_t next = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read(fd, b, sizeof(b)), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(b[i], next++);
    close(fd);
    /* However the path is spelled: the kernel says what was opened. */
    static const char *const spelled[] = {"/dev/./urandom", "//dev/urandom",
                                          "/dev/../dev/random"};
    for (size_t i = 0; i < sizeof(spelled) / sizeof(spelled[0]); i++) {
        fd = open(spelled[i], O_RDONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read(fd, b, 1), 1);
        ck_assert_uint_eq(b[0], next++);
        close(fd);
    }
    int dev = open("/dev", O_RDONLY | O_DIRECTORY);
    fd = openat(dev, "urandom", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    struct iovec iov[2] = {{b, 1}, {b + 1, 1}};
    ck_assert_int_eq(readv(fd, iov, 2), 2);
    ck_assert_uint_eq(b[0], next++);
    ck_assert_uint_eq(b[1], next++);
    close(fd);
    close(dev);
    ck_assert_int_eq(read(before, b, 1), 1); /* an fd from before the run too */
    ck_assert_uint_eq(b[0], next++);
    ck_assert_int_eq(raw(SYS_read, before, (long)b, 1), 1); /* past the wrapper: real */
    ck_assert_int_eq(syscall(SYS_read, before, b, 1), 1);
    ck_assert_uint_eq(b[0], next++);
    FILE *f = fopen("/dev/urandom", "rb"); /* fread reads inside libc: our stream */
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fread(b, 1, 2, f), 2);
    ck_assert_uint_eq(b[0], next);
    ck_assert_uint_eq(b[1], (uint8_t)(next + 1));
    fclose(f);
    ck_assert_int_eq(api->violations(), 0);
    const uint64_t draws = st.draws;
    api->leave(); /* before Check reads its clock for the duration */
    ck_assert_int_eq(read(before, b, sizeof(b)), 4); /* the kernel's again */
    ck_assert_uint_eq(st.draws, draws);
    close(before);
}
END_TEST

/* ---- refusals ---------------------------------------------------------- */

START_TEST(test_sim_pthread_create_is_refused_and_recorded_with_its_caller)
{
    pthread_t t;
    struct askew_violation v;
    enter();
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), EAGAIN);
    ck_assert_int_eq(api->violations(), 1);
    ck_assert_int_eq(st.callbacks, 1);
    ck_assert_int_eq(api->violation_get(0, &v), 0);
    ck_assert_uint_eq(v.kind, ASKEW_VIOLATION_THREAD);
    ck_assert_str_eq(v.call, "pthread_create");
    ck_assert_uint_ge(v.nframes, 1);
    Dl_info info;
    ck_assert_int_ne(dladdr((void *)(v.frames[0] - 1), &info), 0);
    ck_assert_msg(strstr(info.dli_fname, "check_preload") != NULL, "caller in %s",
                  info.dli_fname);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_processes_are_refused)
{
    pid_t pid;
    char *argv[] = {"true", NULL};
    enter();
    errno = 0;
    ck_assert_int_eq(fork(), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(vfork(), -1);
    ck_assert_int_eq(posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ), EAGAIN);
    ck_assert_int_eq(posix_spawnp(&pid, "true", NULL, NULL, argv, environ), EAGAIN);
    ck_assert_int_eq(execve("/bin/true", argv, environ), -1);
    ck_assert_int_eq(execv("/bin/true", argv), -1);
    ck_assert_int_eq(execvp("true", argv), -1);
    ck_assert_int_eq(execl("/bin/true", "true", (char *)NULL), -1);
    ck_assert_int_eq(execlp("true", "true", (char *)NULL), -1);
    ck_assert_int_eq(system("true"), -1);
    ck_assert_ptr_null(popen("true", "r"));
    ck_assert_int_eq(syscall(SYS_clone, 0, 0, 0, 0, 0), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(api->violations(), 12);
    ck_assert_str_eq(last_call(), "syscall(SYS_clone)");
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_network_families_are_refused_and_unix_is_allowed)
{
    static const int refused[] = {AF_INET, AF_INET6, AF_NETLINK, AF_PACKET};
    enter();
    for (size_t i = 0; i < 4; i++) {
        errno = 0;
        ck_assert_int_eq(socket(refused[i], SOCK_DGRAM, 0), -1);
        ck_assert_int_eq(errno, EACCES);
    }
    ck_assert_int_eq(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0), -1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(9)};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&in, sizeof(in)), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&in, sizeof(in)), -1);
    ck_assert_str_eq(last_call(), "bind");
    close(fd);
    ck_assert_int_eq(api->violations(), 7);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_getaddrinfo_passes_literals_and_localhost_only)
{
    struct addrinfo *res = NULL;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    enter();
    ck_assert_int_eq(getaddrinfo("127.0.0.1", "80", &hints, &res), 0);
    freeaddrinfo(res);
    ck_assert_int_eq(getaddrinfo("::1", NULL, &hints, &res), 0);
    freeaddrinfo(res);
    ck_assert_int_eq(getaddrinfo("localhost", NULL, &hints, &res), 0);
    freeaddrinfo(res);
    ck_assert_int_eq(api->violations(), 0);
    errno = 0;
    ck_assert_int_eq(getaddrinfo("example.com", "80", &hints, &res), EAI_SYSTEM);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_ptr_null(gethostbyname("example.com"));
    ck_assert_int_eq(api->violations(), 2);
    ck_assert_str_eq(last_call(), "gethostbyname");
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_io_on_a_socket_made_before_the_run_is_refused)
{
    /* A UDP pair bound to loopback before the run, as a pool would keep. */
    int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
    ck_assert_int_ge(a, 0);
    ck_assert_int_ge(b, 0);
    struct sockaddr_in in = {.sin_family = AF_INET};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(in);
    ck_assert_int_eq(bind(a, (struct sockaddr *)&in, sizeof(in)), 0);
    ck_assert_int_eq(getsockname(a, (struct sockaddr *)&in, &len), 0);
    ck_assert_int_eq(connect(b, (struct sockaddr *)&in, sizeof(in)), 0);
    int pair[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    char c = 'x';
    struct iovec iov = {.iov_base = &c, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    enter();
    errno = 0;
    ck_assert_int_eq(send(b, &c, 1, 0), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_int_eq(sendto(b, &c, 1, 0, (struct sockaddr *)&in, sizeof(in)), -1);
    ck_assert_int_eq(sendmsg(b, &msg, 0), -1);
    ck_assert_int_eq(write(b, &c, 1), -1);
    ck_assert_int_eq(writev(b, &iov, 1), -1);
    ck_assert_int_eq(recv(a, &c, 1, MSG_DONTWAIT), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_int_eq(recvfrom(a, &c, 1, MSG_DONTWAIT, NULL, NULL), -1);
    ck_assert_int_eq(recvmsg(a, &msg, MSG_DONTWAIT), -1);
    ck_assert_int_eq(read(a, &c, 1), -1);
    ck_assert_int_eq(readv(a, &iov, 1), -1);
    ck_assert_int_eq(accept(a, NULL, NULL), -1);
    ck_assert_int_eq(syscall(SYS_sendto, b, &c, 1, 0, 0, 0), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_int_eq(api->violations(), 12);
    ck_assert_str_eq(last_call(), "syscall(socket I/O)");
    /* AF_UNIX, files and bad fds are not the network: libc's answers. */
    ck_assert_int_eq(write(pair[0], &c, 1), 1);
    ck_assert_int_eq(read(pair[1], &c, 1), 1);
    ck_assert_int_eq(write(-1, &c, 1), -1);
    ck_assert_int_eq(errno, EBADF);
    int devnull = open("/dev/null", O_WRONLY);
    ck_assert_int_eq(write(devnull, &c, 1), 1);
    ck_assert_int_eq(api->violations(), 12);
    api->leave(); /* before Check reads its clock for the duration */
    /* Nothing was sent: the datagram queue of a is still empty. */
    ck_assert_int_eq(recv(a, &c, 1, MSG_DONTWAIT), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(send(b, &c, 1, 0), 1);
    ck_assert_int_eq(recv(a, &c, 1, 0), 1);
}
END_TEST

START_TEST(test_sim_reverse_lookups_are_refused_unless_numeric)
{
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(80)};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char host[256], serv[32];
    struct hostent he, sentinel, *result = &sentinel;
    char buf[1024];
    int herr = 0;
    enter();
    ck_assert_int_eq(getnameinfo((struct sockaddr *)&in, sizeof(in), host, sizeof(host),
                                 serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV),
                     0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_int_eq(getnameinfo((struct sockaddr *)&in, sizeof(in), NULL, 0, serv,
                                 sizeof(serv), NI_NUMERICSERV),
                     0);
    ck_assert_int_eq(api->violations(), 0);
    errno = 0;
    ck_assert_int_eq(
        getnameinfo((struct sockaddr *)&in, sizeof(in), host, sizeof(host), NULL, 0, 0),
        EAI_SYSTEM);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_ptr_null(gethostbyaddr(&in.sin_addr, sizeof(in.sin_addr), AF_INET));
    ck_assert_int_eq(h_errno, NO_RECOVERY);
    ck_assert_int_ne(gethostbyaddr_r(&in.sin_addr, sizeof(in.sin_addr), AF_INET, &he,
                                     buf, sizeof(buf), &result, &herr),
                     0);
    ck_assert_ptr_null(result);
    ck_assert_int_eq(herr, NO_RECOVERY);
    ck_assert_int_eq(api->violations(), 3);
    ck_assert_str_eq(last_call(), "gethostbyaddr_r");
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_forkpty_daemon_and_fork_underscore_are_refused)
{
    int master = -1;
    enter();
    errno = 0;
    ck_assert_int_eq(forkpty(&master, NULL, NULL, NULL), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(master, -1);
    ck_assert_int_eq(daemon(1, 1), -1);
    ck_assert_int_eq(api->violations(), 2);
    ck_assert_str_eq(last_call(), "daemon");
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

static volatile int vfork_child_wrote;

START_TEST(test_vfork_outside_a_run_is_a_real_vfork)
{
    /* Under vfork the child borrows the parent's memory until it exits, so
     * its write is the parent's; a fork child's write would be its own. */
    vfork_child_wrote = 0;
    pid_t pid = vfork();
    if (pid == 0) {
        vfork_child_wrote = 1;
        _exit(0);
    }
    ck_assert_int_gt(pid, 0);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(vfork_child_wrote, 1);
    /* posix_spawn, which CPython's subprocess also uses, still works. */
    char *argv[] = {"true", NULL};
    ck_assert_int_eq(posix_spawnp(&pid, "true", NULL, NULL, argv, environ), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

START_TEST(test_vfork_inside_a_run_is_refused_and_names_its_caller)
{
    enter();
    errno = 0;
    ck_assert_int_eq(vfork(), -1);
    ck_assert_int_eq(errno, EAGAIN);
    struct askew_violation v;
    ck_assert_int_eq(api->violation_get(0, &v), 0);
    ck_assert_str_eq(v.call, "vfork");
    api->leave(); /* before Check reads its clock for the duration */
    /* The jump keeps the caller's return address: this test's own code. */
    uintptr_t self =
        (uintptr_t)&test_vfork_inside_a_run_is_refused_and_names_its_caller_fn;
    ck_assert_uint_gt(v.frames[0], self);
    ck_assert_uint_lt(v.frames[0], self + 4096);
}
END_TEST

static int handoff_answer;
static int handoff_waits;      /* how many of the hook's calls were waits */
static int handoff_idle_posts; /* and posts that no thread waited on */

static int test_handoff(void *ctx, int waiting)
{
    (void)ctx;
    handoff_waits += waiting == 1;
    handoff_idle_posts += waiting == ASKEW_HANDOFF_POST_IDLE;
    return handoff_answer;
}

static void *wait_on(void *arg)
{
    sem_wait(arg);
    return NULL;
}

/* glibc's 64-bit sem_t: the waiter count is the first word's high half. */
static int has_waiter(sem_t *sem)
{
    return (__atomic_load_n((uint64_t *)(void *)sem, __ATOMIC_ACQUIRE) >> 32) != 0;
}

static void *post_later(void *arg)
{
    sem_post(arg);
    return NULL;
}

START_TEST(test_sim_a_handoff_the_hook_names_is_recorded_and_still_happens)
{
    struct askew_preload_hooks h = sleep_hooks;
    h.handoff = test_handoff;
    sem_t sem;
    sem_init(&sem, 0, 0);
    ck_assert_int_eq(api->enter(&h), 0);
    handoff_answer = 0;
    ck_assert_int_eq(sem_post(&sem), 0); /* the hook says no: not recorded */
    ck_assert_int_eq(sem_wait(&sem), 0); /* free: the hook is not even asked */
    ck_assert_int_eq(api->violations(), 0);
    ck_assert_int_eq(handoff_waits, 0);
    ck_assert_int_eq(handoff_idle_posts, 1); /* no thread waited on that post */
    handoff_answer = 1;
    ck_assert_int_eq(sem_post(&sem), 0);
    ck_assert_int_eq(api->violations(), 1);
    ck_assert_str_eq(last_call(), "sem_post");
    ck_assert_int_eq(sem_wait(&sem), 0); /* posted all the same */
    api->leave();
    /* A thread of the host's blocked on the semaphore: the post wakes it,
     * and the hook is told so. */
    pthread_t waiter;
    ck_assert_int_eq(pthread_create(&waiter, NULL, wait_on, &sem), 0);
    while (!has_waiter(&sem))
        sched_yield();
    ck_assert_int_eq(api->enter(&h), 0);
    const int idle_before = handoff_idle_posts;
    ck_assert_int_eq(sem_post(&sem), 0);
    ck_assert_int_eq(handoff_idle_posts, idle_before);
    ck_assert_int_eq(api->violations(), 1);
    api->leave();
    pthread_join(waiter, NULL);
    /* A wait that only another thread can end: recorded, then it waits. */
    pthread_t t;
    ck_assert_int_eq(api->enter(&h), 0);
    api->leave();
    ck_assert_int_eq(pthread_create(&t, NULL, post_later, &sem), 0);
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(sem_wait(&sem), 0);
    api->leave(); /* before Check reads its clock for the duration */
    pthread_join(t, NULL);
    /* The post may have come first (then the wait did not block). */
    ck_assert_int_le(api->violations(), 1);
    ck_assert_int_eq(handoff_waits, (int)api->violations());
}
END_TEST

/* ---- blocking calls return at once, sleeps cost virtual time ------------------- */

START_TEST(test_sim_sleeps_without_a_sleep_hook_return_at_once_and_are_recorded)
{
    struct timespec long_ts = {100000, 0};
    enter();
    ck_assert_int_eq(nanosleep(&long_ts, NULL), 0);
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, &long_ts, NULL), 0);
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &long_ts, NULL),
                     0);
    ck_assert_int_eq(usleep(100000000), 0);
    ck_assert_uint_eq(sleep(100000), 0);
    ck_assert_int_eq(syscall(SYS_nanosleep, &long_ts, NULL), 0);
    ck_assert_int_eq(api->violations(), 6);
    ck_assert_str_eq(last_call(), "syscall(SYS_nanosleep)");
    struct timespec bad = {0, 2000000000L};
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL), EINVAL);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_sleeps_cost_virtual_time_through_the_sleep_hook)
{
    ck_assert_int_eq(api->enter(&sleep_hooks), 0);
    struct timespec ts = {1, 5};
    errno = 1234;
    ck_assert_int_eq(nanosleep(&ts, NULL), 0);
    ck_assert_int_eq(st.slept_ns, 1000000005);
    ck_assert_int_eq(clock_nanosleep(CLOCK_REALTIME, 0, &ts, NULL), 0);
    ck_assert_int_eq(st.slept_ns, 2000000010);
    ck_assert_int_eq(usleep(1500), 0);
    ck_assert_uint_eq(sleep(2), 0);
    ck_assert_int_eq(st.slept_ns, 4001500010);
    ck_assert_int_eq(syscall(SYS_nanosleep, &ts, NULL), 0);
    ck_assert_int_eq(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL), 0);
    ck_assert_int_eq(st.slept_ns, 6001500020);
    ck_assert_int_eq(errno, 1234);
    /* A deadline is on the virtual clock of its id: the hook is asked for
     * what is left of it, and nothing for one already past. */
    st.slept_ns = 0;
    struct timespec mono = {MONO_S + 3, FAKE_NS + 7};
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &mono, NULL), 0);
    ck_assert_int_eq(st.slept_ns, 3000000007);
    struct timespec wall = {WALL_S + 1, FAKE_NS};
    ck_assert_int_eq(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &wall, NULL), 0);
    struct timespec tai = {WALL_S + 37 + 2, FAKE_NS};
    ck_assert_int_eq(clock_nanosleep(CLOCK_TAI, TIMER_ABSTIME, &tai, NULL), 0);
    ck_assert_int_eq(st.slept_ns, 6000000007);
    struct timespec past = {MONO_S - 1, 0};
    int calls = st.sleeps;
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL), 0);
    struct timespec zero = {0, 0};
    ck_assert_int_eq(nanosleep(&zero, NULL), 0);
    ck_assert_int_eq(st.sleeps, calls); /* nothing to let pass: no hook call */
    ck_assert_int_eq(api->violations(), 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_sleeps_keep_their_error_contracts)
{
    ck_assert_int_eq(api->enter(&sleep_hooks), 0);
    struct timespec bad_ns = {0, 1000000000L}, neg = {-1, 0}, neg_ns = {0, -1};
    errno = 0;
    ck_assert_int_eq(nanosleep(&bad_ns, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(nanosleep(&neg, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(nanosleep(NULL, NULL), -1);
    ck_assert_int_eq(errno, EFAULT);
    /* clock_nanosleep returns its error and leaves errno alone. */
    errno = 0;
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, &neg_ns, NULL), EINVAL);
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &neg, NULL),
                     EINVAL);
    struct timespec one = {1, 0};
    ck_assert_int_eq(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &one, NULL), EINVAL);
    ck_assert_int_eq(errno, 0);
    ck_assert_int_eq(syscall(SYS_nanosleep, &bad_ns, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(st.sleeps, 0);
    ck_assert_int_eq(api->violations(), 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_a_sleep_the_hook_cannot_take_returns_at_once_and_is_recorded)
{
    ck_assert_int_eq(api->enter(&sleep_hooks), 0);
    st.sleep_rc = -ETIME; /* past the run's time budget */
    struct timespec day = {86400, 0};
    errno = 1234;
    ck_assert_int_eq(nanosleep(&day, NULL), 0);
    ck_assert_int_eq(errno, 1234);
    ck_assert_int_eq(st.sleeps, 1);
    ck_assert_int_eq(st.slept_ns, 0);
    ck_assert_int_eq(api->violations(), 1);
    ck_assert_str_eq(last_call(), "nanosleep");
    ck_assert_int_eq(st.callbacks, 1);
    /* Too long for a 64-bit count of nanoseconds: the hook is not asked. */
    struct timespec forever = {INT64_MAX / 2, 0};
    ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, &forever, NULL), 0);
    ck_assert_int_eq(st.sleeps, 1);
    ck_assert_int_eq(api->violations(), 2);
    ck_assert_str_eq(last_call(), "clock_nanosleep");
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_a_hooks_table_from_abi_1_0_has_every_sleep_refused)
{
    /* An extension built against 1.0 passes the smaller table: whatever
     * lies past it in memory must not be taken for a sleep hook. */
    struct {
        struct askew_preload_hooks h;
        char junk[64];
    } old;
    memset(&old, 0xA5, sizeof(old));
    old.h.size = (uint32_t)offsetof(struct askew_preload_hooks, sleep);
    old.h.ctx = NULL;
    old.h.now = test_now;
    old.h.random = test_random;
    old.h.on_violation = test_on_violation;
    ck_assert_int_eq(api->enter(&old.h), 0);
    struct timespec ts = {2, 0};
    ck_assert_int_eq(nanosleep(&ts, NULL), 0);
    ck_assert_int_eq(usleep(10), 0);
    ck_assert_int_eq(api->violations(), 2);
    ck_assert_str_eq(last_call(), "usleep");
    ck_assert_int_eq(st.callbacks, 2);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_timed_waits_time_out_at_once_unless_ready)
{
    sem_t busy, free_sem;
    struct timespec far = {WALL_S + 100000, 0};
    sem_init(&busy, 0, 0);
    sem_init(&free_sem, 0, 1);
    enter();
    errno = 0;
    ck_assert_int_eq(sem_timedwait(&busy, &far), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    ck_assert_int_eq(sem_clockwait(&busy, CLOCK_MONOTONIC, &far), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    ck_assert_int_eq(sem_timedwait(&free_sem, &far), 0);
    ck_assert_int_eq(api->violations(), 2);

    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    ck_assert_int_eq(poll(&pfd, 1, 100000000), 0);
    ck_assert_int_eq(poll(&pfd, 1, -1), 0);
    struct timespec tmo = {100000, 0};
    ck_assert_int_eq(ppoll(&pfd, 1, &tmo, NULL), 0);
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    struct timeval tv = {100000, 0};
    ck_assert_int_eq(select(p[0] + 1, &rs, NULL, NULL, &tv), 0);
    FD_SET(p[0], &rs);
    ck_assert_int_eq(pselect(p[0] + 1, &rs, NULL, NULL, &tmo, NULL), 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = p[0]};
    ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
    ck_assert_int_eq(epoll_wait(ep, &ev, 1, 100000000), 0);
    ck_assert_int_eq(epoll_pwait(ep, &ev, 1, -1, NULL), 0);
    ck_assert_int_eq(api->violations(), 9);
    ck_assert_str_eq(last_call(), "epoll_pwait");

    /* A ready fd is reported at once and is no violation. */
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    ck_assert_int_eq(poll(&pfd, 1, 100000000), 1);
    ck_assert_int_eq(epoll_wait(ep, &ev, 1, 100000000), 1);
    ck_assert_int_eq(api->violations(), 9);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

/* A condvar on CLOCK_MONOTONIC, as libstdc++ and CPython make them. */
static void monotonic_cond(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}

START_TEST(test_sim_a_timed_condvar_wait_costs_its_time_and_times_out)
{
    pthread_cond_t cond;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    monotonic_cond(&cond);
    ck_assert_int_eq(api->enter(&sleep_hooks), 0);
    /* 200 virtual ms ahead: the wait moves the clock on by that much
     * (std::condition_variable::wait_for then sees its deadline pass). */
    struct timespec abs;
    clock_gettime(CLOCK_MONOTONIC, &abs);
    abs.tv_nsec += 200000000;
    pthread_mutex_lock(&mu);
    ck_assert_int_eq(pthread_cond_timedwait(&cond, &mu, &abs), ETIMEDOUT);
    ck_assert_int_eq(st.slept_ns, 200000000);
    ck_assert_int_eq(pthread_cond_clockwait(&cond, &mu, CLOCK_MONOTONIC, &abs),
                     ETIMEDOUT);
    ck_assert_int_eq(st.slept_ns, 400000000); /* this clock stands still */
    abs.tv_sec -= 5;                          /* past: times out for free */
    ck_assert_int_eq(pthread_cond_clockwait(&cond, &mu, CLOCK_MONOTONIC, &abs),
                     ETIMEDOUT);
    ck_assert_int_eq(st.sleeps, 2);
    abs.tv_nsec = 1000000000L;
    ck_assert_int_eq(pthread_cond_clockwait(&cond, &mu, CLOCK_MONOTONIC, &abs), EINVAL);
    ck_assert_int_eq(pthread_mutex_trylock(&mu), EBUSY); /* still held, as it must be */
    pthread_mutex_unlock(&mu);
    ck_assert_int_eq(api->violations(), 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_sim_the_interpreters_condvar_waits_translate_virtual_deadlines)
{
    pthread_cond_t cond;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    monotonic_cond(&cond);
    struct askew_preload_hooks h = sleep_hooks;
    mark_self_as_interp(&h);
    ck_assert_int_eq(api->enter(&h), 0);
    /* One virtual millisecond ahead: as a raw deadline it would be long
     * past or far ahead on the host's clock; translated, it is 1 ms, and
     * virtual time does not move (the GIL's waits must not move it). */
    struct timespec abs;
    clock_gettime(CLOCK_MONOTONIC, &abs);
    abs.tv_nsec += 1000000;
    pthread_mutex_lock(&mu);
    ck_assert_int_eq(pthread_cond_timedwait(&cond, &mu, &abs), ETIMEDOUT);
    ck_assert_int_eq(pthread_cond_clockwait(&cond, &mu, CLOCK_MONOTONIC, &abs),
                     ETIMEDOUT);
    pthread_mutex_unlock(&mu);
    ck_assert_int_eq(st.sleeps, 0);
    ck_assert_int_eq(api->violations(), 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_the_ring_keeps_the_newest_refusals)
{
    struct askew_violation v;
    struct timespec ts = {1, 0};
    enter();
    for (int i = 0; i < 20; i++)
        nanosleep(&ts, NULL);
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL);
    ck_assert_int_eq(api->violations(), 21);
    ck_assert_int_eq(api->violation_get(0, &v), -ERANGE);
    ck_assert_int_eq(api->violation_get(21 - ASKEW_VIOLATION_RING - 1, &v), -ERANGE);
    ck_assert_int_eq(api->violation_get(21 - ASKEW_VIOLATION_RING, &v), 0);
    ck_assert_str_eq(v.call, "nanosleep");
    ck_assert_int_eq(api->violation_get(20, &v), 0);
    ck_assert_str_eq(v.call, "pthread_create");
    ck_assert_int_eq(api->violation_get(21, &v), -ERANGE);
    api->leave();
    ck_assert_int_eq(api->violations(), 21);
    enter();
    ck_assert_int_eq(api->violations(), 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

/* ---- other threads and processes ---------------------------------------------- */

static sem_t go, done;
static int thread_saw_real_time;
static int thread_could_start_threads;

static void *bystander(void *arg)
{
    (void)arg;
    sem_wait(&go);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    thread_saw_real_time = ts.tv_sec != WALL_S;
    pthread_t t;
    thread_could_start_threads = pthread_create(&t, NULL, nothing, NULL) == 0;
    if (thread_could_start_threads)
        pthread_join(t, NULL);
    sem_post(&done);
    return NULL;
}

START_TEST(test_a_thread_started_before_enter_stays_real)
{
    pthread_t t;
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    ck_assert_int_eq(pthread_create(&t, NULL, bystander, NULL), 0);
    enter();
    sem_post(&go);
    sem_wait(&done);
    ck_assert_int_eq(thread_saw_real_time, 1);
    ck_assert_int_eq(thread_could_start_threads, 1);
    ck_assert_int_eq(api->violations(), 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ck_assert_int_eq(ts.tv_sec, WALL_S);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

START_TEST(test_a_forked_child_starts_outside_the_simulation)
{
    /* fork() is refused inside a run, so fork with libc's own, as a thread
     * the preload does not see would; the atfork handler must still run. */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    pid_t (*libc_fork)(void) = (pid_t (*)(void))dlsym(libc, "fork");
    ck_assert_ptr_nonnull(libc_fork);
    enter();
    pid_t pid = libc_fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int ok = ts.tv_sec != WALL_S && api->enter(&hooks) == 0;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    api->leave(); /* before Check reads its clock for the duration */
}
END_TEST

/* ---- fresh processes: constructors, other preloads, dlopen ---------------- */

static const char *probe_dir(void)
{
    const char *d = getenv("ASKEW_PROBE_DIR");
    ck_assert_msg(d != NULL, "ASKEW_PROBE_DIR is not set");
    return d;
}

/* Run a probe with an explicit LD_PRELOAD; returns its exit status and
 * leaves its first line of output in out. */
static int run_probe_env(const char *prog, const char *preload, const char *arg,
                         const char *env, char *out, size_t len)
{
    char path[512], env_preload[1200], env_lib[600];
    snprintf(path, sizeof(path), "%s/%s", probe_dir(), prog);
    snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload);
    snprintf(env_lib, sizeof(env_lib), "LD_LIBRARY_PATH=%s", probe_dir());
    char *envp[] = {env_preload, env_lib, (char *)env, NULL};
    char *argv[] = {path, (char *)arg, NULL};
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, path, &fa, NULL, argv, envp), 0);
    close(p[1]);
    ssize_t n = read(p[0], out, len - 1);
    out[n > 0 ? n : 0] = '\0';
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_probe(const char *prog, const char *preload, const char *arg, char *out,
                     size_t len)
{
    return run_probe_env(prog, preload, arg, NULL, out, len);
}

static const char *self_lib(void)
{
    static char buf[512];
    snprintf(buf, sizeof(buf), "%s/libaskew-preload.so", probe_dir());
    return buf;
}

START_TEST(test_a_library_constructor_may_call_every_interposer)
{
    char out[512];
    int rc = run_probe("probe_ctor", self_lib(), NULL, out, sizeof(out));
    ck_assert_msg(rc == 0, "probe_ctor exited %d: %s", rc, out);
}
END_TEST

START_TEST(test_self_test_names_another_preload_that_comes_first)
{
    char out[512], preload[1200];
    snprintf(preload, sizeof(preload), "%s/probe_shadow.so:%s", probe_dir(),
             self_lib());
    int rc = run_probe("probe_selftest", preload, NULL, out, sizeof(out));
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, "probe_shadow.so") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "another LD_PRELOAD") != NULL, "%s", out);
}
END_TEST

START_TEST(test_self_test_fails_when_the_library_is_dlopened)
{
    char out[512];
    int rc = run_probe("probe_selftest", "", self_lib(), out, sizeof(out));
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, "dlopen") != NULL, "%s", out);
}
END_TEST

START_TEST(test_self_test_passes_after_a_preload_that_defines_nothing_of_ours)
{
    char out[512], preload[1200];
    snprintf(preload, sizeof(preload), "%s/probe_inert.so:%s", probe_dir(), self_lib());
    int rc = run_probe("probe_selftest", preload, NULL, out, sizeof(out));
    ck_assert_msg(rc == 0, "%s", out);
}
END_TEST

/* docs/preload.md's rule: a failed dlsym changes how a call is forwarded,
 * never what the simulation decides (poll used to block for real here). */
START_TEST(test_a_failed_dlsym_keeps_the_policy_and_falls_back_to_the_syscall)
{
    char out[512];
    int rc = run_probe_env(
        "probe_fallback", self_lib(), NULL,
        "ASKEW_PRELOAD_UNRESOLVED=poll,ppoll,select,pselect,epoll_wait,epoll_pwait",
        out, sizeof(out));
    ck_assert_msg(rc == 0, "probe_fallback exited %d: %s", rc, out);
}
END_TEST

/* hook_ownrng.c: a clock read or entropy draw from an object carrying its
 * own OpenSSL generator is answered and recorded; the same calls from
 * anywhere else are not recorded. */
START_TEST(test_sim_clock_and_entropy_from_an_object_with_its_own_openssl_are_recorded)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/probe_ownrng.so", probe_dir());
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "%s", dlerror());
    time_t (*own_time)(void) = (time_t (*)(void))dlsym(lib, "probe_ownrng_time");
    int (*own_entropy)(void *, size_t) =
        (int (*)(void *, size_t))dlsym(lib, "probe_ownrng_getentropy");
    ck_assert_ptr_nonnull(own_time);
    ck_assert_ptr_nonnull(own_entropy);
    ck_assert_int_ne(own_time(), (time_t)-1); /* outside a run: not recorded */
    enter();
    unsigned char buf[8];
    ck_assert_int_eq(time(NULL), WALL_S);
    ck_assert_int_eq(getentropy(buf, sizeof(buf)), 0);
    ck_assert_int_eq(api->violations(), 0);
    ck_assert_int_eq(own_time(), WALL_S); /* still answered from the run */
    ck_assert_int_eq(api->violations(), 1);
    ck_assert_str_eq(last_call(), "time");
    ck_assert_int_eq(own_entropy(buf, sizeof(buf)), 0);
    ck_assert_int_eq(api->violations(), 2);
    ck_assert_str_eq(last_call(), "getentropy");
    struct askew_violation v;
    ck_assert_int_eq(api->violation_get(1, &v), 0);
    ck_assert_int_eq(v.kind, ASKEW_VIOLATION_OWN_RNG);
    api->leave();
}
END_TEST

/* ---- the simulated disk (ABI 1.3) ---------------------------------------- */

/* The extension's disk hook, played by one file "/sim/f" of up to 64 bytes
 * on fd ASKEW_DISK_FD_BASE + 7; "/sim/other" is another node's disk. */
#define SIM_FD (ASKEW_DISK_FD_BASE + 7)

static struct {
    char data[64];
    uint64_t size;
    int64_t pos;
    int open;
    int calls;
    uint32_t last_op;
    int lock_type;
} disk;

static int64_t test_disk(void *ctx, struct askew_disk_call *c)
{
    (void)ctx;
    disk.calls++;
    disk.last_op = c->op;
    if (c->path != NULL) {
        if (strncmp(c->path, "/sim/other", 10) == 0)
            return ASKEW_DISK_REFUSE;
        if (strcmp(c->path, "/sim/f") != 0)
            return ASKEW_DISK_PASS;
        if (c->op == ASKEW_DCALL_OPEN) {
            disk.open = 1;
            disk.pos = 0;
            return SIM_FD;
        }
        if (c->op == ASKEW_DCALL_STAT) {
            memset(c->st, 0, sizeof(*c->st));
            c->st->ino = 12;
            c->st->size = disk.size;
            c->st->mode = S_IFREG | 0644;
            c->st->nlink = 1;
            return 0;
        }
        return c->op == ASKEW_DCALL_UNLINK || c->op == ASKEW_DCALL_ROUTE ? 0 : -ENOSYS;
    }
    if (c->fd != SIM_FD || !disk.open)
        return -EBADF;
    int64_t off = c->off < 0 ? disk.pos : c->off;
    switch (c->op) {
    case ASKEW_DCALL_WRITE:
        if (off + (int64_t)c->len > 64)
            return -ENOSPC;
        memcpy(disk.data + off, c->buf, c->len);
        if ((uint64_t)(off + (int64_t)c->len) > disk.size)
            disk.size = (uint64_t)(off + (int64_t)c->len);
        if (c->off < 0)
            disk.pos += (int64_t)c->len;
        return (int64_t)c->len;
    case ASKEW_DCALL_READ: {
        int64_t n = off >= (int64_t)disk.size ? 0 : (int64_t)disk.size - off;
        if (n > (int64_t)c->len)
            n = (int64_t)c->len;
        memcpy(c->buf, disk.data + off, (size_t)n);
        if (c->off < 0)
            disk.pos += n;
        return n;
    }
    case ASKEW_DCALL_SEEK:
        disk.pos = c->flags == SEEK_END ? (int64_t)disk.size + c->off : c->off;
        return disk.pos;
    case ASKEW_DCALL_STAT:
        memset(c->st, 0, sizeof(*c->st));
        c->st->size = disk.size;
        c->st->mode = S_IFREG | 0644;
        return 0;
    case ASKEW_DCALL_SYNC:
    case ASKEW_DCALL_TRUNCATE:
        return 0;
    case ASKEW_DCALL_CLOSE:
        disk.open = 0;
        return 0;
    case ASKEW_DCALL_FCNTL:
        if (c->lock != NULL) {
            disk.lock_type = c->lock->type;
            c->lock->type = F_UNLCK;
            return 0;
        }
        return c->flags == F_GETFL ? O_RDWR : ASKEW_DISK_REFUSE;
    default:
        return ASKEW_DISK_REFUSE;
    }
}

static const struct askew_preload_hooks disk_hooks = {
    .size = sizeof(struct askew_preload_hooks),
    .now = test_now,
    .random = test_random,
    .on_violation = test_on_violation,
    .sleep = test_sleep,
    .disk = test_disk,
};

START_TEST(test_sim_a_path_on_the_disk_opens_a_simulated_fd_that_no_kernel_fd_equals)
{
    memset(&disk, 0, sizeof(disk));
    ck_assert_int_eq(api->enter(&disk_hooks), 0);
    int fd = open("/sim/f", O_RDWR | O_CREAT, 0644);
    ck_assert_int_eq(fd, SIM_FD);
    ck_assert_int_ge(fd, ASKEW_DISK_FD_BASE);
    ck_assert_int_eq(write(fd, "hello", 5), 5);
    ck_assert_int_eq(pwrite(fd, "J", 1, 0), 1);
    ck_assert_int_eq(pwrite64(fd, "!", 1, 5), 1);
    char buf[16] = {0};
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf)), 6);
    ck_assert_str_eq(buf, "Jello!");
    memset(buf, 0, sizeof(buf));
    ck_assert_int_eq(pread64(fd, buf, 4, 1), 4);
    ck_assert_str_eq(buf, "ello");
    struct iovec iov[2] = {{.iov_base = "ab", .iov_len = 2},
                           {.iov_base = "c", .iov_len = 1}};
    ck_assert_int_eq(lseek64(fd, 0, SEEK_END), 6);
    ck_assert_int_eq(writev(fd, iov, 2), 3);
    struct stat sb;
    ck_assert_int_eq(fstat(fd, &sb), 0);
    ck_assert_int_eq(sb.st_size, 9);
    ck_assert_int_eq(stat("/sim/f", &sb), 0);
    ck_assert_int_eq(sb.st_ino, 12);
    ck_assert(S_ISREG(sb.st_mode));
    struct statx sx;
    ck_assert_int_eq(statx(AT_FDCWD, "/sim/f", 0, STATX_BASIC_STATS, &sx), 0);
    ck_assert_int_eq(sx.stx_size, 9);
    ck_assert_int_eq(fsync(fd), 0);
    ck_assert_int_eq(fdatasync(fd), 0);
    ck_assert_int_eq(ftruncate(fd, 3), 0);
    ck_assert_int_eq(fcntl(fd, F_GETFL), O_RDWR);
    struct flock fl = {
        .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    ck_assert_int_eq(fcntl(fd, F_SETLK, &fl), 0);
    ck_assert_int_eq(disk.lock_type, F_WRLCK);
    ck_assert_int_eq(fcntl(fd, F_GETLK, &fl), 0);
    ck_assert_int_eq(fl.l_type, F_UNLCK);
    ck_assert_int_eq(fchmod(fd, 0600), 0);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(unlink("/sim/f"), 0);
    ck_assert_int_eq(api->violations(), 0);
    /* A path off the disk is the real file system's. */
    int real = open("/dev/null", O_RDONLY);
    ck_assert_int_ge(real, 0);
    ck_assert_int_lt(real, ASKEW_DISK_FD_BASE);
    ck_assert_int_eq(close(real), 0);
    api->leave();
}
END_TEST

START_TEST(
    test_sim_mmap_and_unmodelled_calls_on_a_simulated_fd_are_refused_and_recorded)
{
    memset(&disk, 0, sizeof(disk));
    ck_assert_int_eq(api->enter(&disk_hooks), 0);
    int fd = open("/sim/f", O_RDWR);
    ck_assert_int_eq(fd, SIM_FD);
    errno = 0;
    ck_assert_ptr_eq(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0), MAP_FAILED);
    ck_assert_int_eq(errno, ENODEV);
    ck_assert_str_eq(last_call(), "mmap");
    struct askew_violation v;
    ck_assert_int_eq(api->violation_get(api->violations() - 1, &v), 0);
    ck_assert_int_eq(v.kind, ASKEW_VIOLATION_DISK);
    ck_assert_int_eq(dup(fd), -1);
    ck_assert_str_eq(last_call(), "dup");
    ck_assert_int_eq(fcntl(fd, F_DUPFD, 0), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(last_call(), "fcntl");
    ck_assert_int_eq(flock(fd, LOCK_EX), -1);
    ck_assert_str_eq(last_call(), "flock");
    /* A stream cannot be served: fopen of a path on the disk is refused. */
    ck_assert_ptr_null(fopen("/sim/f", "r"));
    ck_assert_int_eq(errno, EACCES);
    ck_assert_str_eq(last_call(), "fopen");
    /* Another node's disk. */
    ck_assert_int_eq(open("/sim/other/x", O_RDONLY), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_str_eq(last_call(), "open");
    ck_assert_int_eq(st.callbacks, (int)api->violations());
    api->leave();
}
END_TEST

START_TEST(test_a_simulated_fd_outside_its_run_is_ebadf_and_touches_nothing)
{
    memset(&disk, 0, sizeof(disk));
    ck_assert_int_eq(api->enter(&disk_hooks), 0);
    int fd = open("/sim/f", O_RDWR);
    api->leave();
    char c;
    errno = 0;
    ck_assert_int_eq(read(fd, &c, 1), -1);
    ck_assert_int_eq(errno, EBADF);
    ck_assert_int_eq(write(fd, "x", 1), -1);
    ck_assert_int_eq(errno, EBADF);
    struct stat sb;
    ck_assert_int_eq(fstat(fd, &sb), -1);
    ck_assert_int_eq(errno, EBADF);
    ck_assert_int_eq(close(fd), -1);
    ck_assert_int_eq(errno, EBADF);
    ck_assert_int_eq(disk.calls, 1);
    /* Outside a run the path is the real file system's, which has none. */
    ck_assert_int_eq(open("/sim/f", O_RDONLY), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(api->violations(), 0);
}
END_TEST

/* The numbering both sides of the ABI share (askew_preload.h): a real fd
 * decodes to nothing, a simulated one to the node and handle it was made of,
 * the largest node and handle included, and stays below 2^31. */
START_TEST(test_a_simulated_fd_decodes_to_the_node_and_handle_it_was_made_of)
{
    int64_t node = -2;
    int handle = -2;
    ck_assert_int_eq(askew_disk_fd_decode(0, &node, &handle), 0);
    ck_assert_int_eq(askew_disk_fd_decode(ASKEW_DISK_FD_BASE - 1, &node, &handle), 0);
    ck_assert_int_eq(askew_disk_fd_decode(-1, &node, &handle), 0);
    ck_assert_int_eq(node, -2); /* untouched for a real fd */
    const int64_t nodes[] = {0, 1, 7, ASKEW_DISK_FD_NODES_MAX - 1};
    const int handles[] = {0, 1, 300, ASKEW_DISK_FD_HANDLE_MASK};
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        for (size_t j = 0; j < sizeof(handles) / sizeof(handles[0]); j++) {
            const int fd = askew_disk_fd_encode(nodes[i], handles[j]);
            ck_assert_int_ge(fd, ASKEW_DISK_FD_BASE);
            ck_assert_int_eq(askew_disk_fd_decode(fd, &node, &handle), 1);
            ck_assert_int_eq(node, nodes[i]);
            ck_assert_int_eq(handle, handles[j]);
        }
    }
    ck_assert_int_eq(askew_disk_fd_encode(1, 5), ASKEW_DISK_FD_BASE + (1 << 16) + 5);
    ck_assert_int_eq(askew_disk_fd_decode(SIM_FD, &node, &handle), 1);
    ck_assert_int_eq(node, 0);
    ck_assert_int_eq(handle, 7);
}
END_TEST

START_TEST(test_sim_a_table_from_abi_1_2_passes_every_path_and_has_no_simulated_fd)
{
    struct {
        struct askew_preload_hooks h;
    } old = {disk_hooks};
    old.h.size = (uint32_t)offsetof(struct askew_preload_hooks, disk);
    memset(&disk, 0, sizeof(disk));
    ck_assert_int_eq(api->enter(&old.h), 0);
    ck_assert_int_eq(open("/sim/f", O_RDONLY), -1);
    ck_assert_int_eq(errno, ENOENT); /* the real file system's answer */
    char c;
    ck_assert_int_eq(read(SIM_FD, &c, 1), -1);
    ck_assert_int_eq(errno, EBADF);
    ck_assert_int_eq(disk.calls, 0);
    api->leave();
}
END_TEST

static Suite *preload_suite(void)
{
    Suite *s = suite_create("preload");
    TCase *tc = tcase_create("library");
    tcase_add_checked_fixture(tc, find_api, NULL);
    tcase_add_test(tc, test_api_is_found_and_interposers_come_first);
    tcase_add_test(tc, test_enter_twice_is_busy_and_leave_restores_the_real_clock);
    tcase_add_test(tc, test_enter_rejects_a_hooks_table_without_hooks);
    suite_add_tcase(s, tc);

    tc = tcase_create("passthrough");
    tcase_add_checked_fixture(tc, find_api, NULL);
    tcase_add_test(tc, test_passthrough_clock_gettime_lies_between_two_raw_syscalls);
    tcase_add_test(tc, test_passthrough_preserves_errno_and_error_contracts);
    tcase_add_test(tc, test_passthrough_threads_sockets_and_sleeps_work);
    suite_add_tcase(s, tc);

    tc = tcase_create("simulation");
    tcase_add_checked_fixture(tc, find_api, NULL);
    tcase_add_test(tc, test_sim_clocks_read_the_hooks);
    tcase_add_test(tc, test_sim_cpu_time_reads_clock_times_and_getrusage_from_the_hook);
    tcase_add_test(tc, test_sim_every_time_entry_point_agrees);
    tcase_add_test(tc, test_a_hook_that_calls_an_interposer_gets_the_real_function);
    tcase_add_test(tc, test_sim_entropy_comes_from_the_hook);
    tcase_add_test(tc, test_sim_zero_length_reads_draw_nothing);
    tcase_add_test(tc, test_sim_entropy_keeps_the_error_contracts);
    tcase_add_test(tc, test_sim_reads_of_the_random_devices_come_from_the_run);
    tcase_add_test(tc, test_sim_pthread_create_is_refused_and_recorded_with_its_caller);
    tcase_add_test(tc, test_sim_processes_are_refused);
    tcase_add_test(tc, test_sim_network_families_are_refused_and_unix_is_allowed);
    tcase_add_test(tc, test_sim_getaddrinfo_passes_literals_and_localhost_only);
    tcase_add_test(tc, test_sim_io_on_a_socket_made_before_the_run_is_refused);
    tcase_add_test(tc, test_sim_reverse_lookups_are_refused_unless_numeric);
    tcase_add_test(tc, test_sim_forkpty_daemon_and_fork_underscore_are_refused);
    tcase_add_test(tc, test_vfork_outside_a_run_is_a_real_vfork);
    tcase_add_test(tc, test_sim_a_handoff_the_hook_names_is_recorded_and_still_happens);
    tcase_add_test(tc, test_vfork_inside_a_run_is_refused_and_names_its_caller);
    tcase_add_test(
        tc, test_sim_sleeps_without_a_sleep_hook_return_at_once_and_are_recorded);
    tcase_add_test(tc, test_sim_sleeps_cost_virtual_time_through_the_sleep_hook);
    tcase_add_test(tc, test_sim_sleeps_keep_their_error_contracts);
    tcase_add_test(
        tc, test_sim_a_sleep_the_hook_cannot_take_returns_at_once_and_is_recorded);
    tcase_add_test(tc, test_sim_a_hooks_table_from_abi_1_0_has_every_sleep_refused);
    tcase_add_test(tc, test_sim_timed_waits_time_out_at_once_unless_ready);
    tcase_add_test(tc, test_sim_a_timed_condvar_wait_costs_its_time_and_times_out);
    tcase_add_test(tc,
                   test_sim_the_interpreters_condvar_waits_translate_virtual_deadlines);
    tcase_add_test(tc, test_the_ring_keeps_the_newest_refusals);
    suite_add_tcase(s, tc);

    tc = tcase_create("disk");
    tcase_add_checked_fixture(tc, find_api, NULL);
    tcase_add_test(
        tc, test_sim_a_path_on_the_disk_opens_a_simulated_fd_that_no_kernel_fd_equals);
    tcase_add_test(
        tc,
        test_sim_mmap_and_unmodelled_calls_on_a_simulated_fd_are_refused_and_recorded);
    tcase_add_test(tc,
                   test_a_simulated_fd_outside_its_run_is_ebadf_and_touches_nothing);
    tcase_add_test(
        tc, test_sim_a_table_from_abi_1_2_passes_every_path_and_has_no_simulated_fd);
    tcase_add_test(tc,
                   test_a_simulated_fd_decodes_to_the_node_and_handle_it_was_made_of);
    suite_add_tcase(s, tc);

    tc = tcase_create("isolation");
    tcase_add_checked_fixture(tc, find_api, NULL);
    tcase_add_test(tc, test_a_thread_started_before_enter_stays_real);
    tcase_add_test(tc, test_a_forked_child_starts_outside_the_simulation);
    tcase_add_test(tc, test_a_library_constructor_may_call_every_interposer);
    tcase_add_test(tc, test_self_test_names_another_preload_that_comes_first);
    tcase_add_test(tc, test_self_test_fails_when_the_library_is_dlopened);
    tcase_add_test(tc,
                   test_self_test_passes_after_a_preload_that_defines_nothing_of_ours);
    tcase_add_test(tc,
                   test_a_failed_dlsym_keeps_the_policy_and_falls_back_to_the_syscall);
    tcase_add_test(
        tc,
        test_sim_clock_and_entropy_from_an_object_with_its_own_openssl_are_recorded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(preload_suite);
}
