/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library whose constructor calls interposed functions, run under
 * the preload by check_preload.c: whichever constructor runs first, every
 * interposer must already work (lazy resolution). Owns nothing else; it
 * must never enter a simulation. */
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int probe_ctor_ok;

static void *nothing(void *arg)
{
    return arg;
}

__attribute__((constructor)) static void probe_ctor(void)
{
    struct timespec ts;
    unsigned char buf[16];
    pthread_t t;
    int ok = clock_gettime(CLOCK_MONOTONIC, &ts) == 0;
    ok = ok && time(NULL) > 0;
    ok = ok && getrandom(buf, sizeof(buf), 0) == (ssize_t)sizeof(buf);
    ok = ok && syscall(SYS_getrandom, buf, sizeof(buf), 0) == (long)sizeof(buf);
    ok = ok && pthread_create(&t, NULL, nothing, NULL) == 0 &&
         pthread_join(t, NULL) == 0;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ok = ok && fd >= 0;
    if (fd >= 0)
        close(fd);
    probe_ctor_ok = ok;
}
