/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for PCTCP in ext/engine/net.c (net.h, "PCTCP"): every latency
 * it gives lies in the link's range, the messages a message causes keep its
 * chain's latency, a change point drops a chain to the range's maximum,
 * and a seed names one run. The scheduler is only the clock and the timer
 * heap here; time moves by popping the heap. */
#include "engine.h"
#include "net.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

#define MS 1000000LL

static struct askew_sched sched;
static struct askew_net net;

static void open_net(uint64_t seed, uint32_t nodes, uint32_t depth, uint64_t steps)
{
    memset(&sched, 0, sizeof(sched));
    ck_assert_int_eq(askew_sched_init(&sched), 0);
    sched.strategy = ASKEW_STRATEGY_PCTCP;
    sched.pct_depth = depth;
    sched.pct_steps = steps;
    askew_sched_reset(&sched, seed);
    ck_assert_int_eq(askew_net_init(&net, &sched), 0);
    ck_assert_int_eq(askew_net_reset(&net, seed), 0);
    for (uint32_t i = 0; i < nodes; i++) {
        uint32_t id;
        ck_assert_int_eq(askew_net_node_add(&net, &id), 0);
    }
}

static void close_net(void)
{
    askew_net_free(&net, NULL, NULL);
    askew_sched_free(&sched);
}

/* Deliver the next message due; its delivery goes to *out. */
static void deliver_next(struct askew_net_delivery *out)
{
    struct askew_timer *timer = askew_heap_pop(&sched.timers);

    ck_assert_ptr_nonnull(timer);
    sched.now_ns = timer->deadline_ns;
    ck_assert_int_eq(askew_net_deliver(&net, timer, out), 0);
}

static int64_t send_latency(uint32_t src, uint32_t dst)
{
    struct askew_net_sent sent;

    ck_assert_int_eq(askew_net_send(&net, src, dst, NULL, &sent), 0);
    return sent.deadline_ns - sched.now_ns;
}

START_TEST(test_pctcp_latencies_stay_inside_each_links_range)
{
    struct askew_rng r;

    askew_rng_seed(&r, 77);
    for (uint64_t seed = 0; seed < 40; seed++) {
        open_net(seed, 4, 4, 50);
        for (int i = 0; i < 300; i++) {
            const uint32_t src = (uint32_t)askew_rng_below(&r, 4);
            const uint32_t dst = (uint32_t)askew_rng_below(&r, 4);
            const int64_t lo = (int64_t)askew_rng_below(&r, 20 * MS);
            const int64_t hi = lo + (int64_t)askew_rng_below(&r, 20 * MS);
            struct askew_net_link link = {lo, hi, 0, 0};
            ck_assert_int_eq(askew_net_configure_link(&net, src, dst, &link), 0);
            const int64_t latency = send_latency(src, dst);
            ck_assert_int_ge(latency, lo);
            ck_assert_int_le(latency, hi);
            if (askew_rng_below(&r, 2) == 0) {
                struct askew_net_delivery d;
                deliver_next(&d);
            }
        }
        close_net();
    }
}
END_TEST

START_TEST(test_pctcp_messages_caused_by_a_message_keep_its_chains_latency)
{
    /* Depth 1: no change point. Node 0 sends to 1; everything node 1 sends
     * after it has that message takes the same latency on a like link. */
    for (uint64_t seed = 0; seed < 20; seed++) {
        open_net(seed, 3, 1, 1);
        const int64_t first = send_latency(0, 1);
        struct askew_net_delivery d;
        deliver_next(&d);
        ck_assert_uint_eq(d.dst, 1);
        ck_assert_int_eq(send_latency(1, 2), first);
        ck_assert_int_eq(send_latency(1, 0), first);
        close_net();
    }
}
END_TEST

START_TEST(test_pctcp_sends_that_follow_no_delivery_start_chains_of_their_own)
{
    /* Without a delivery every send starts a chain, so node 0's messages
     * to node 1 spread over the range rather than share one latency. */
    open_net(5, 2, 1, 1);
    int64_t seen_lo = INT64_MAX, seen_hi = 0;
    for (int i = 0; i < 200; i++) {
        const int64_t latency = send_latency(0, 1);
        seen_lo = latency < seen_lo ? latency : seen_lo;
        seen_hi = latency > seen_hi ? latency : seen_hi;
    }
    ck_assert_int_lt(seen_lo, 2 * MS);
    ck_assert_int_gt(seen_hi, 9 * MS);
    close_net();
}
END_TEST

START_TEST(test_pctcp_a_change_point_drops_the_chain_to_the_ranges_maximum)
{
    /* Depth 2, k = 1: the one change point is the first send, whose chain
     * then has priority 1, the lowest: the default range's maximum, less
     * at most a nanosecond of rounding. Its successors keep it. */
    open_net(9, 2, 2, 1);
    const int64_t first = send_latency(0, 1);
    ck_assert_int_ge(first, ASKEW_NET_LATENCY_NS_MAX_DEFAULT - 1);
    struct askew_net_delivery d;
    deliver_next(&d);
    ck_assert_int_eq(send_latency(1, 0), first);
    close_net();
}
END_TEST

static uint64_t run_hash(uint64_t seed)
{
    open_net(seed, 3, 3, 40);
    for (int i = 0; i < 60; i++) {
        send_latency((uint32_t)(i % 3), (uint32_t)((i + 1) % 3));
        if (i % 2 == 1) {
            struct askew_net_delivery d;
            deliver_next(&d);
        }
    }
    const uint64_t hash = sched.trace.hash;
    close_net();
    return hash;
}

START_TEST(test_pctcp_a_seed_names_one_run)
{
    ck_assert_uint_eq(run_hash(3), run_hash(3));
    ck_assert_uint_ne(run_hash(3), run_hash(4));
}
END_TEST

Suite *pctcp_suite(void)
{
    Suite *s = suite_create("pctcp");
    TCase *tc = tcase_create("claims");

    tcase_add_test(tc, test_pctcp_latencies_stay_inside_each_links_range);
    tcase_add_test(tc, test_pctcp_messages_caused_by_a_message_keep_its_chains_latency);
    tcase_add_test(tc,
                   test_pctcp_sends_that_follow_no_delivery_start_chains_of_their_own);
    tcase_add_test(tc, test_pctcp_a_change_point_drops_the_chain_to_the_ranges_maximum);
    tcase_add_test(tc, test_pctcp_a_seed_names_one_run);
    suite_add_tcase(s, tc);
    return s;
}
