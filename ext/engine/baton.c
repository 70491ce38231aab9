/* SPDX-License-Identifier: Apache-2.0 */
/* The baton (baton.h): a mutex, one condition variable per actor, and the
 * seeded draw of the next holder. Owns nothing but the order: it never
 * reads a clock, never starts a thread and never calls Python; the caller
 * says which actors are runnable. */
#include "baton.h"

#include <errno.h>
#include <stdlib.h>

int askew_baton_init(struct askew_baton *b)
{
    *b = (struct askew_baton){0};
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        return -ENOMEM;
    uint32_t home;
    const int rc = askew_baton_add(b, &home);
    if (rc < 0) {
        pthread_mutex_destroy(&b->mu);
        return rc;
    }
    b->actors[ASKEW_BATON_HOME]->state = ASKEW_BATON_RUNNABLE;
    return 0;
}

static void drop_actors(struct askew_baton *b, size_t keep)
{
    while (b->len > keep) {
        struct askew_baton_actor *a = b->actors[--b->len];
        pthread_cond_destroy(&a->wake);
        free(a);
    }
}

void askew_baton_free(struct askew_baton *b)
{
    drop_actors(b, 0);
    free(b->actors);
    pthread_mutex_destroy(&b->mu);
    *b = (struct askew_baton){0};
}

int askew_baton_reset(struct askew_baton *b, uint64_t seed)
{
    pthread_mutex_lock(&b->mu);
    for (size_t i = 1; i < b->len; i++) {
        if (b->actors[i]->state != ASKEW_BATON_DONE) {
            pthread_mutex_unlock(&b->mu);
            return -EBUSY;
        }
    }
    drop_actors(b, 1);
    b->actors[ASKEW_BATON_HOME]->state = ASKEW_BATON_RUNNABLE;
    b->holder = ASKEW_BATON_HOME;
    b->handoffs = 0;
    askew_rng_seed(&b->rng, askew_seed_stream(seed, ASKEW_STREAM_THREADS));
    pthread_mutex_unlock(&b->mu);
    return 0;
}

int askew_baton_add(struct askew_baton *b, uint32_t *id)
{
    if (b->len >= UINT32_MAX)
        return -ENOSPC;
    struct askew_baton_actor *a = malloc(sizeof *a);
    if (a == NULL)
        return -ENOMEM;
    if (pthread_cond_init(&a->wake, NULL) != 0) {
        free(a);
        return -ENOMEM;
    }
    a->state = ASKEW_BATON_BLOCKED;
    pthread_mutex_lock(&b->mu);
    const int rc =
        askew__grow((void **)&b->actors, &b->cap, b->len + 1, sizeof *b->actors);
    if (rc < 0) {
        pthread_mutex_unlock(&b->mu);
        pthread_cond_destroy(&a->wake);
        free(a);
        return rc;
    }
    *id = (uint32_t)b->len;
    b->actors[b->len++] = a;
    pthread_mutex_unlock(&b->mu);
    return 0;
}

int askew_baton_set(struct askew_baton *b, uint32_t id, enum askew_baton_state state)
{
    if (state > ASKEW_BATON_DONE)
        return -EINVAL;
    pthread_mutex_lock(&b->mu);
    int rc = 0;
    if (id >= b->len || b->actors[id]->state == ASKEW_BATON_DONE)
        rc = -EINVAL;
    else
        b->actors[id]->state = state;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int askew_baton_state_of(struct askew_baton *b, uint32_t id,
                         enum askew_baton_state *out)
{
    pthread_mutex_lock(&b->mu);
    const int rc = id < b->len ? 0 : -EINVAL;
    if (rc == 0)
        *out = b->actors[id]->state;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int askew_baton_pick(struct askew_baton *b, uint32_t self, uint32_t *next,
                     uint32_t *runnable)
{
    pthread_mutex_lock(&b->mu);
    uint32_t count = 0;
    for (size_t i = 0; i < b->len; i++)
        count += b->actors[i]->state == ASKEW_BATON_RUNNABLE;
    *runnable = count;
    if (count == 0) {
        pthread_mutex_unlock(&b->mu);
        return -EDEADLK;
    }
    const int stays = self < b->len && b->actors[self]->state == ASKEW_BATON_RUNNABLE;
    if (stays &&
        (count == 1 || !askew_rng_chance_ppm(&b->rng, ASKEW_BATON_SWITCH_PPM))) {
        *next = self;
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    const uint32_t among = count - (uint32_t)stays; /* the others, or all */
    uint64_t k = among == 1 ? 0 : askew_rng_below(&b->rng, among);
    for (size_t i = 0; i < b->len; i++) {
        if (b->actors[i]->state != ASKEW_BATON_RUNNABLE || (stays && i == self))
            continue;
        if (k-- == 0) {
            *next = (uint32_t)i;
            break;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return 0;
}

/* With the mutex held: `self` hands the baton to `next`. */
static int hand(struct askew_baton *b, uint32_t self, uint32_t next)
{
    if (self >= b->len || next >= b->len)
        return -EINVAL;
    if (b->holder != self)
        return -EPERM;
    if (next != self) {
        b->holder = next;
        b->handoffs++;
        pthread_cond_signal(&b->actors[next]->wake);
    }
    return 0;
}

/* With the mutex held: until `self` holds the baton. */
static void wait_for(struct askew_baton *b, uint32_t self)
{
    while (b->holder != self)
        pthread_cond_wait(&b->actors[self]->wake, &b->mu);
}

int askew_baton_give(struct askew_baton *b, uint32_t self, uint32_t next)
{
    pthread_mutex_lock(&b->mu);
    const int rc = hand(b, self, next);
    if (rc == 0)
        wait_for(b, self);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int askew_baton_pass(struct askew_baton *b, uint32_t self, uint32_t next)
{
    pthread_mutex_lock(&b->mu);
    const int rc = hand(b, self, next);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int askew_baton_wait(struct askew_baton *b, uint32_t self)
{
    pthread_mutex_lock(&b->mu);
    const int rc = self < b->len ? 0 : -EINVAL;
    if (rc == 0)
        wait_for(b, self);
    pthread_mutex_unlock(&b->mu);
    return rc;
}
