/* SPDX-License-Identifier: Apache-2.0 */
/* The fallback rule for a failed dlsym, run with every waiting call of the
 * poll family marked unresolved (ASKEW_PRELOAD_UNRESOLVED): inside a run
 * each still asks the kernel without waiting and records the wait, exactly
 * as with libc's function; outside it each still waits as asked. Exits 0
 * and prints "ok", or 1 and what differed. A wait that really blocks is
 * left to the caller's timeout (check_preload's), never timed here. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "askew_preload.h"

#define FOREVER_MS 600000 /* ten minutes: far past any test timeout */

static int now(void *ctx, int realtime, struct timespec *out)
{
    (void)ctx;
    out->tv_sec = realtime ? ASKEW_WALL_EPOCH_S : 1000;
    out->tv_nsec = 0;
    return 0;
}

static int random_bytes(void *ctx, void *buf, size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return 0;
}

static int failed;

static void expect(const char *what, int rc)
{
    if (rc != 0) {
        printf("%s returned %d, not 0\n", what, rc);
        failed = 1;
    }
}

static void wait_every_way(int fd, int ep, int timeout_ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
    struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};
    struct epoll_event ev;
    sigset_t mask;
    sigemptyset(&mask);
    fd_set r;
    expect("poll", poll(&pfd, 1, timeout_ms));
    expect("ppoll", ppoll(&pfd, 1, &ts, &mask));
    FD_ZERO(&r);
    FD_SET(fd, &r);
    expect("select", select(fd + 1, &r, NULL, NULL, &tv));
    FD_ZERO(&r);
    FD_SET(fd, &r);
    expect("pselect", pselect(fd + 1, &r, NULL, NULL, &ts, &mask));
    expect("epoll_wait", epoll_wait(ep, &ev, 1, timeout_ms));
    expect("epoll_pwait", epoll_pwait(ep, &ev, 1, timeout_ms, &mask));
}

/* Weak: bound by ld.so to the LD_PRELOAD'ed library's, NULL without one. */
extern __typeof__(askew_preload_get_api) askew_preload_get_api __attribute__((weak));

int main(void)
{
    const struct askew_preload_api *api =
        askew_preload_get_api ? askew_preload_get_api(ASKEW_PRELOAD_ABI_MAJOR) : NULL;
    if (api == NULL) {
        printf("preload API not found\n");
        return 2;
    }
    /* A socketpair is this process's both ends (a pipe made before the
     * run could be fed from outside it, and waiting on one is refused). */
    int p[2];
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) != 0 || ep < 0 ||
        epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0) {
        printf("setup failed\n");
        return 2;
    }
    /* Outside a run: a short real wait through the system call. */
    wait_every_way(p[0], ep, 1);
    const struct askew_preload_hooks hooks = {
        .size = sizeof(hooks), .now = now, .random = random_bytes};
    if (api->enter(&hooks) != 0) {
        printf("enter failed\n");
        return 2;
    }
    wait_every_way(p[0], ep, FOREVER_MS);
    const uint64_t recorded = api->violations();
    api->leave();
    if (recorded != 6) {
        printf("%llu waits recorded, not 6\n", (unsigned long long)recorded);
        failed = 1;
    }
    if (!failed)
        printf("ok\n");
    return failed;
}
