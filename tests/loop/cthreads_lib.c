/* SPDX-License-Identifier: Apache-2.0 */
/* C threads for tests/loop/test_preload_threads.py, compiled at test time
 * and called through ctypes under askew-exec: each function starts threads
 * with pthread_create, has them meet at the calls the preload makes switch
 * points of, and joins them. Test code only. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- an order the seed chooses --------------------------------------------- */

static char trace[4096];
static size_t trace_len;
static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;

static void note(const char *who, int i)
{
    pthread_mutex_lock(&trace_mu);
    trace_len +=
        (size_t)snprintf(trace + trace_len, sizeof(trace) - trace_len, "%s%d ", who, i);
    pthread_mutex_unlock(&trace_mu);
}

static void *worker(void *arg)
{
    const char *who = arg;
    for (int i = 0; i < 5; i++)
        note(who, i);
    return NULL;
}

/* Three threads noting their steps under one mutex: the order they took it. */
const char *interleave(void)
{
    static char *names[] = {"a", "b", "c"};
    pthread_t t[3];
    trace_len = 0;
    trace[0] = '\0';
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t[i], NULL, worker, names[i]) != 0)
            return "pthread_create failed";
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    return trace;
}

/* ---- two mutexes taken in opposite orders --------------------------------- */

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t second = PTHREAD_MUTEX_INITIALIZER;

static void *forward(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&first);
    usleep(1000);
    pthread_mutex_lock(&second);
    pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&first);
    return NULL;
}

static void *backward(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&second);
    usleep(1000);
    pthread_mutex_lock(&first);
    pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&second);
    return NULL;
}

/* Both threads hold one lock and want the other's: the join never ends. */
int opposite_orders(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, forward, NULL);
    pthread_create(&b, NULL, backward, NULL);
    const int ra = pthread_join(a, NULL);
    const int rb = pthread_join(b, NULL);
    return ra != 0 ? ra : rb;
}

/* ---- timed waits ------------------------------------------------------------- */

static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int signalled;
static int wait_rc;
static double waited_s;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *waiter(void *arg)
{
    const double seconds = *(const double *)arg;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)seconds;
    const double t0 = mono();
    pthread_mutex_lock(&cmu);
    wait_rc = 0;
    while (!signalled && wait_rc == 0)
        wait_rc = pthread_cond_timedwait(&cv, &cmu, &deadline);
    pthread_mutex_unlock(&cmu);
    waited_s = mono() - t0;
    return NULL;
}

static void *signaller(void *arg)
{
    usleep((useconds_t)(*(const double *)arg * 1e6));
    pthread_mutex_lock(&cmu);
    signalled = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&cmu);
    return NULL;
}

/* A thread waits `seconds` (whole) for a signal another thread sends after
 * `signal_after` seconds (< 0: never): how long it waited, on its clock;
 * *rc is the wait's last result. */
double timed_wait(double seconds, double signal_after, int *rc)
{
    pthread_t w, s;
    signalled = 0;
    pthread_create(&w, NULL, waiter, &seconds);
    if (signal_after >= 0)
        pthread_create(&s, NULL, signaller, &signal_after);
    pthread_join(w, NULL);
    if (signal_after >= 0)
        pthread_join(s, NULL);
    *rc = wait_rc;
    return waited_s;
}

/* ---- semaphores: a producer and a consumer --------------------------------- */

static sem_t items;
static int consumed;

static void *consumer(void *arg)
{
    const int n = *(const int *)arg;
    for (int i = 0; i < n; i++) {
        sem_wait(&items);
        consumed++;
    }
    return NULL;
}

int produce_consume(int n)
{
    pthread_t c;
    consumed = 0;
    sem_init(&items, 0, 0);
    pthread_create(&c, NULL, consumer, &n);
    for (int i = 0; i < n; i++) {
        usleep(10);
        sem_post(&items);
    }
    pthread_join(c, NULL);
    sem_destroy(&items);
    return consumed;
}

/* ---- a thread that never ends ---------------------------------------------------- */

static pthread_mutex_t never_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cv = PTHREAD_COND_INITIALIZER;
static int cleaned;

static void cleanup(void *arg)
{
    (void)arg;
    cleaned++;
    pthread_mutex_unlock(&never_mu); /* as a cancelled wait's handler does */
}

static void *forever(void *arg)
{
    (void)arg;
    pthread_cleanup_push(cleanup, NULL);
    pthread_mutex_lock(&never_mu);
    for (;;)
        pthread_cond_wait(&never_cv, &never_mu);
    pthread_cleanup_pop(0);
    return NULL;
}

static int start_detached(void *(*fn)(void *))
{
    pthread_t t;
    const int rc = pthread_create(&t, NULL, fn, NULL);
    if (rc == 0)
        pthread_detach(t);
    return rc;
}

/* Starts a thread that waits for good and returns without joining it. */
int start_forever(void)
{
    return start_detached(forever);
}

int cleanups(void)
{
    return cleaned;
}

/* ---- a thread that ticks while its node lives --------------------------------- */

static long ticked;

static void *ticker(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(1000);
        ticked++;
    }
    return NULL;
}

int start_ticker(void)
{
    ticked = 0;
    return start_detached(ticker);
}

long ticks(void)
{
    return ticked;
}

/* Starts `n` threads that wait for good: how many pthread_create made
 * (also kept for made_last: the refusal of one may cut the caller short). */
static int made_last;

int start_many(int n)
{
    made_last = 0;
    for (int i = 0; i < n; i++)
        made_last += start_detached(forever) == 0;
    return made_last;
}

int made(void)
{
    return made_last;
}
