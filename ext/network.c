/* SPDX-License-Identifier: Apache-2.0 */
/* The network binding: messages in flight (engine net.c) to and from the
 * Python world. Placeholder until the world lands: no timer of another kind
 * than a loop handle is ever scheduled. */
#include "loop.h"

int askew__net_init(struct askew_loop_state *self)
{
    self->net = NULL;
    return 0;
}

void askew__net_free(struct askew_loop_state *self)
{
    self->net = NULL;
}

void askew__net_reset(struct askew_loop_state *self, uint64_t seed)
{
    (void)self;
    (void)seed;
}

int askew__net_traverse(struct askew_loop_state *self, visitproc visit, void *arg)
{
    (void)self;
    (void)visit;
    (void)arg;
    return 0;
}

int askew__net_fire(struct askew_loop_state *self, struct askew_timer *timer)
{
    (void)self;
    ASKEW_ASSERT(timer->kind == 1);
    return 0;
}

void askew__net_drop_timer(struct askew_timer *timer)
{
    (void)timer;
}
