/* SPDX-License-Identifier: Apache-2.0 */
/* The timer heap behind the virtual clock: a 4-ary min-heap of pointers to
 * timers embedded in their owners, ordered by (deadline_ns, seq), each timer
 * knowing its own index so that cancellation is an O(log n) removal. The
 * clock itself is sched->now_ns; it only moves in sched.c. Never reads the
 * host clock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

void askew__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "askew: engine invariant broken: %s (%s:%d)\n", expr, file, line);
    abort();
}

static inline int before(const struct askew_heap_slot *a,
                         const struct askew_heap_slot *b)
{
    if (a->deadline_ns != b->deadline_ns)
        return a->deadline_ns < b->deadline_ns;
    return a->seq < b->seq;
}

static inline void place(struct askew_heap *heap, size_t i, struct askew_heap_slot slot)
{
    heap->items[i] = slot;
    slot.timer->index = i; /* a store: it does not stall the sift */
}

/* A 4-ary heap: half the depth of a binary one, so half the moves, and a
 * node's four children share two cache lines. */
#define ARITY 4

static void sift_up(struct askew_heap *heap, size_t i)
{
    const struct askew_heap_slot slot = heap->items[i];
    while (i > 0) {
        const size_t parent = (i - 1) / ARITY;
        if (!before(&slot, &heap->items[parent]))
            break;
        place(heap, i, heap->items[parent]);
        i = parent;
    }
    place(heap, i, slot);
}

static void sift_down(struct askew_heap *heap, size_t i)
{
    const struct askew_heap_slot slot = heap->items[i];
    for (;;) {
        const size_t first = ARITY * i + 1;
        if (first >= heap->len)
            break;
        size_t child = first;
        const size_t end = first + ARITY < heap->len ? first + ARITY : heap->len;
        for (size_t c = first + 1; c < end; c++)
            if (before(&heap->items[c], &heap->items[child]))
                child = c;
        if (!before(&heap->items[child], &slot))
            break;
        place(heap, i, heap->items[child]);
        i = child;
    }
    place(heap, i, slot);
}

void askew_heap_init(struct askew_heap *heap)
{
    heap->items = NULL;
    heap->len = 0;
    heap->cap = 0;
}

void askew_heap_free(struct askew_heap *heap)
{
    free(heap->items);
    askew_heap_init(heap);
}

int askew_heap_push(struct askew_heap *heap, struct askew_timer *timer)
{
    ASKEW_ASSERT(timer->index == ASKEW_TIMER_IDLE);
    if (heap->len == heap->cap) {
        const int rc = askew__grow((void **)&heap->items, &heap->cap, heap->len + 1,
                                   sizeof *heap->items);
        if (rc < 0)
            return rc;
    }
    heap->items[heap->len] =
        (struct askew_heap_slot){timer->deadline_ns, timer->seq, timer};
    sift_up(heap, heap->len++);
    return 0;
}

struct askew_timer *askew_heap_peek(const struct askew_heap *heap)
{
    return heap->len ? heap->items[0].timer : NULL;
}

void askew_heap_remove(struct askew_heap *heap, struct askew_timer *timer)
{
    const size_t i = timer->index;
    if (i == ASKEW_TIMER_IDLE)
        return;
    ASKEW_ASSERT(i < heap->len && heap->items[i].timer == timer);
    timer->index = ASKEW_TIMER_IDLE;
    const struct askew_heap_slot last = heap->items[--heap->len];
    if (last.timer == timer)
        return;
    place(heap, i, last);
    if (i > 0 && before(&last, &heap->items[(i - 1) / ARITY]))
        sift_up(heap, i);
    else
        sift_down(heap, i);
}

struct askew_timer *askew_heap_pop(struct askew_heap *heap)
{
    struct askew_timer *top = askew_heap_peek(heap);
    if (top != NULL)
        askew_heap_remove(heap, top);
    return top;
}
