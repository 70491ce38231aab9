/* SPDX-License-Identifier: Apache-2.0 */
/* A fuzz target for the engine: a byte string is read as a program of
 * operations on one scheduler (ready queue, timer heap) and one network
 * riding it, and every result is checked against a model written here from
 * the semantics engine.h and net.h document (arrays and linear scans,
 * nothing clever). Built as a plain program that feeds it inputs drawn from
 * a seed: `make test-c` runs a bounded number, `make fuzz` many more, and a
 * failure prints the seed and iteration that replay it. With
 * -DASKEW_LIBFUZZER it is libFuzzer's LLVMFuzzerTestOneInput instead. Never
 * reads the host clock. The same input is then read again as file operations
 * on one simulated disk (ext/engine/disk.h), checked against a model of the
 * files' bytes. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>

#include "disk.h"
#include "engine.h"
#include "net.h"

#define NODES      4
#define KEYS       (NODES + 1) /* 0 for the world, node + 1 for a node */
#define ITEMS_MAX  512
#define TIMERS_MAX 64
#define MSGS_MAX   512

static const char *fuzz_seed_note = "";

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz_engine: %s:%d: check failed: %s%s\n", __FILE__,      \
                    __LINE__, #cond, fuzz_seed_note);                                  \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* ---- the model ------------------------------------------------------------ */

/* A ready item: pushed with a key and a push order; `batch` is the tick
 * whose batch took it (0 while it waits in the ring). */
struct m_item {
    uint64_t id;
    uint64_t key;
    uint64_t order;
    uint64_t batch;
    int live;
};

struct f_timer {
    struct askew_timer timer; /* first, so the heap's pointer converts */
    uint64_t key;
    int live;
};

struct m_msg {
    uint64_t id;
    uint32_t src, dst, dst_incarnation;
    int64_t sent_ns, deadline_min, deadline_max;
    int live;
};

struct fuzz {
    struct askew_sched sched;
    struct askew_net net;
    struct m_item items[ITEMS_MAX];
    size_t items_len;
    uint64_t next_id;
    uint64_t push_order;
    uint64_t batch_now; /* the batch being run, 0 before the first */
    struct f_timer timers[TIMERS_MAX];
    struct m_msg msgs[MSGS_MAX];
    size_t msgs_len;
    int alive[NODES];
    uint32_t incarnation[NODES];
    int group[NODES]; /* partition group, 0 for none */
    int isolated[NODES];
    struct askew_net_link link;
    /* within one tick: the last timer fired, for the (deadline, seq) order */
    int64_t fired_deadline;
    uint64_t fired_seq;
    int fired_any;
    /* Messages taken off the wire by a drain since the last reset: a drain
     * is teardown and counts them nowhere in the stats. */
    uint64_t drained;
};

static struct fuzz F;

static struct m_item *item_find(uint64_t id)
{
    for (size_t i = 0; i < F.items_len; i++)
        if (F.items[i].live && F.items[i].id == id)
            return &F.items[i];
    return NULL;
}

static size_t items_pending(void)
{
    size_t n = 0;
    for (size_t i = 0; i < F.items_len; i++)
        n += F.items[i].live;
    return n;
}

static int push(uint64_t key)
{
    if (F.items_len == ITEMS_MAX) { /* compact: forget items that ran */
        size_t k = 0;
        for (size_t i = 0; i < F.items_len; i++)
            if (F.items[i].live)
                F.items[k++] = F.items[i];
        F.items_len = k;
        if (k == ITEMS_MAX)
            return 0;
    }
    const uint64_t id = F.next_id++;
    CHECK(askew_sched_push(&F.sched, (void *)(uintptr_t)id, id, key) == 0);
    F.items[F.items_len++] = (struct m_item){id, key, F.push_order++, 0, 1};
    return 1;
}

static int cut(uint32_t src, uint32_t dst)
{
    if (src == dst)
        return 0; /* loopback is never cut */
    if (F.isolated[src] || F.isolated[dst])
        return 1;
    return F.group[src] && F.group[dst] && F.group[src] != F.group[dst];
}

static struct m_msg *msg_find(uint64_t id)
{
    for (size_t i = 0; i < F.msgs_len; i++)
        if (F.msgs[i].live && F.msgs[i].id == id)
            return &F.msgs[i];
    return NULL;
}

static size_t msgs_in_flight(void)
{
    size_t n = 0;
    for (size_t i = 0; i < F.msgs_len; i++)
        n += F.msgs[i].live;
    return n;
}

static void check_balance(void)
{
    const struct askew_net_stats *st = &F.net.stats;
    uint64_t dropped = 0;
    for (int o = 0; o < ASKEW_NET_OUTCOMES; o++)
        dropped += st->dropped[o];
    CHECK(st->sent + st->duplicated ==
          st->delivered + dropped + st->in_flight + F.drained);
    CHECK(st->in_flight == msgs_in_flight());
}

/* ---- the binding's side of a tick, in miniature --------------------------- */

static int fire(void *ctx, struct askew_timer *timer)
{
    (void)ctx;
    /* Fired in (deadline, seq) order under the strategies that keep
     * asyncio's order, never before the deadline. */
    CHECK(timer->deadline_ns <= F.sched.now_ns);
    if (F.sched.strategy == ASKEW_STRATEGY_FIFO ||
        F.sched.strategy == ASKEW_STRATEGY_FAITHFUL) {
        CHECK(!F.fired_any || timer->deadline_ns > F.fired_deadline ||
              (timer->deadline_ns == F.fired_deadline && timer->seq > F.fired_seq));
    }
    F.fired_any = 1;
    F.fired_deadline = timer->deadline_ns;
    F.fired_seq = timer->seq;
    if (timer->kind != ASKEW_TIMER_KIND_MESSAGE) {
        struct f_timer *t = (struct f_timer *)timer;
        CHECK(t->live); /* a cancelled timer never fires */
        t->live = 0;
        push(t->key); /* a full model table pushes nothing, to either side */
        return 0;
    }
    const uint64_t seq_id = ((const struct askew_net_msg *)timer)->id;
    struct m_msg *m = msg_find(seq_id);
    CHECK(m != NULL);
    struct askew_net_delivery d;
    CHECK(askew_net_deliver(&F.net, timer, &d) == 0);
    CHECK(d.id == m->id && d.src == m->src && d.dst == m->dst &&
          d.sent_ns == m->sent_ns);
    uint32_t want = ASKEW_NET_DELIVERED;
    if (!F.alive[m->dst] || F.incarnation[m->dst] != m->dst_incarnation)
        want = ASKEW_NET_DROPPED_CRASHED;
    else if (cut(m->src, m->dst))
        want = ASKEW_NET_DROPPED_PARTITIONED;
    CHECK(d.outcome == want);
    m->live = 0;
    if (d.outcome == ASKEW_NET_DELIVERED)
        push(m->dst + 1);
    return 0;
}

/* ---- operations ------------------------------------------------------------ */

static void op_timer(uint8_t arg)
{
    for (int i = 0; i < TIMERS_MAX; i++) {
        struct f_timer *t = &F.timers[(arg + i) % TIMERS_MAX];
        if (t->live)
            continue;
        t->timer.deadline_ns = F.sched.now_ns + (int64_t)(arg % 16) * (arg % 7) * 1000;
        t->timer.kind = 1;
        t->key = arg % KEYS;
        CHECK(askew_sched_timer_add(&F.sched, &t->timer) == 0);
        CHECK(t->timer.index != ASKEW_TIMER_IDLE);
        t->live = 1;
        return;
    }
}

static void op_cancel(uint8_t arg)
{
    struct f_timer *t = &F.timers[arg % TIMERS_MAX];
    if (!t->live)
        return;
    askew_sched_timer_cancel(&F.sched, &t->timer);
    CHECK(t->timer.index == ASKEW_TIMER_IDLE);
    t->live = 0;
}

/* One tick, then up to `arg` steps of its batch (a batch cut short resumes
 * at the next tick, as asyncio keeps the rest of its ready deque). */
static void op_tick(uint8_t arg)
{
    const int64_t before = F.sched.now_ns;
    size_t unbatched = 0, batch_left = 0;
    for (size_t i = 0; i < F.items_len; i++) {
        if (!F.items[i].live)
            continue;
        if (F.items[i].batch == 0)
            unbatched++;
        else if (F.items[i].batch == F.batch_now)
            batch_left++;
    }
    /* The earliest deadline queued, message or callback. */
    const struct askew_timer *top_before = askew_heap_peek(&F.sched.timers);
    const int64_t earliest = top_before != NULL ? top_before->deadline_ns : INT64_MAX;
    F.fired_any = 0;
    const int rc = askew_sched_tick(&F.sched, fire, NULL);
    CHECK(rc >= 0);
    CHECK(F.sched.now_ns >= before);
    if (batch_left > 0) {
        CHECK(rc == ASKEW_TICK_READY && F.sched.now_ns == before && !F.fired_any);
    } else if (rc == ASKEW_TICK_IDLE) {
        CHECK(items_pending() == 0 && F.sched.timers.len == 0);
        return;
    } else {
        CHECK(rc == ASKEW_TICK_READY);
        /* The clock moves only when nothing was ready, and then at least
         * to the earliest deadline (further if what fired queued nothing). */
        if (unbatched > 0)
            CHECK(F.sched.now_ns == before);
        else
            CHECK(F.sched.now_ns >= earliest);
        /* Every due timer fired. */
        const struct askew_timer *top = askew_heap_peek(&F.sched.timers);
        CHECK(top == NULL || top->deadline_ns > F.sched.now_ns);
        F.batch_now++;
        for (size_t i = 0; i < F.items_len; i++)
            if (F.items[i].live && F.items[i].batch == 0)
                F.items[i].batch = F.batch_now;
    }
    for (unsigned step = 0; step < arg; step++) {
        const int64_t t0 = F.sched.now_ns;
        void *got = askew_sched_next(&F.sched);
        const int64_t spent = F.sched.now_ns - t0;
        struct m_item *first = NULL;
        for (size_t i = 0; i < F.items_len; i++)
            if (F.items[i].live && F.items[i].batch == F.batch_now &&
                (first == NULL || F.items[i].order < first->order))
                first = &F.items[i];
        if (got == NULL) {
            CHECK(first == NULL); /* the batch is done only when it is empty */
            return;
        }
        struct m_item *it = item_find((uint64_t)(uintptr_t)got);
        CHECK(it != NULL && it->batch == F.batch_now); /* only this batch's work */
        switch (F.sched.strategy) {
        case ASKEW_STRATEGY_FIFO:
            CHECK(it == first && spent == 0);
            break;
        case ASKEW_STRATEGY_FAITHFUL:
            /* FIFO within its key; each step costs CPU time in bounds. */
            for (size_t i = 0; i < F.items_len; i++)
                CHECK(!(F.items[i].live && F.items[i].batch == F.batch_now &&
                        F.items[i].key == it->key && F.items[i].order < it->order));
            CHECK(spent >= F.sched.cpu_ns_lo && spent <= F.sched.cpu_ns_hi);
            break;
        default:
            break;
        }
        it->live = 0;
        /* A step may queue work: it waits for the next tick. */
        if (step % 3 == 1)
            push((uint64_t)(step % KEYS));
    }
}

static void op_send(uint8_t arg)
{
    if (F.msgs_len == MSGS_MAX) {
        size_t k = 0;
        for (size_t i = 0; i < F.msgs_len; i++)
            if (F.msgs[i].live)
                F.msgs[k++] = F.msgs[i];
        F.msgs_len = k;
        if (k + 2 > MSGS_MAX)
            return;
    }
    const uint32_t src = arg % NODES, dst = (arg / NODES) % NODES;
    struct askew_net_sent sent;
    CHECK(askew_net_send(&F.net, src, dst, (void *)(uintptr_t)(arg + 1u), &sent) == 0);
    uint32_t want = ASKEW_NET_IN_FLIGHT;
    if (!F.alive[src])
        want = ASKEW_NET_DROPPED_CRASHED;
    else if (cut(src, dst))
        want = ASKEW_NET_DROPPED_PARTITIONED;
    else if (F.link.loss_ppm >= ASKEW_NET_PPM_MAX)
        want = ASKEW_NET_DROPPED_LOST;
    if (want != ASKEW_NET_IN_FLIGHT) {
        CHECK(sent.outcome == want && sent.copies == 0);
        return;
    }
    if (F.link.loss_ppm == 0) /* lost only by the draw */
        CHECK(sent.outcome != ASKEW_NET_DROPPED_LOST);
    if (sent.outcome == ASKEW_NET_DROPPED_LOST) {
        CHECK(sent.copies == 0);
        return;
    }
    CHECK(sent.outcome == ASKEW_NET_IN_FLIGHT || sent.outcome == ASKEW_NET_DUPLICATED);
    CHECK(sent.copies == (sent.outcome == ASKEW_NET_DUPLICATED ? 2u : 1u));
    if (F.link.duplicate_ppm == 0)
        CHECK(sent.copies == 1);
    if (F.link.duplicate_ppm >= ASKEW_NET_PPM_MAX)
        CHECK(sent.copies == 2);
    const int64_t now = F.sched.now_ns;
    CHECK(sent.deadline_ns >= now + F.link.latency_ns_min &&
          sent.deadline_ns <= now + F.link.latency_ns_max);
    for (uint32_t c = 0; c < sent.copies; c++)
        F.msgs[F.msgs_len++] = (struct m_msg){sent.id + c,
                                              src,
                                              dst,
                                              F.incarnation[dst],
                                              now,
                                              now + F.link.latency_ns_min,
                                              now + F.link.latency_ns_max,
                                              1};
}

static void op_fault(uint8_t arg)
{
    const uint32_t node = arg % NODES;
    switch ((arg / NODES) % 6) {
    case 0:
        CHECK(askew_net_crash(&F.net, node) == 0);
        F.alive[node] = 0;
        break;
    case 1:
        CHECK(askew_net_restart(&F.net, node) == 0);
        F.alive[node] = 1;
        F.incarnation[node]++;
        break;
    case 2: {
        /* Nodes 0..k-1 in group 1, the rest (but the last) in group 2. */
        const uint32_t k = 1 + node % (NODES - 2);
        uint32_t ids[NODES];
        size_t lens[2] = {k, 0};
        for (uint32_t i = 0; i < NODES - 1; i++)
            ids[i] = i;
        lens[1] = (NODES - 1) - k;
        CHECK(askew_net_partition(&F.net, ids, lens, 2) == 0);
        for (uint32_t i = 0; i < NODES; i++)
            F.group[i] = i < k ? 1 : (i < NODES - 1 ? 2 : 0);
        break;
    }
    case 3:
        CHECK(askew_net_isolate(&F.net, node) == 0);
        F.isolated[node] = 1;
        break;
    case 4:
        askew_net_heal(&F.net);
        memset(F.group, 0, sizeof F.group);
        memset(F.isolated, 0, sizeof F.isolated);
        break;
    default: {
        static const uint32_t ppm[] = {0, 0, 300000, ASKEW_NET_PPM_MAX};
        const int64_t lo = (int64_t)(arg % 5) * 1000;
        struct askew_net_link link = {lo, lo + (int64_t)(arg % 3) * 2000, ppm[arg % 4],
                                      ppm[(arg / 4) % 4]};
        CHECK(askew_net_configure(&F.net, &link) == 0);
        F.link = link;
        break;
    }
    }
}

struct visit_count {
    size_t items, timers, payloads;
};

static int count_item(void *item, void *ctx)
{
    struct visit_count *v = ctx;
    struct m_item *it = item_find((uint64_t)(uintptr_t)item);
    CHECK(it != NULL);
    v->items++;
    return 0;
}

static int count_timer(struct askew_timer *timer, void *ctx)
{
    struct visit_count *v = ctx;
    if (timer->kind == ASKEW_TIMER_KIND_MESSAGE)
        CHECK(msg_find(((const struct askew_net_msg *)timer)->id) != NULL);
    else
        CHECK(((struct f_timer *)timer)->live);
    v->timers++;
    return 0;
}

static int count_payload(void *payload, void *ctx)
{
    struct visit_count *v = ctx;
    CHECK(payload != NULL);
    v->payloads++;
    return 0;
}

/* The collector's view: exactly what is queued, each once. */
static void op_visit(void)
{
    struct visit_count v = {0, 0, 0};
    CHECK(askew_sched_visit(&F.sched, count_item, count_timer, &v) == 0);
    CHECK(askew_net_visit(&F.net, count_payload, &v) == 0);
    size_t live_timers = 0;
    for (int i = 0; i < TIMERS_MAX; i++)
        live_timers += F.timers[i].live;
    CHECK(v.items == items_pending() && v.items == askew_sched_pending(&F.sched));
    CHECK(v.timers == live_timers + msgs_in_flight());
    CHECK(v.payloads == msgs_in_flight());
}

static size_t dropped_items, dropped_timers, released;

static void drop_item(void *item)
{
    struct m_item *it = item_find((uint64_t)(uintptr_t)item);
    CHECK(it != NULL);
    it->live = 0;
    dropped_items++;
}

static void drop_timer(struct askew_timer *timer)
{
    CHECK(timer->kind != ASKEW_TIMER_KIND_MESSAGE); /* drained before */
    struct f_timer *t = (struct f_timer *)timer;
    CHECK(t->live);
    t->live = 0;
    dropped_timers++;
}

static void release(void *ctx, const struct askew_net_delivery *d)
{
    (void)ctx;
    struct m_msg *m = msg_find(d->id);
    CHECK(m != NULL && d->outcome == ASKEW_NET_DROPPED_RESET);
    m->live = 0;
    released++;
}

/* Run teardown: everything queued comes back exactly once; then a reset. */
static void op_clear(uint8_t arg)
{
    const size_t items = items_pending(), msgs = msgs_in_flight();
    size_t timers = 0;
    for (int i = 0; i < TIMERS_MAX; i++)
        timers += F.timers[i].live;
    dropped_items = dropped_timers = released = 0;
    askew_net_drain(&F.net, release, NULL);
    askew_sched_clear(&F.sched, drop_item, drop_timer);
    CHECK(dropped_items == items && dropped_timers == timers && released == msgs);
    F.drained += released;
    CHECK(askew_sched_pending(&F.sched) == 0 && F.sched.timers.len == 0);
    if (arg & 16) {
        askew_sched_reset(&F.sched, arg);
        CHECK(askew_net_reset(&F.net, arg) == 0);
        F.drained = 0;
        /* The network starts with no nodes: add them back. */
        for (uint32_t i = 0; i < NODES; i++) {
            uint32_t id;
            CHECK(askew_net_node_add(&F.net, &id) == 0 && id == i);
            F.alive[i] = 1;
            F.incarnation[i] = 0;
        }
        memset(F.group, 0, sizeof F.group);
        memset(F.isolated, 0, sizeof F.isolated);
        F.link = (struct askew_net_link){ASKEW_NET_LATENCY_NS_MIN_DEFAULT,
                                         ASKEW_NET_LATENCY_NS_MAX_DEFAULT, 0, 0};
    }
}

/* ---- the disk: the same input read again as a program of file operations --- */

/* Six names (four files at most in the root, two in d/) checked against a
 * model of their current bytes; a "sync all" makes everything durable, so
 * a crash right after it must change nothing; after any crash the model is
 * read back from the disk and the disk holds exactly twice (durable copy
 * and cache) the bytes of what it names. */
#define D_NAMES 6
#define D_MAX   2048
static const char *const d_names[D_NAMES] = {"a", "b", "c", "d/x", "d/y", "e"};

struct d_model {
    int exists[D_NAMES];
    size_t size[D_NAMES];
    uint8_t bytes[D_NAMES][D_MAX];
    int synced; /* nothing changed since the last sync-all */
};

static void d_read_back(struct askew_disk *disk, struct d_model *m)
{
    for (int i = 0; i < D_NAMES; i++) {
        const int fh = askew_disk_open(disk, d_names[i], O_RDONLY, 0);
        CHECK(fh >= 0 || fh == -ENOENT);
        m->exists[i] = fh >= 0;
        m->size[i] = 0;
        if (fh < 0)
            continue;
        const int64_t got = askew_disk_pread(disk, fh, m->bytes[i], D_MAX, 0);
        CHECK(got >= 0 && got <= D_MAX);
        m->size[i] = (size_t)got;
        CHECK(askew_disk_close(disk, fh) == 0);
    }
}

static void d_check(struct askew_disk *disk, const struct d_model *m)
{
    static uint8_t buf[D_MAX + 1];
    for (int i = 0; i < D_NAMES; i++) {
        struct askew_disk_stat st;
        const int rc = askew_disk_stat(disk, d_names[i], &st);
        CHECK(rc == (m->exists[i] ? 0 : -ENOENT));
        if (rc)
            continue;
        CHECK(st.size == m->size[i]);
        const int fh = askew_disk_open(disk, d_names[i], O_RDONLY, 0);
        CHECK(fh >= 0);
        CHECK(askew_disk_pread(disk, fh, buf, sizeof buf, 0) == (int64_t)m->size[i]);
        CHECK(memcmp(buf, m->bytes[i], m->size[i]) == 0);
        CHECK(askew_disk_close(disk, fh) == 0);
    }
}

static void d_sync_all(struct askew_disk *disk, struct d_model *m)
{
    for (int i = 0; i < D_NAMES; i++) {
        if (!m->exists[i])
            continue;
        const int fh = askew_disk_open(disk, d_names[i], O_RDONLY, 0);
        CHECK(fh >= 0 && askew_disk_fsync(disk, fh) == 0 &&
              askew_disk_close(disk, fh) == 0);
    }
    static const char *const dirs[] = {"/", "d"};
    for (int i = 0; i < 2; i++) {
        const int fh = askew_disk_open(disk, dirs[i], O_RDONLY | O_DIRECTORY, 0);
        CHECK(fh >= 0 && askew_disk_fsync(disk, fh) == 0 &&
              askew_disk_close(disk, fh) == 0);
    }
    m->synced = 1;
}

static void fuzz_disk(const uint8_t *data, size_t len)
{
    static struct d_model m;
    struct askew_disk *disk;
    memset(&m, 0, sizeof m);
    CHECK(askew_disk_new(&disk, &F.sched, 1, data[0]) == 0);
    CHECK(askew_disk_mkdir(disk, "d", 0755) == 0);
    for (size_t pc = 1; pc + 2 < len; pc += 3) {
        const uint8_t op = data[pc], a = data[pc + 1], b = data[pc + 2];
        const int i = a % D_NAMES, j = b % D_NAMES;
        if (op % 8 >= 1 && op % 8 <= 5)
            m.synced = 0; /* a change; reads, syncs and crashes keep it */
        switch (op % 8) {
        case 0: { /* read a range, compare */
            d_check(disk, &m);
            break;
        }
        case 1:
        case 2: { /* write b bytes of value a at offset (a * 13) % D_MAX */
            const size_t off = (size_t)(a * 13u) % (D_MAX / 2), n = 1 + b % 700;
            const int fh = askew_disk_open(disk, d_names[i], O_WRONLY | O_CREAT, 0644);
            CHECK(fh >= 0);
            uint8_t chunk[700];
            memset(chunk, a, n);
            CHECK(askew_disk_pwrite(disk, fh, chunk, n, (int64_t)off) == (int64_t)n);
            if (op & 16)
                CHECK(askew_disk_fdatasync(disk, fh) == 0);
            CHECK(askew_disk_close(disk, fh) == 0);
            if (off > m.size[i])
                memset(m.bytes[i] + m.size[i], 0, off - m.size[i]);
            memset(m.bytes[i] + off, a, n);
            if (off + n > m.size[i])
                m.size[i] = off + n;
            m.exists[i] = 1;
            break;
        }
        case 3: { /* rename i over j */
            const int rc = askew_disk_rename(disk, d_names[i], d_names[j]);
            CHECK(rc == (m.exists[i] ? 0 : -ENOENT));
            if (rc == 0 && i != j) {
                m.exists[j] = 1;
                m.size[j] = m.size[i];
                memcpy(m.bytes[j], m.bytes[i], m.size[i]);
                m.exists[i] = 0;
                m.size[i] = 0;
            }
            break;
        }
        case 4: { /* unlink */
            CHECK(askew_disk_unlink(disk, d_names[i]) == (m.exists[i] ? 0 : -ENOENT));
            m.exists[i] = 0;
            m.size[i] = 0;
            break;
        }
        case 5: { /* truncate */
            const size_t n = (size_t)b * 7 % D_MAX;
            const int rc = askew_disk_truncate(disk, d_names[i], (int64_t)n);
            CHECK(rc == (m.exists[i] ? 0 : -ENOENT));
            if (rc == 0) {
                if (n > m.size[i])
                    memset(m.bytes[i] + m.size[i], 0, n - m.size[i]);
                m.size[i] = n;
            }
            break;
        }
        case 6:
            d_sync_all(disk, &m);
            break;
        default: { /* crash */
            struct askew_disk_crash_result res;
            CHECK(askew_disk_crash(disk, &res) == 0);
            if (m.synced) {
                CHECK(res.sectors_kept + res.sectors_lost + res.dirops_kept +
                          res.dirops_lost ==
                      0);
                d_check(disk, &m);
            }
            d_read_back(disk, &m);
            struct askew_disk_usage u;
            askew_disk_usage(disk, &u);
            uint64_t bytes = 0;
            for (int k = 0; k < D_NAMES; k++)
                bytes += 2 * m.size[k];
            CHECK(u.bytes == bytes && u.handles == 0 && u.dirty == 0 && u.dirops == 0);
            struct askew_disk_stat st;
            if (askew_disk_stat(disk, "d", &st) != 0) /* the mkdir was lost */
                CHECK(askew_disk_mkdir(disk, "d", 0755) == 0);
            break;
        }
        }
        d_check(disk, &m);
    }
    askew_disk_free(disk);
}

/* ---- one input --------------------------------------------------------------- */

int askew_fuzz_one(const uint8_t *data, size_t len)
{
    if (len < 1)
        return 0;
    memset(&F, 0, sizeof F);
    CHECK(askew_sched_init(&F.sched) == 0);
    CHECK(askew_net_init(&F.net, &F.sched) == 0);
    F.sched.strategy = (enum askew_strategy)(data[0] % 4);
    F.sched.cpu_ns_lo = data[0] & 4 ? 100 : 0;
    F.sched.cpu_ns_hi = data[0] & 8 ? 5000 : F.sched.cpu_ns_lo;
    F.sched.overshoot_ns_lo = 0;
    F.sched.overshoot_ns_hi = data[0] & 16 ? 3000 : 0;
    F.next_id = 1;
    for (int i = 0; i < TIMERS_MAX; i++)
        F.timers[i].timer.index = ASKEW_TIMER_IDLE;
    F.link = (struct askew_net_link){ASKEW_NET_LATENCY_NS_MIN_DEFAULT,
                                     ASKEW_NET_LATENCY_NS_MAX_DEFAULT, 0, 0};
    for (uint32_t i = 0; i < NODES; i++) {
        uint32_t id;
        CHECK(askew_net_node_add(&F.net, &id) == 0 && id == i);
        F.alive[i] = 1;
    }
    for (size_t pc = 1; pc + 1 < len; pc += 2) {
        const uint8_t op = data[pc], arg = data[pc + 1];
        switch (op % 10) {
        case 0:
        case 1:
            push(arg % KEYS);
            break;
        case 2:
            op_timer(arg);
            break;
        case 3:
            op_cancel(arg);
            break;
        case 4:
        case 5:
            op_tick(arg % 32);
            break;
        case 6:
            op_send(arg);
            break;
        case 7:
            op_fault(arg);
            break;
        case 8:
            op_visit();
            break;
        default:
            if (arg % 8 == 0)
                op_clear(arg);
            else
                op_visit();
            break;
        }
        check_balance();
    }
    /* Run to quiet: every timer fires, every message comes due. */
    for (int guard = 0; guard < 100000; guard++) {
        op_tick(31);
        if (items_pending() == 0 && F.sched.timers.len == 0)
            break;
    }
    CHECK(items_pending() == 0 && F.sched.timers.len == 0 && msgs_in_flight() == 0);
    check_balance();
    fuzz_disk(data, len);
    askew_net_free(&F.net, NULL, NULL);
    askew_sched_free(&F.sched);
    return 0;
}

#ifdef ASKEW_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return askew_fuzz_one(data, size);
}
#else
/* fuzz_engine [iterations [seed]]: inputs of up to 4 KiB drawn from the
 * seed; iteration i's input depends only on (seed, i), so the line printed
 * on failure replays it alone. */
int main(int argc, char **argv)
{
    const unsigned long long iterations = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000;
    const uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    const unsigned long long first = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
    static uint8_t buf[4096];
    static char note[128];
    for (unsigned long long i = first; i < first + iterations; i++) {
        struct askew_rng rng;
        askew_rng_seed(&rng, askew_seed_iteration(seed, i));
        const size_t len = 1 + (size_t)askew_rng_below(&rng, sizeof buf - 1);
        askew_rng_fill(&rng, buf, len);
        snprintf(note, sizeof note, " (replay: fuzz_engine 1 %" PRIu64 " %llu)", seed,
                 i);
        fuzz_seed_note = note;
        askew_fuzz_one(buf, len);
    }
    printf("fuzz_engine: %llu inputs from seed %" PRIu64 ", every check held\n",
           iterations, seed);
    return 0;
}
#endif
