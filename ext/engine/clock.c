/* SPDX-License-Identifier: Apache-2.0 */
/* The timer heap behind the virtual clock: a binary min-heap of pointers to
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

static inline int before(const struct askew_timer *a, const struct askew_timer *b)
{
    if (a->deadline_ns != b->deadline_ns)
        return a->deadline_ns < b->deadline_ns;
    return a->seq < b->seq;
}

static inline void place(struct askew_heap *heap, size_t i, struct askew_timer *t)
{
    heap->items[i] = t;
    t->index = i;
}

static void sift_up(struct askew_heap *heap, size_t i)
{
    struct askew_timer *t = heap->items[i];
    while (i > 0) {
        const size_t parent = (i - 1) / 2;
        if (!before(t, heap->items[parent]))
            break;
        place(heap, i, heap->items[parent]);
        i = parent;
    }
    place(heap, i, t);
}

static void sift_down(struct askew_heap *heap, size_t i)
{
    struct askew_timer *t = heap->items[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= heap->len)
            break;
        if (child + 1 < heap->len && before(heap->items[child + 1], heap->items[child]))
            child++;
        if (!before(heap->items[child], t))
            break;
        place(heap, i, heap->items[child]);
        i = child;
    }
    place(heap, i, t);
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
        const size_t cap = heap->cap ? heap->cap * 2 : 64;
        struct askew_timer **items = realloc(heap->items, cap * sizeof *items);
        if (items == NULL)
            return -ENOMEM;
        heap->items = items;
        heap->cap = cap;
    }
    heap->items[heap->len] = timer;
    sift_up(heap, heap->len++);
    return 0;
}

struct askew_timer *askew_heap_peek(const struct askew_heap *heap)
{
    return heap->len ? heap->items[0] : NULL;
}

void askew_heap_remove(struct askew_heap *heap, struct askew_timer *timer)
{
    const size_t i = timer->index;
    if (i == ASKEW_TIMER_IDLE)
        return;
    ASKEW_ASSERT(i < heap->len && heap->items[i] == timer);
    timer->index = ASKEW_TIMER_IDLE;
    struct askew_timer *last = heap->items[--heap->len];
    if (last == timer)
        return;
    place(heap, i, last);
    if (i > 0 && before(last, heap->items[(i - 1) / 2]))
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
