/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for ext/engine/net_topo.c, the network's topology, without a
 * message in flight: the link table keeps every override through its
 * growth and a heal, which drops the cuts alone; a partition cuts between
 * its groups only and a bad one changes nothing; isolation cuts both ways
 * but never a node's link to itself; every change is mixed into the trace,
 * the same changes to the same hash; a reset forgets it all.
 * check_net.c tests the network with messages. */
#include <check.h>
#include <errno.h>
#include <stddef.h>

#include "net_impl.h"

static struct askew_sched sched;
static struct askew_net net;

static void t_open(uint32_t nodes)
{
    ck_assert_int_eq(askew_sched_init(&sched), 0);
    askew_sched_reset(&sched, 1);
    ck_assert_int_eq(askew_net_init(&net, &sched), 0);
    for (uint32_t i = 0; i < nodes; i++) {
        uint32_t id;
        ck_assert_int_eq(askew_net_node_add(&net, &id), 0);
        ck_assert_uint_eq(id, i);
    }
}

static void t_close(void)
{
    askew_net_free(&net, NULL, NULL);
    askew_sched_free(&sched);
}

static int cut(uint32_t src, uint32_t dst)
{
    int is_cut = -1;
    ck_assert_int_eq(askew_net_link_cut(&net, src, dst, &is_cut), 0);
    return is_cut;
}

START_TEST(test_topo_the_link_table_keeps_every_override_through_growth_and_heal)
{
    t_open(40);
    for (uint32_t i = 0; i < 40; i++) {
        const struct askew_net_link link = {.latency_ns_min = i,
                                            .latency_ns_max = 2 * i};
        ck_assert_int_eq(askew_net_configure_link(&net, i, (i + 1) % 40, &link), 0);
        ck_assert_int_eq(askew_net_cut(&net, (i + 1) % 40, i), 0);
    }
    ck_assert_int_eq(askew_net_cut(&net, 0, 1), 0); /* an override and a cut */
    ck_assert_uint_eq(net.edges_len, 80);
    ck_assert_uint_ge(net.edges_cap, 2 * net.edges_len); /* grown, load <= 1/2 */
    ck_assert_int_eq(cut(0, 1), 1);
    ck_assert_int_eq(cut(1, 0), 1);
    askew_net_heal(&net);
    ck_assert_uint_eq(net.edges_len, 40); /* the cut-only entries are gone */
    ck_assert_uint_eq(net.cuts_len, 0);
    for (uint32_t i = 0; i < 40; i++) {
        struct askew_net_link link;
        ck_assert_int_eq(askew_net_link_get(&net, i, (i + 1) % 40, &link), 0);
        ck_assert_int_eq(link.latency_ns_max, 2 * (int64_t)i);
        ck_assert_int_eq(cut(i, (i + 1) % 40), 0);
        ck_assert_int_eq(cut((i + 1) % 40, i), 0);
    }
    struct askew_net_link global;
    ck_assert_int_eq(askew_net_link_get(&net, 0, 2, &global), 0); /* no override */
    ck_assert_int_eq(global.latency_ns_max, ASKEW_NET_LATENCY_NS_MAX_DEFAULT);
    t_close();
}
END_TEST

START_TEST(test_topo_a_partition_cuts_between_groups_only_and_a_bad_one_changes_nothing)
{
    t_open(4);
    const uint32_t ids[] = {0, 1, 2};
    const size_t lens[] = {2, 1};
    ck_assert_int_eq(askew_net_partition(&net, ids, lens, 2), 0);
    ck_assert_int_eq(cut(0, 1), 0);
    ck_assert_int_eq(cut(0, 2), 1);
    ck_assert_int_eq(cut(2, 1), 1);
    ck_assert_int_eq(cut(0, 3), 0); /* in no group: not partitioned */
    const uint32_t twice[] = {0, 3, 3};
    ck_assert_int_eq(askew_net_partition(&net, twice, lens, 2), -EINVAL);
    const uint32_t unknown[] = {0, 1, 9};
    ck_assert_int_eq(askew_net_partition(&net, unknown, lens, 2), -EINVAL);
    ck_assert_int_eq(cut(0, 2), 1); /* the first partition stands */
    ck_assert_int_eq(cut(0, 3), 0);
    t_close();
}
END_TEST

START_TEST(test_topo_isolation_cuts_both_ways_but_never_a_nodes_link_to_itself)
{
    t_open(3);
    ck_assert_int_eq(askew_net_isolate(&net, 1), 0);
    ck_assert_int_eq(cut(0, 1), 1);
    ck_assert_int_eq(cut(1, 2), 1);
    ck_assert_int_eq(cut(1, 1), 0);
    ck_assert_int_eq(cut(0, 2), 0);
    ck_assert_int_eq(askew_net_isolate(&net, 3), -EINVAL);
    ck_assert_int_eq(askew_net_link_cut(&net, 0, 3, NULL), -EINVAL);
    askew_net_heal(&net);
    ck_assert_int_eq(cut(0, 1), 0);
    t_close();
}
END_TEST

/* The trace hash after a fixed set of topology changes. */
static uint64_t changes_hash(int skip_cut)
{
    t_open(3);
    const struct askew_net_link link = {.latency_ns_min = 1, .latency_ns_max = 5};
    ck_assert_int_eq(askew_net_configure(&net, &link), 0);
    if (!skip_cut)
        ck_assert_int_eq(askew_net_cut(&net, 0, 1), 0);
    ck_assert_int_eq(askew_net_crash(&net, 2), 0);
    ck_assert_int_eq(askew_net_restart(&net, 2), 0);
    const uint64_t hash = sched.trace.hash;
    t_close();
    return hash;
}

START_TEST(
    test_topo_every_change_is_mixed_into_the_trace_and_the_same_changes_hash_alike)
{
    ck_assert_uint_eq(changes_hash(0), changes_hash(0));
    ck_assert_uint_ne(changes_hash(0), changes_hash(1));
}
END_TEST

START_TEST(test_topo_a_reset_forgets_nodes_cuts_partitions_and_overrides)
{
    t_open(3);
    const struct askew_net_link link = {.latency_ns_min = 7, .latency_ns_max = 7};
    ck_assert_int_eq(askew_net_configure(&net, &link), 0);
    ck_assert_int_eq(askew_net_configure_link(&net, 0, 1, &link), 0);
    ck_assert_int_eq(askew_net_cut(&net, 1, 0), 0);
    ck_assert_int_eq(askew_net_isolate(&net, 2), 0);
    ck_assert_int_eq(askew_net_reset(&net, 5), 0);
    ck_assert_uint_eq(net.nodes_len, 0);
    ck_assert_uint_eq(net.edges_len, 0);
    ck_assert_uint_eq(net.cuts_len, 0);
    ck_assert_int_eq(net.link.latency_ns_max, ASKEW_NET_LATENCY_NS_MAX_DEFAULT);
    uint32_t id;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(askew_net_node_add(&net, &id), 0);
    ck_assert_int_eq(cut(1, 0), 0);
    ck_assert_int_eq(cut(0, 2), 0);
    struct askew_net_link got;
    ck_assert_int_eq(askew_net_link_get(&net, 0, 1, &got), 0);
    ck_assert_int_eq(got.latency_ns_max, ASKEW_NET_LATENCY_NS_MAX_DEFAULT);
    t_close();
}
END_TEST

Suite *net_topo_suite(void)
{
    Suite *s = suite_create("net_topo");
    TCase *tc = tcase_create("core");
    tcase_add_test(
        tc, test_topo_the_link_table_keeps_every_override_through_growth_and_heal);
    tcase_add_test(
        tc,
        test_topo_a_partition_cuts_between_groups_only_and_a_bad_one_changes_nothing);
    tcase_add_test(tc,
                   test_topo_isolation_cuts_both_ways_but_never_a_nodes_link_to_itself);
    tcase_add_test(
        tc,
        test_topo_every_change_is_mixed_into_the_trace_and_the_same_changes_hash_alike);
    tcase_add_test(tc, test_topo_a_reset_forgets_nodes_cuts_partitions_and_overrides);
    suite_add_tcase(s, tc);
    return s;
}
