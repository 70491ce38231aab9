/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for ext/engine/net.c and net_topo.c together, through
 * net.h: the claims of net.h one by one, a
 * randomized comparison against a small reference model written here from
 * the documented semantics (matrices, linear scans, nothing clever), and a
 * scale run. Time is driven by popping the scheduler's timer heap directly,
 * so these tests pin the network, not the scheduler's tie-breaking. Tests
 * never assert on wall-clock time. */
#include "engine.h"
#include "net.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MS 1000000LL

/* ---- harness: a scheduler, a network, and the events it produced -------- */

struct event {
    int64_t t_ns;
    struct askew_net_delivery d;
};

struct harness {
    struct askew_sched sched;
    struct askew_net net;
    struct event *events;
    size_t events_len;
    size_t events_cap;
    struct askew_net_delivery *released;
    size_t released_len;
    size_t released_cap;
};

static struct harness h;

static void *grow(void *items, size_t *cap, size_t size)
{
    *cap = *cap ? *cap * 2 : 256;
    items = realloc(items, *cap * size);
    ck_assert_ptr_nonnull(items);
    return items;
}

static void release(void *ctx, const struct askew_net_delivery *msg)
{
    struct harness *hh = ctx;

    if (hh->released_len == hh->released_cap)
        hh->released = grow(hh->released, &hh->released_cap, sizeof(*hh->released));
    hh->released[hh->released_len++] = *msg;
}

static void h_open(uint64_t seed, uint32_t nodes)
{
    memset(&h, 0, sizeof(h));
    ck_assert_int_eq(askew_sched_init(&h.sched), 0);
    askew_sched_reset(&h.sched, seed);
    ck_assert_int_eq(askew_net_init(&h.net, &h.sched), 0);
    ck_assert_int_eq(askew_net_reset(&h.net, seed), 0);
    for (uint32_t i = 0; i < nodes; i++) {
        uint32_t id;
        ck_assert_int_eq(askew_net_node_add(&h.net, &id), 0);
        ck_assert_uint_eq(id, i);
    }
}

static void h_close(void)
{
    askew_net_free(&h.net, release, &h);
    askew_sched_free(&h.sched);
    free(h.events);
    free(h.released);
    memset(&h, 0, sizeof(h));
}

/* Fire every message due by t_ns, in heap order, then stop the clock at t_ns. */
static void advance_to(int64_t t_ns)
{
    struct askew_timer *timer;

    while ((timer = askew_heap_peek(&h.sched.timers)) != NULL &&
           timer->deadline_ns <= t_ns) {
        ck_assert_ptr_eq(askew_heap_pop(&h.sched.timers), timer);
        ck_assert_uint_eq(timer->kind, ASKEW_TIMER_KIND_MESSAGE);
        ck_assert_int_ge(timer->deadline_ns, h.sched.now_ns);
        h.sched.now_ns = timer->deadline_ns;
        if (h.events_len == h.events_cap)
            h.events = grow(h.events, &h.events_cap, sizeof(*h.events));
        struct event *ev = &h.events[h.events_len++];
        ev->t_ns = h.sched.now_ns;
        ck_assert_int_eq(askew_net_deliver(&h.net, timer, &ev->d), 0);
    }
    if (t_ns > h.sched.now_ns)
        h.sched.now_ns = t_ns;
}

static struct askew_net_sent send_ok(uint32_t src, uint32_t dst, uintptr_t tag)
{
    struct askew_net_sent sent;

    ck_assert_int_eq(askew_net_send(&h.net, src, dst, (void *)tag, &sent), 0);
    return sent;
}

static void configure(int64_t lo, int64_t hi, uint32_t loss_ppm, uint32_t duplicate_ppm)
{
    struct askew_net_link link = {lo, hi, loss_ppm, duplicate_ppm};

    ck_assert_int_eq(askew_net_configure(&h.net, &link), 0);
}

static void check_balance(void)
{
    const struct askew_net_stats *s = &h.net.stats;
    uint64_t dropped = 0;

    for (int i = 0; i < ASKEW_NET_OUTCOMES; i++)
        dropped += s->dropped[i];
    ck_assert_uint_eq(s->sent + s->duplicated, s->delivered + dropped + s->in_flight);
    ck_assert_uint_eq(s->in_flight, h.sched.timers.len);
}

/* ---- claims --------------------------------------------------------------- */

START_TEST(test_net_nodes_get_ids_in_order_and_start_alive)
{
    int alive;
    uint32_t incarnation;

    h_open(1, 3);
    ck_assert_int_eq(askew_net_node_state(&h.net, 2, &alive, &incarnation), 0);
    ck_assert_int_eq(alive, 1);
    ck_assert_uint_eq(incarnation, 0);
    ck_assert_int_eq(askew_net_node_state(&h.net, 3, &alive, &incarnation), -EINVAL);
    h_close();
}
END_TEST

START_TEST(test_net_default_link_is_1ms_to_10ms_without_loss_or_duplication)
{
    struct askew_net_link link;

    h_open(2, 2);
    ck_assert_int_eq(askew_net_link_get(&h.net, 0, 1, &link), 0);
    ck_assert_int_eq(link.latency_ns_min, 1 * MS);
    ck_assert_int_eq(link.latency_ns_max, 10 * MS);
    ck_assert_uint_eq(link.loss_ppm, 0);
    ck_assert_uint_eq(link.duplicate_ppm, 0);
    h_close();
}
END_TEST

START_TEST(test_net_messages_arrive_within_latency_bounds_and_reorder)
{
    int reordered = 0;

    h_open(3, 2);
    for (uintptr_t i = 1; i <= 200; i++) {
        struct askew_net_sent sent = send_ok(0, 1, i);
        ck_assert_uint_eq(sent.outcome, ASKEW_NET_IN_FLIGHT);
        ck_assert_uint_eq(sent.copies, 1);
        ck_assert_int_ge(sent.deadline_ns, 1 * MS);
        ck_assert_int_le(sent.deadline_ns, 10 * MS);
    }
    advance_to(10 * MS);
    ck_assert_uint_eq(h.events_len, 200);
    for (size_t i = 0; i < h.events_len; i++) {
        ck_assert_uint_eq(h.events[i].d.outcome, ASKEW_NET_DELIVERED);
        ck_assert_int_eq(h.events[i].d.sent_ns, 0);
        if (i > 0 && h.events[i].d.id < h.events[i - 1].d.id)
            reordered = 1;
    }
    ck_assert_int_eq(reordered, 1);
    ck_assert_uint_eq(h.net.stats.delivered, 200);
    check_balance();
    h_close();
}
END_TEST

START_TEST(test_net_send_from_crashed_node_drops_crashed_without_a_draw)
{
    struct askew_rng before;

    h_open(4, 2);
    configure(1 * MS, 9 * MS, 500000, 500000);
    ck_assert_int_eq(askew_net_crash(&h.net, 0), 0);
    before = h.net.rng;
    struct askew_trace expect = h.sched.trace;
    struct askew_net_sent sent = send_ok(0, 1, 7);
    ck_assert_uint_eq(sent.outcome, ASKEW_NET_DROPPED_CRASHED);
    ck_assert_uint_eq(sent.copies, 0);
    ck_assert_mem_eq(&before, &h.net.rng, sizeof(before));
    ck_assert_uint_eq(h.net.stats.dropped[ASKEW_NET_DROPPED_CRASHED], 1);
    /* The drop is one event in the trace, and it moves the hash. */
    ck_assert_uint_eq(h.sched.trace.count, expect.count + 1);
    ck_assert_uint_ne(h.sched.trace.hash, expect.hash);
    check_balance();
    h_close();
}
END_TEST

START_TEST(test_net_message_to_node_that_crashes_in_flight_drops_crashed)
{
    h_open(5, 2);
    send_ok(0, 1, 1);
    ck_assert_int_eq(askew_net_crash(&h.net, 1), 0);
    advance_to(20 * MS);
    ck_assert_uint_eq(h.events_len, 1);
    ck_assert_uint_eq(h.events[0].d.outcome, ASKEW_NET_DROPPED_CRASHED);
    ck_assert_uint_eq((uintptr_t)h.events[0].d.payload, 1);
    h_close();
}
END_TEST

START_TEST(test_net_message_to_restarted_node_drops_crashed)
{
    uint32_t incarnation;

    h_open(6, 2);
    send_ok(0, 1, 1);
    ck_assert_int_eq(askew_net_crash(&h.net, 1), 0);
    ck_assert_int_eq(askew_net_restart(&h.net, 1), 0);
    ck_assert_int_eq(askew_net_node_state(&h.net, 1, NULL, &incarnation), 0);
    ck_assert_uint_eq(incarnation, 1);
    send_ok(0, 1, 2); /* to the new incarnation: arrives */
    advance_to(20 * MS);
    ck_assert_uint_eq(h.events_len, 2);
    for (size_t i = 0; i < 2; i++) {
        uintptr_t tag = (uintptr_t)h.events[i].d.payload;
        ck_assert_uint_eq(h.events[i].d.outcome,
                          tag == 1 ? ASKEW_NET_DROPPED_CRASHED : ASKEW_NET_DELIVERED);
    }
    h_close();
}
END_TEST

START_TEST(test_net_message_sent_before_the_sender_crashed_still_arrives)
{
    h_open(7, 2);
    send_ok(0, 1, 1);
    ck_assert_int_eq(askew_net_crash(&h.net, 0), 0);
    advance_to(20 * MS);
    ck_assert_uint_eq(h.events_len, 1);
    ck_assert_uint_eq(h.events[0].d.outcome, ASKEW_NET_DELIVERED);
    h_close();
}
END_TEST

START_TEST(test_net_partition_drops_messages_between_groups)
{
    const uint32_t nodes[] = {0, 1, 2, 3};
    const size_t lens[] = {2, 2};

    h_open(8, 5);
    ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, 2), 0);
    ck_assert_uint_eq(send_ok(0, 2, 1).outcome, ASKEW_NET_DROPPED_PARTITIONED);
    ck_assert_uint_eq(send_ok(3, 1, 2).outcome, ASKEW_NET_DROPPED_PARTITIONED);
    ck_assert_uint_eq(send_ok(0, 1, 3).outcome, ASKEW_NET_IN_FLIGHT);
    ck_assert_uint_eq(send_ok(2, 3, 4).outcome, ASKEW_NET_IN_FLIGHT);
    /* Node 4 is in no group: connected to everyone. */
    ck_assert_uint_eq(send_ok(4, 0, 5).outcome, ASKEW_NET_IN_FLIGHT);
    ck_assert_uint_eq(send_ok(2, 4, 6).outcome, ASKEW_NET_IN_FLIGHT);
    ck_assert_uint_eq(h.net.stats.dropped[ASKEW_NET_DROPPED_PARTITIONED], 2);
    advance_to(20 * MS);
    ck_assert_uint_eq(h.net.stats.delivered, 4);
    check_balance();
    h_close();
}
END_TEST

START_TEST(test_net_partition_drops_messages_already_in_flight)
{
    const uint32_t nodes[] = {0, 1};
    const size_t lens[] = {1, 1};

    h_open(9, 2);
    send_ok(0, 1, 1);
    ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, 2), 0);
    advance_to(20 * MS);
    ck_assert_uint_eq(h.events_len, 1);
    ck_assert_uint_eq(h.events[0].d.outcome, ASKEW_NET_DROPPED_PARTITIONED);
    h_close();
}
END_TEST

START_TEST(test_net_partition_replaces_the_previous_one)
{
    const uint32_t first[] = {0, 1};
    const uint32_t second[] = {1, 2};
    const size_t lens[] = {1, 1};
    int cut;

    h_open(10, 3);
    ck_assert_int_eq(askew_net_partition(&h.net, first, lens, 2), 0);
    ck_assert_int_eq(askew_net_partition(&h.net, second, lens, 2), 0);
    ck_assert_int_eq(askew_net_link_cut(&h.net, 0, 1, &cut), 0);
    ck_assert_int_eq(cut, 0);
    ck_assert_int_eq(askew_net_link_cut(&h.net, 2, 1, &cut), 0);
    ck_assert_int_eq(cut, 1);
    h_close();
}
END_TEST

START_TEST(test_net_overlapping_partition_is_einval_and_changes_nothing)
{
    const uint32_t good[] = {0, 1};
    const uint32_t overlap[] = {0, 2, 2};
    const uint32_t twice[] = {2, 2};
    const uint32_t unknown[] = {0, 9};
    const size_t lens2[] = {1, 1};
    const size_t lens3[] = {1, 2};
    const size_t lens_one[] = {2};
    uint64_t hash;
    int cut;

    h_open(11, 3);
    ck_assert_int_eq(askew_net_partition(&h.net, good, lens2, 2), 0);
    hash = h.sched.trace.hash;
    ck_assert_int_eq(askew_net_partition(&h.net, overlap, lens3, 2), -EINVAL);
    ck_assert_int_eq(askew_net_partition(&h.net, twice, lens_one, 1), -EINVAL);
    ck_assert_int_eq(askew_net_partition(&h.net, unknown, lens2, 2), -EINVAL);
    ck_assert_uint_eq(h.sched.trace.hash, hash);
    ck_assert_int_eq(askew_net_link_cut(&h.net, 0, 1, &cut), 0);
    ck_assert_int_eq(cut, 1);
    ck_assert_int_eq(askew_net_link_cut(&h.net, 0, 2, &cut), 0);
    ck_assert_int_eq(cut, 0);
    h_close();
}
END_TEST

START_TEST(test_net_one_way_cut_drops_one_direction_only)
{
    h_open(12, 2);
    ck_assert_int_eq(askew_net_cut(&h.net, 0, 1), 0);
    ck_assert_uint_eq(send_ok(0, 1, 1).outcome, ASKEW_NET_DROPPED_PARTITIONED);
    ck_assert_uint_eq(send_ok(1, 0, 2).outcome, ASKEW_NET_IN_FLIGHT);
    h_close();
}
END_TEST

START_TEST(test_net_isolate_cuts_both_ways_but_not_loopback)
{
    h_open(13, 3);
    ck_assert_int_eq(askew_net_isolate(&h.net, 1), 0);
    ck_assert_uint_eq(send_ok(0, 1, 1).outcome, ASKEW_NET_DROPPED_PARTITIONED);
    ck_assert_uint_eq(send_ok(1, 2, 2).outcome, ASKEW_NET_DROPPED_PARTITIONED);
    ck_assert_uint_eq(send_ok(1, 1, 3).outcome, ASKEW_NET_IN_FLIGHT);
    ck_assert_uint_eq(send_ok(0, 2, 4).outcome, ASKEW_NET_IN_FLIGHT);
    h_close();
}
END_TEST

START_TEST(test_net_heal_restores_all_links_but_keeps_link_overrides)
{
    const uint32_t nodes[] = {0, 1};
    const size_t lens[] = {1, 1};
    const struct askew_net_link slow = {50 * MS, 50 * MS, 0, 0};
    struct askew_net_link link;
    int cut;

    h_open(14, 4);
    ck_assert_int_eq(askew_net_configure_link(&h.net, 2, 3, &slow), 0);
    ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, 2), 0);
    ck_assert_int_eq(askew_net_cut(&h.net, 3, 2), 0);
    ck_assert_int_eq(askew_net_isolate(&h.net, 3), 0);
    askew_net_heal(&h.net);
    for (uint32_t s = 0; s < 4; s++) {
        for (uint32_t d = 0; d < 4; d++) {
            ck_assert_int_eq(askew_net_link_cut(&h.net, s, d, &cut), 0);
            ck_assert_int_eq(cut, 0);
        }
    }
    ck_assert_int_eq(askew_net_link_get(&h.net, 2, 3, &link), 0);
    ck_assert_int_eq(link.latency_ns_min, 50 * MS);
    ck_assert_uint_eq(send_ok(2, 3, 1).deadline_ns, 50 * MS);
    h_close();
}
END_TEST

START_TEST(test_net_heal_lets_messages_in_flight_arrive)
{
    h_open(15, 2);
    send_ok(0, 1, 1);
    ck_assert_int_eq(askew_net_isolate(&h.net, 1), 0);
    askew_net_heal(&h.net);
    advance_to(20 * MS);
    ck_assert_uint_eq(h.events[0].d.outcome, ASKEW_NET_DELIVERED);
    h_close();
}
END_TEST

START_TEST(test_net_full_loss_drops_every_message_as_lost)
{
    h_open(16, 2);
    configure(1 * MS, 2 * MS, 1000000, 0);
    for (uintptr_t i = 1; i <= 50; i++)
        ck_assert_uint_eq(send_ok(0, 1, i).outcome, ASKEW_NET_DROPPED_LOST);
    ck_assert_uint_eq(h.net.stats.dropped[ASKEW_NET_DROPPED_LOST], 50);
    ck_assert_uint_eq(h.net.stats.in_flight, 0);
    h_close();
}
END_TEST

START_TEST(test_net_full_duplication_puts_two_copies_on_the_wire)
{
    h_open(17, 2);
    configure(1 * MS, 10 * MS, 0, 1000000);
    struct askew_net_sent sent = send_ok(0, 1, 5);
    ck_assert_uint_eq(sent.outcome, ASKEW_NET_DUPLICATED);
    ck_assert_uint_eq(sent.copies, 2);
    ck_assert_uint_eq(send_ok(0, 1, 6).id, sent.id + 2);
    advance_to(20 * MS);
    ck_assert_uint_eq(h.events_len, 4);
    ck_assert_uint_eq(h.net.stats.duplicated, 2);
    int copies[2] = {0, 0};
    for (size_t i = 0; i < 4; i++) {
        if ((uintptr_t)h.events[i].d.payload == 5)
            copies[h.events[i].d.copy]++;
    }
    ck_assert_int_eq(copies[0], 1);
    ck_assert_int_eq(copies[1], 1);
    check_balance();
    h_close();
}
END_TEST

START_TEST(test_net_link_override_applies_to_one_direction_only)
{
    const struct askew_net_link fixed = {3 * MS, 3 * MS, 0, 0};
    struct askew_net_link link;

    h_open(18, 2);
    configure(7 * MS, 7 * MS, 0, 0);
    ck_assert_int_eq(askew_net_configure_link(&h.net, 0, 1, &fixed), 0);
    ck_assert_int_eq(send_ok(0, 1, 1).deadline_ns, 3 * MS);
    ck_assert_int_eq(send_ok(1, 0, 2).deadline_ns, 7 * MS);
    ck_assert_int_eq(askew_net_link_get(&h.net, 0, 1, &link), 0);
    ck_assert_int_eq(link.latency_ns_min, 3 * MS);
    ck_assert_int_eq(askew_net_link_get(&h.net, 1, 0, &link), 0);
    ck_assert_int_eq(link.latency_ns_min, 7 * MS);
    h_close();
}
END_TEST

START_TEST(test_net_bad_config_is_einval)
{
    const struct askew_net_link bad[] = {
        {5, 4, 0, 0},
        {-1, 4, 0, 0},
        {0, 4, 1000001, 0},
        {0, 4, 0, 1000001},
    };
    struct askew_net_link link;

    h_open(19, 2);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(askew_net_configure(&h.net, &bad[i]), -EINVAL);
        ck_assert_int_eq(askew_net_configure_link(&h.net, 0, 1, &bad[i]), -EINVAL);
    }
    ck_assert_int_eq(askew_net_configure(&h.net, NULL), -EINVAL);
    ck_assert_int_eq(askew_net_link_get(&h.net, 0, 1, &link), 0);
    ck_assert_int_eq(link.latency_ns_max, ASKEW_NET_LATENCY_NS_MAX_DEFAULT);
    h_close();
}
END_TEST

START_TEST(test_net_unknown_node_is_einval)
{
    const struct askew_net_link link = {0, 0, 0, 0};
    struct askew_net_sent sent;
    struct askew_net_link got;
    int cut;

    h_open(20, 2);
    ck_assert_int_eq(askew_net_send(&h.net, 0, 2, NULL, &sent), -EINVAL);
    ck_assert_int_eq(askew_net_send(&h.net, 2, 0, NULL, &sent), -EINVAL);
    ck_assert_int_eq(askew_net_crash(&h.net, 2), -EINVAL);
    ck_assert_int_eq(askew_net_restart(&h.net, 2), -EINVAL);
    ck_assert_int_eq(askew_net_isolate(&h.net, 2), -EINVAL);
    ck_assert_int_eq(askew_net_cut(&h.net, 0, 2), -EINVAL);
    ck_assert_int_eq(askew_net_configure_link(&h.net, 2, 0, &link), -EINVAL);
    ck_assert_int_eq(askew_net_link_get(&h.net, 0, 2, &got), -EINVAL);
    ck_assert_int_eq(askew_net_link_cut(&h.net, 2, 2, &cut), -EINVAL);
    ck_assert_uint_eq(h.net.stats.sent, 0);
    ck_assert_uint_eq(h.net.next_id, 1);
    h_close();
}
END_TEST

START_TEST(test_net_fixed_latency_and_zero_ppm_draw_nothing)
{
    struct askew_rng before;

    h_open(21, 2);
    configure(4 * MS, 4 * MS, 0, 0);
    before = h.net.rng;
    for (uintptr_t i = 1; i <= 10; i++)
        ck_assert_int_eq(send_ok(0, 1, i).deadline_ns, 4 * MS);
    ck_assert_mem_eq(&before, &h.net.rng, sizeof(before));
    h_close();
}
END_TEST

START_TEST(test_net_send_draws_loss_then_latency_then_duplicate)
{
    struct askew_rng ref;
    const uint32_t loss_ppm = 300000, duplicate_ppm = 300000;

    h_open(22, 2);
    configure(1 * MS, 9 * MS, loss_ppm, duplicate_ppm);
    ref = h.net.rng;
    for (uintptr_t i = 1; i <= 300; i++) {
        uint32_t expect;
        int64_t deadline_ns = 0;
        if (askew_rng_chance_ppm(&ref, loss_ppm)) {
            expect = ASKEW_NET_DROPPED_LOST;
        } else {
            deadline_ns = askew_rng_range(&ref, 1 * MS, 9 * MS);
            expect = ASKEW_NET_IN_FLIGHT;
            if (askew_rng_chance_ppm(&ref, duplicate_ppm)) {
                (void)askew_rng_range(&ref, 1 * MS, 9 * MS); /* the copy's */
                expect = ASKEW_NET_DUPLICATED;
            }
        }
        struct askew_net_sent sent = send_ok(0, 1, i);
        ck_assert_uint_eq(sent.outcome, expect);
        ck_assert_int_eq(sent.deadline_ns, deadline_ns);
    }
    h_close();
}
END_TEST

/* ---- message faults: listing and suppression ------------------------------ */

#define FAULT_SENDS 300

/* One run of FAULT_SENDS sends 0 -> 1 at 30 % loss and 30 % duplication,
 * with the ids in drop[] and dup[] suppressed; each send's result and the
 * NET stream's state after it. */
static void fault_run(const uint64_t *drop, size_t drops, const uint64_t *dup,
                      size_t dups, struct askew_net_sent *sent, struct askew_rng *after)
{
    h_open(31, 2);
    configure(1 * MS, 9 * MS, 300000, 300000);
    ck_assert_int_eq(askew_net_suppress(&h.net, ASKEW_NET_FAULT_DROP, drop, drops), 0);
    ck_assert_int_eq(askew_net_suppress(&h.net, ASKEW_NET_FAULT_DUP, dup, dups), 0);
    for (uintptr_t i = 0; i < FAULT_SENDS; i++) {
        sent[i] = send_ok(0, 1, i + 1);
        after[i] = h.net.rng;
    }
}

START_TEST(test_net_lost_and_duplicated_sends_are_listed_as_faults_in_send_order)
{
    static struct askew_net_sent sent[FAULT_SENDS];
    static struct askew_rng after[FAULT_SENDS];
    size_t len, j = 0;
    uint64_t more;

    fault_run(NULL, 0, NULL, 0, sent, after);
    const struct askew_net_fault *faults = askew_net_faults(&h.net, &len, &more);
    for (size_t i = 0; i < FAULT_SENDS; i++) {
        if (sent[i].outcome == ASKEW_NET_IN_FLIGHT)
            continue;
        ck_assert_uint_lt(j, len);
        ck_assert_uint_eq(faults[j].id, sent[i].id);
        ck_assert_uint_eq(faults[j].kind, sent[i].outcome == ASKEW_NET_DROPPED_LOST
                                              ? ASKEW_NET_FAULT_DROP
                                              : ASKEW_NET_FAULT_DUP);
        ck_assert_uint_eq(faults[j].src, 0);
        ck_assert_uint_eq(faults[j].dst, 1);
        j++;
    }
    ck_assert_uint_eq(j, len);
    ck_assert_uint_gt(len, 100); /* both kinds, many of each */
    ck_assert_uint_eq(more, 0);
    /* A reset forgets them. */
    advance_to(20 * MS);
    ck_assert_int_eq(askew_net_reset(&h.net, 31), 0);
    (void)askew_net_faults(&h.net, &len, &more);
    ck_assert_uint_eq(len, 0);
    h_close();
}
END_TEST

START_TEST(test_net_suppressed_faults_deliver_once_and_keep_the_stream_and_ids)
{
    static struct askew_net_sent plain[FAULT_SENDS], quiet[FAULT_SENDS];
    static struct askew_rng plain_rng[FAULT_SENDS], quiet_rng[FAULT_SENDS];
    static uint64_t drop[FAULT_SENDS], dup[FAULT_SENDS];
    size_t drops = 0, dups = 0, len;
    uint64_t more;

    fault_run(NULL, 0, NULL, 0, plain, plain_rng);
    h_close();
    for (size_t i = 0; i < FAULT_SENDS; i++) {
        if (plain[i].outcome == ASKEW_NET_DROPPED_LOST)
            drop[drops++] = plain[i].id;
        else if (plain[i].outcome == ASKEW_NET_DUPLICATED)
            dup[dups++] = plain[i].id;
    }
    ck_assert_uint_gt(drops, 10);
    ck_assert_uint_gt(dups, 10);
    fault_run(drop, drops, dup, dups, quiet, quiet_rng);
    for (size_t i = 0; i < FAULT_SENDS; i++) {
        /* Same ids and the same stream after every send: nothing shifted. */
        ck_assert_uint_eq(quiet[i].id, plain[i].id);
        ck_assert_mem_eq(&quiet_rng[i], &plain_rng[i], sizeof(quiet_rng[i]));
        /* Every send is one copy on the wire; unsuppressed ones as before. */
        ck_assert_uint_eq(quiet[i].outcome, ASKEW_NET_IN_FLIGHT);
        ck_assert_uint_eq(quiet[i].copies, 1);
        if (plain[i].outcome == ASKEW_NET_DROPPED_LOST) {
            ck_assert_int_ge(quiet[i].deadline_ns, 1 * MS);
            ck_assert_int_le(quiet[i].deadline_ns, 9 * MS);
        } else {
            ck_assert_int_eq(quiet[i].deadline_ns, plain[i].deadline_ns);
        }
    }
    (void)askew_net_faults(&h.net, &len, &more);
    ck_assert_uint_eq(len, 0); /* a suppressed fault is not one of the run's */
    advance_to(20 * MS);
    ck_assert_uint_eq(h.events_len, FAULT_SENDS);
    for (size_t i = 0; i < h.events_len; i++)
        ck_assert_uint_eq(h.events[i].d.outcome, ASKEW_NET_DELIVERED);
    check_balance();
    /* A reset forgets the suppression: the next run drops again. */
    ck_assert_int_eq(askew_net_reset(&h.net, 31), 0);
    uint32_t id;
    ck_assert_int_eq(askew_net_node_add(&h.net, &id), 0);
    ck_assert_int_eq(askew_net_node_add(&h.net, &id), 0);
    configure(1 * MS, 9 * MS, 1000000, 0);
    ck_assert_uint_eq(send_ok(0, 1, 1).outcome, ASKEW_NET_DROPPED_LOST);
    ck_assert_int_eq(askew_net_suppress(&h.net, ASKEW_NET_FAULT_KINDS, NULL, 0),
                     -EINVAL);
    ck_assert_int_eq(askew_net_suppress(&h.net, ASKEW_NET_FAULT_DROP, NULL, 3),
                     -EINVAL);
    h_close();
}
END_TEST

START_TEST(test_net_drain_hands_back_every_payload_in_flight_in_send_order)
{
    h_open(23, 3);
    configure(1 * MS, 10 * MS, 0, 500000);
    uint64_t copies = 0;
    for (uintptr_t i = 1; i <= 100; i++)
        copies += send_ok((uint32_t)(i % 3), (uint32_t)((i + 1) % 3), i).copies;
    advance_to(5 * MS);
    size_t arrived = h.events_len;
    askew_net_drain(&h.net, release, &h);
    ck_assert_uint_eq(arrived + h.released_len, copies);
    ck_assert_uint_eq(h.sched.timers.len, 0);
    ck_assert_uint_eq(h.net.stats.in_flight, 0);
    for (size_t i = 0; i < h.released_len; i++) {
        ck_assert_uint_eq(h.released[i].outcome, ASKEW_NET_DROPPED_RESET);
        if (i > 0)
            ck_assert_uint_gt(h.released[i].id, h.released[i - 1].id);
    }
    ck_assert_int_eq(askew_net_reset(&h.net, 23), 0);
    ck_assert_uint_eq(h.net.nodes_len, 0);
    h_close();
}
END_TEST

START_TEST(test_net_reset_with_messages_in_flight_is_ebusy)
{
    h_open(24, 2);
    send_ok(0, 1, 1);
    ck_assert_int_eq(askew_net_reset(&h.net, 24), -EBUSY);
    askew_net_drain(&h.net, release, &h);
    ck_assert_uint_eq(h.released_len, 1);
    ck_assert_int_eq(askew_net_reset(&h.net, 24), 0);
    h_close();
}
END_TEST

START_TEST(test_net_free_releases_messages_still_in_flight)
{
    size_t released;

    h_open(25, 2);
    send_ok(0, 1, 1);
    send_ok(1, 0, 2);
    askew_net_free(&h.net, release, &h);
    released = h.released_len;
    ck_assert_uint_eq(released, 2);
    ck_assert_uint_eq(h.sched.timers.len, 0);
    h_close(); /* freeing twice is safe: free zeroes the struct */
}
END_TEST

START_TEST(test_net_pool_reuses_messages_in_steady_state)
{
    h_open(26, 2);
    for (int round = 0; round < 20; round++) {
        for (uintptr_t i = 1; i <= 1000; i++)
            send_ok(0, 1, i);
        advance_to(h.sched.now_ns + 20 * MS);
    }
    ck_assert_uint_eq(h.net.slabs_len, 1); /* one slab served 20,000 sends */
    h_close();
}
END_TEST

START_TEST(test_net_cut_epochs_survive_wrapping)
{
    const uint32_t nodes[] = {0, 1};
    const size_t lens[] = {1, 1};
    int cut;

    h_open(27, 3);
    ck_assert_int_eq(askew_net_isolate(&h.net, 2), 0);
    h.net.part_epoch = UINT32_MAX - 1;
    h.net.iso_epoch = UINT32_MAX;
    h.net.nodes[2].iso_epoch = UINT32_MAX;
    ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, 2), 0);
    ck_assert_uint_eq(h.net.part_epoch, UINT32_MAX);
    askew_net_heal(&h.net); /* both epochs wrap: every stamp is forgotten */
    ck_assert_uint_eq(h.net.part_epoch, 1);
    ck_assert_uint_eq(h.net.iso_epoch, 1);
    for (uint32_t s = 0; s < 3; s++) {
        for (uint32_t d = 0; d < 3; d++) {
            ck_assert_int_eq(askew_net_link_cut(&h.net, s, d, &cut), 0);
            ck_assert_int_eq(cut, 0);
        }
    }
    ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, 2), 0);
    ck_assert_int_eq(askew_net_link_cut(&h.net, 0, 1, &cut), 0);
    ck_assert_int_eq(cut, 1);
    ck_assert_int_eq(askew_net_link_cut(&h.net, 0, 2, &cut), 0);
    ck_assert_int_eq(cut, 0);
    h_close();
}
END_TEST

/* ---- determinism --------------------------------------------------------- */

static uint64_t scenario_hash(uint64_t seed)
{
    const uint32_t nodes[] = {0, 1, 2, 3, 4, 5};
    const size_t lens[] = {3, 3};
    uint64_t hash;

    h_open(seed, 8);
    configure(1 * MS, 10 * MS, 100000, 100000);
    for (int step = 0; step < 400; step++) {
        uint32_t src = (uint32_t)(step * 7 % 8), dst = (uint32_t)(step * 3 % 8);
        send_ok(src, dst, (uintptr_t)step + 1);
        if (step == 100)
            ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, 2), 0);
        if (step == 200)
            ck_assert_int_eq(askew_net_crash(&h.net, 4), 0);
        if (step == 250)
            askew_net_heal(&h.net);
        if (step == 300)
            ck_assert_int_eq(askew_net_restart(&h.net, 4), 0);
        advance_to(h.sched.now_ns + 1 * MS);
    }
    advance_to(h.sched.now_ns + 20 * MS);
    hash = h.sched.trace.hash;
    h_close();
    return hash;
}

START_TEST(test_net_same_seed_gives_the_same_trace_hash)
{
    ck_assert_uint_eq(scenario_hash(42), scenario_hash(42));
    ck_assert_uint_ne(scenario_hash(42), scenario_hash(43));
}
END_TEST

/* The binding's side of a tick, in miniature: a fired message timer is
 * handed to the network, and a delivered message becomes ready work. */
static int fire_message(void *ctx, struct askew_timer *timer)
{
    struct askew_net_delivery d;
    int err;

    (void)ctx;
    ck_assert_uint_eq(timer->kind, ASKEW_TIMER_KIND_MESSAGE);
    err = askew_net_deliver(&h.net, timer, &d);
    if (err < 0 || d.outcome != ASKEW_NET_DELIVERED)
        return err;
    /* The item is never dereferenced; ids start at 1, so it is not NULL. */
    return askew_sched_push(&h.sched, (void *)(uintptr_t)d.id, d.id, 0);
}

static uint64_t ticked_run_hash(uint64_t seed)
{
    uint64_t hash;
    int64_t last = 0;
    uint64_t ran = 0;

    h_open(seed, 4);
    configure(1 * MS, 3 * MS, 200000, 200000);
    for (uintptr_t i = 1; i <= 300; i++)
        send_ok((uint32_t)(i % 4), (uint32_t)(i * 3 % 4), i);
    ck_assert_int_eq(askew_net_crash(&h.net, 2), 0);
    while (h.net.stats.in_flight > 0) {
        int tick = askew_sched_tick(&h.sched, fire_message, NULL);
        ck_assert_int_ge(tick, 0);
        ck_assert_int_ge(h.sched.now_ns, last);
        last = h.sched.now_ns;
        while (askew_sched_next(&h.sched) != NULL)
            ran++;
    }
    ck_assert_uint_eq(ran, h.net.stats.delivered);
    ck_assert_uint_gt(h.net.stats.dropped[ASKEW_NET_DROPPED_CRASHED], 0);
    check_balance();
    hash = h.sched.trace.hash;
    h_close();
    return hash;
}

START_TEST(test_net_messages_ride_the_scheduler_tick_deterministically)
{
    ck_assert_uint_eq(ticked_run_hash(7), ticked_run_hash(7));
    ck_assert_uint_ne(ticked_run_hash(7), ticked_run_hash(8));
}
END_TEST

/* ---- the reference model ------------------------------------------------- */

#define M_NODES 10
#define M_MSGS  8192

struct m_msg {
    uint64_t id;
    int64_t deadline_ns;
    uint64_t order; /* add order: ties in deadline fire in it */
    uint32_t src, dst, incarnation, copy;
    uintptr_t payload;
    int64_t sent_ns;
    int live;
};

struct model {
    uint32_t n;
    int alive[M_NODES];
    uint32_t incarnation[M_NODES];
    int group[M_NODES]; /* 0: in no group */
    int isolated[M_NODES];
    int cut[M_NODES][M_NODES];
    int has_link[M_NODES][M_NODES];
    struct askew_net_link link[M_NODES][M_NODES];
    struct askew_net_link global;
    struct askew_rng rng;
    uint64_t next_id, order;
    struct m_msg msgs[M_MSGS];
    size_t msgs_len;
    struct askew_net_stats stats;
};

static struct model m;

static int m_is_cut(uint32_t s, uint32_t d)
{
    if (s != d && (m.isolated[s] || m.isolated[d]))
        return 1;
    if (m.group[s] && m.group[d] && m.group[s] != m.group[d])
        return 1;
    return m.cut[s][d];
}

static const struct askew_net_link *m_link(uint32_t s, uint32_t d)
{
    return m.has_link[s][d] ? &m.link[s][d] : &m.global;
}

static int64_t m_latency(const struct askew_net_link *l)
{
    return l->latency_ns_min == l->latency_ns_max
               ? l->latency_ns_min
               : askew_rng_range(&m.rng, l->latency_ns_min, l->latency_ns_max);
}

static void m_put(uint64_t id, uint32_t s, uint32_t d, uintptr_t payload, int64_t now,
                  uint32_t copy)
{
    ck_assert_uint_lt(m.msgs_len, M_MSGS);
    struct m_msg *x = &m.msgs[m.msgs_len++];
    x->id = id;
    x->deadline_ns = now + m_latency(m_link(s, d));
    x->order = m.order++;
    x->src = s;
    x->dst = d;
    x->incarnation = m.incarnation[d];
    x->copy = copy;
    x->payload = payload;
    x->sent_ns = now;
    x->live = 1;
    m.stats.in_flight++;
}

/* The model's send: returns the outcome; fills the expected struct. */
static void m_send(uint32_t s, uint32_t d, uintptr_t payload, int64_t now,
                   struct askew_net_sent *out)
{
    const struct askew_net_link *l = m_link(s, d);

    memset(out, 0, sizeof(*out));
    out->id = m.next_id;
    m.stats.sent++;
    if (!m.alive[s])
        out->outcome = ASKEW_NET_DROPPED_CRASHED;
    else if (m_is_cut(s, d))
        out->outcome = ASKEW_NET_DROPPED_PARTITIONED;
    else if (askew_rng_chance_ppm(&m.rng, l->loss_ppm))
        out->outcome = ASKEW_NET_DROPPED_LOST;
    else
        out->outcome = ASKEW_NET_IN_FLIGHT;
    if (out->outcome != ASKEW_NET_IN_FLIGHT) {
        m.stats.dropped[out->outcome]++;
        m.next_id++;
        return;
    }
    m_put(m.next_id, s, d, payload, now, 0);
    out->deadline_ns = m.msgs[m.msgs_len - 1].deadline_ns;
    out->copies = 1;
    if (askew_rng_chance_ppm(&m.rng, l->duplicate_ppm)) {
        m_put(m.next_id + 1, s, d, payload, now, 1);
        out->outcome = ASKEW_NET_DUPLICATED;
        out->copies = 2;
        m.stats.duplicated++;
    }
    m.next_id += out->copies;
}

/* Check the harness's events from index `from` against the model's run to
 * t_ns: the earliest (deadline, add order) live message first, each time. */
static void m_advance_and_compare(int64_t t_ns, size_t from)
{
    size_t k = from;

    for (;;) {
        struct m_msg *best = NULL;
        for (size_t i = 0; i < m.msgs_len; i++) {
            struct m_msg *x = &m.msgs[i];
            if (x->live && x->deadline_ns <= t_ns &&
                (best == NULL || x->deadline_ns < best->deadline_ns ||
                 (x->deadline_ns == best->deadline_ns && x->order < best->order)))
                best = x;
        }
        if (best == NULL)
            break;
        uint32_t outcome;
        if (!m.alive[best->dst] || m.incarnation[best->dst] != best->incarnation)
            outcome = ASKEW_NET_DROPPED_CRASHED;
        else if (m_is_cut(best->src, best->dst))
            outcome = ASKEW_NET_DROPPED_PARTITIONED;
        else
            outcome = ASKEW_NET_DELIVERED;
        best->live = 0;
        m.stats.in_flight--;
        if (outcome == ASKEW_NET_DELIVERED)
            m.stats.delivered++;
        else
            m.stats.dropped[outcome]++;
        ck_assert_uint_lt(k, h.events_len);
        const struct event *ev = &h.events[k++];
        ck_assert_int_eq(ev->t_ns, best->deadline_ns);
        ck_assert_uint_eq(ev->d.id, best->id);
        ck_assert_uint_eq(ev->d.outcome, outcome);
        ck_assert_uint_eq(ev->d.src, best->src);
        ck_assert_uint_eq(ev->d.dst, best->dst);
        ck_assert_uint_eq(ev->d.copy, best->copy);
        ck_assert_int_eq(ev->d.sent_ns, best->sent_ns);
        ck_assert_ptr_eq(ev->d.payload, (void *)best->payload);
    }
    ck_assert_uint_eq(k, h.events_len);
}

static void m_compare_links(void)
{
    for (uint32_t s = 0; s < m.n; s++) {
        for (uint32_t d = 0; d < m.n; d++) {
            struct askew_net_link got;
            const struct askew_net_link *want = m_link(s, d);
            int cut;
            ck_assert_int_eq(askew_net_link_cut(&h.net, s, d, &cut), 0);
            ck_assert_int_eq(cut, m_is_cut(s, d));
            ck_assert_int_eq(askew_net_link_get(&h.net, s, d, &got), 0);
            ck_assert_mem_eq(&got, want, sizeof(got));
        }
    }
}

static void m_compare_stats(void)
{
    ck_assert_mem_eq(&h.net.stats, &m.stats, sizeof(m.stats));
    check_balance();
}

static struct askew_net_link random_link(struct askew_rng *r)
{
    static const uint32_t ppms[] = {0, 0, 1000000, 100000, 500000, 1};
    struct askew_net_link l;

    /* Tiny ranges on purpose: equal deadlines exercise add-order ties. */
    l.latency_ns_min = (int64_t)askew_rng_below(r, 4) * MS;
    l.latency_ns_max = l.latency_ns_min + (int64_t)askew_rng_below(r, 3) * MS +
                       (askew_rng_below(r, 2) ? 0 : (int64_t)askew_rng_below(r, 1000));
    l.loss_ppm = askew_rng_below(r, 3) ? 0 : ppms[askew_rng_below(r, 6)];
    l.duplicate_ppm = askew_rng_below(r, 3) ? 0 : ppms[askew_rng_below(r, 6)];
    return l;
}

static void random_partition(struct askew_rng *r)
{
    uint32_t nodes[M_NODES + 1];
    size_t lens[M_NODES];
    uint32_t perm[M_NODES] = {0};
    size_t groups = askew_rng_below(r, 4), total = 0;
    int overlap = askew_rng_below(r, 8) == 0 && m.n > 1;

    for (uint32_t i = 0; i < m.n; i++)
        perm[i] = i;
    for (uint32_t i = m.n; i > 1; i--) {
        uint32_t j = (uint32_t)askew_rng_below(r, i), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (size_t g = 0; g < groups; g++) {
        lens[g] = askew_rng_below(r, (m.n - total) / (groups - g) + 1);
        for (size_t i = 0; i < lens[g]; i++, total++)
            nodes[total] = perm[total];
    }
    if (overlap && groups > 0 && total > 0) {
        nodes[total] = nodes[0]; /* the first node again, in the last group */
        lens[groups - 1]++;
        ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, groups), -EINVAL);
        return;
    }
    ck_assert_int_eq(askew_net_partition(&h.net, nodes, lens, groups), 0);
    memset(m.group, 0, sizeof(m.group));
    for (size_t g = 0, i = 0; g < groups; g++)
        for (size_t end = i + lens[g]; i < end; i++)
            m.group[nodes[i]] = (int)g + 1;
}

static void run_model(uint64_t seed)
{
    struct askew_rng r;
    uintptr_t payload = 0;

    askew_rng_seed(&r, seed ^ 0x6e6574ULL);
    memset(&m, 0, sizeof(m));
    m.n = 2 + (uint32_t)askew_rng_below(&r, M_NODES - 1);
    h_open(seed, m.n);
    askew_rng_seed(&m.rng, askew_seed_stream(seed, ASKEW_STREAM_NET));
    m.next_id = 1;
    m.global = (struct askew_net_link){ASKEW_NET_LATENCY_NS_MIN_DEFAULT,
                                       ASKEW_NET_LATENCY_NS_MAX_DEFAULT, 0, 0};
    for (uint32_t i = 0; i < m.n; i++)
        m.alive[i] = 1;

    for (int step = 0; step < 600 && m.msgs_len + 2 < M_MSGS; step++) {
        uint32_t a = (uint32_t)askew_rng_below(&r, m.n);
        uint32_t b = (uint32_t)askew_rng_below(&r, m.n);
        uint64_t op = askew_rng_below(&r, 100);
        if (op < 50) {
            struct askew_net_sent want, got;
            m_send(a, b, ++payload, h.sched.now_ns, &want);
            got = send_ok(a, b, payload);
            ck_assert_mem_eq(&got, &want, sizeof(got));
        } else if (op < 65) {
            size_t from = h.events_len;
            int64_t t = h.sched.now_ns + (int64_t)askew_rng_below(&r, 6 * MS);
            advance_to(t);
            m_advance_and_compare(t, from);
        } else if (op < 69) {
            random_partition(&r);
        } else if (op < 72) {
            ck_assert_int_eq(askew_net_cut(&h.net, a, b), 0);
            m.cut[a][b] = 1;
        } else if (op < 74) {
            ck_assert_int_eq(askew_net_isolate(&h.net, a), 0);
            m.isolated[a] = 1;
        } else if (op < 78) {
            askew_net_heal(&h.net);
            memset(m.group, 0, sizeof(m.group));
            memset(m.isolated, 0, sizeof(m.isolated));
            memset(m.cut, 0, sizeof(m.cut));
        } else if (op < 82) {
            ck_assert_int_eq(askew_net_crash(&h.net, a), 0);
            m.alive[a] = 0;
        } else if (op < 86) {
            ck_assert_int_eq(askew_net_restart(&h.net, a), 0);
            m.alive[a] = 1;
            m.incarnation[a]++;
        } else if (op < 89) {
            struct askew_net_link l = random_link(&r);
            ck_assert_int_eq(askew_net_configure(&h.net, &l), 0);
            m.global = l;
        } else {
            struct askew_net_link l = random_link(&r);
            ck_assert_int_eq(askew_net_configure_link(&h.net, a, b, &l), 0);
            m.has_link[a][b] = 1;
            m.link[a][b] = l;
        }
        if (step % 50 == 0) {
            m_compare_links();
            m_compare_stats();
        }
    }
    m_compare_links();
    m_compare_stats();
    if (seed % 2 == 0) {
        /* Run everything out. */
        size_t from = h.events_len;
        advance_to(INT64_MAX / 2);
        m_advance_and_compare(INT64_MAX / 2, from);
        m_compare_stats();
        ck_assert_uint_eq(h.net.stats.in_flight, 0);
    } else {
        /* Tear down: what is left comes back in send order. */
        size_t k = 0;
        askew_net_drain(&h.net, release, &h);
        for (size_t i = 0; i < m.msgs_len; i++) {
            if (!m.msgs[i].live)
                continue;
            ck_assert_uint_lt(k, h.released_len);
            ck_assert_uint_eq(h.released[k].id, m.msgs[i].id);
            ck_assert_ptr_eq(h.released[k].payload, (void *)m.msgs[i].payload);
            k++;
        }
        ck_assert_uint_eq(k, h.released_len);
    }
    h_close();
}

START_TEST(test_net_matches_the_reference_model_on_random_runs)
{
    /* Each loop iteration is one seed; _i is Check's loop index. */
    for (uint64_t seed = (uint64_t)_i * 50; seed < (uint64_t)_i * 50 + 50; seed++)
        run_model(seed);
}
END_TEST

/* ---- scale ---------------------------------------------------------------- */

START_TEST(test_net_holds_a_million_messages_among_ten_thousand_nodes)
{
    const uint32_t nodes = 10000, msgs = 1000000;
    struct askew_rng r;
    struct rusage usage;
    int64_t last = 0;
    uint64_t delivered = 0, out_of_order = 0, failed = 0;
    struct askew_timer *timer;

    h_open(99, nodes);
    configure(1 * MS, 1000 * MS, 0, 0);
    askew_rng_seed(&r, 99);
    /* Plain checks in the hot loops: every ck_assert writes to Check's pipe
     * in fork mode, which would make this a test of the pipe. */
    for (uint32_t i = 0; i < msgs; i++) {
        uint32_t src = (uint32_t)askew_rng_below(&r, nodes);
        uint32_t dst = (uint32_t)askew_rng_below(&r, nodes);
        struct askew_net_sent sent;
        failed +=
            askew_net_send(&h.net, src, dst, (void *)((uintptr_t)i + 1), &sent) != 0 ||
            sent.copies != 1;
    }
    ck_assert_uint_eq(failed, 0);
    ck_assert_uint_eq(h.net.stats.in_flight, msgs);
    ck_assert_int_eq(getrusage(RUSAGE_SELF, &usage), 0);
    ck_assert_int_lt(usage.ru_maxrss, 1024L * 1024L); /* KiB: under 1 GiB */
    /* Deliver them all, without keeping events, in deadline order. */
    while ((timer = askew_heap_pop(&h.sched.timers)) != NULL) {
        struct askew_net_delivery d;
        out_of_order += timer->deadline_ns < last;
        last = timer->deadline_ns;
        h.sched.now_ns = last;
        failed += askew_net_deliver(&h.net, timer, &d) != 0;
        delivered += d.outcome == ASKEW_NET_DELIVERED;
    }
    ck_assert_uint_eq(failed, 0);
    ck_assert_uint_eq(out_of_order, 0);
    ck_assert_uint_eq(delivered, msgs);
    check_balance();
    h_close();
}
END_TEST

Suite *net_suite(void)
{
    Suite *s = suite_create("net");
    TCase *tc = tcase_create("claims");
    TCase *model = tcase_create("model");
    TCase *scale = tcase_create("scale");

    tcase_add_test(tc, test_net_nodes_get_ids_in_order_and_start_alive);
    tcase_add_test(tc,
                   test_net_default_link_is_1ms_to_10ms_without_loss_or_duplication);
    tcase_add_test(tc, test_net_messages_arrive_within_latency_bounds_and_reorder);
    tcase_add_test(tc, test_net_send_from_crashed_node_drops_crashed_without_a_draw);
    tcase_add_test(tc, test_net_message_to_node_that_crashes_in_flight_drops_crashed);
    tcase_add_test(tc, test_net_message_to_restarted_node_drops_crashed);
    tcase_add_test(tc, test_net_message_sent_before_the_sender_crashed_still_arrives);
    tcase_add_test(tc, test_net_partition_drops_messages_between_groups);
    tcase_add_test(tc, test_net_partition_drops_messages_already_in_flight);
    tcase_add_test(tc, test_net_partition_replaces_the_previous_one);
    tcase_add_test(tc, test_net_overlapping_partition_is_einval_and_changes_nothing);
    tcase_add_test(tc, test_net_one_way_cut_drops_one_direction_only);
    tcase_add_test(tc, test_net_isolate_cuts_both_ways_but_not_loopback);
    tcase_add_test(tc, test_net_heal_restores_all_links_but_keeps_link_overrides);
    tcase_add_test(tc, test_net_heal_lets_messages_in_flight_arrive);
    tcase_add_test(tc, test_net_full_loss_drops_every_message_as_lost);
    tcase_add_test(tc, test_net_full_duplication_puts_two_copies_on_the_wire);
    tcase_add_test(tc, test_net_link_override_applies_to_one_direction_only);
    tcase_add_test(tc, test_net_bad_config_is_einval);
    tcase_add_test(tc, test_net_unknown_node_is_einval);
    tcase_add_test(tc, test_net_fixed_latency_and_zero_ppm_draw_nothing);
    tcase_add_test(tc, test_net_send_draws_loss_then_latency_then_duplicate);
    tcase_add_test(
        tc, test_net_lost_and_duplicated_sends_are_listed_as_faults_in_send_order);
    tcase_add_test(tc,
                   test_net_suppressed_faults_deliver_once_and_keep_the_stream_and_ids);
    tcase_add_test(tc, test_net_drain_hands_back_every_payload_in_flight_in_send_order);
    tcase_add_test(tc, test_net_reset_with_messages_in_flight_is_ebusy);
    tcase_add_test(tc, test_net_free_releases_messages_still_in_flight);
    tcase_add_test(tc, test_net_pool_reuses_messages_in_steady_state);
    tcase_add_test(tc, test_net_cut_epochs_survive_wrapping);
    tcase_add_test(tc, test_net_same_seed_gives_the_same_trace_hash);
    tcase_add_test(tc, test_net_messages_ride_the_scheduler_tick_deterministically);
    suite_add_tcase(s, tc);

    /* 8 loops of 50 seeds: 400 random runs, each in its own process. */
    tcase_set_timeout(model, 120);
    tcase_add_loop_test(model, test_net_matches_the_reference_model_on_random_runs, 0,
                        8);
    suite_add_tcase(s, model);

    tcase_set_timeout(scale, 120);
    tcase_add_test(scale, test_net_holds_a_million_messages_among_ten_thousand_nodes);
    suite_add_tcase(s, scale);
    return s;
}

#ifdef CHECK_NET_MAIN
/* For running this suite alone: cc -DCHECK_NET_MAIN ... (check_main.c runs
 * every suite otherwise). */
int main(void)
{
    SRunner *runner = srunner_create(net_suite());
    int failed;

    srunner_run_all(runner, CK_NORMAL);
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
#endif
