/* SPDX-License-Identifier: Apache-2.0 */
/* Node identity as the code under test sees it. A node is a machine of its
 * own: its hostname is the one the world gave it (spawn's name=, else
 * node-<id>), and its process and main thread ids are drawn from the run's
 * seed for that node's incarnation, so they are the same in every process
 * that runs the seed and change when the node restarts, as a restarted
 * process's do. The test body, which no node runs, is "localhost". Both the
 * preload (C code's getpid, gethostname, ...) and Python's patched
 * functions (askew/_loop/identity.py) read it from here, so the two always
 * agree. The hostname table is process-wide, like the preload binding's
 * other state, and written only by the simulation thread. */
#include <string.h>

#include "active.h"
#include "errors.h"
#include "preload_identity.h"

/* Hostnames by node id; an empty one is node-<id>. Grown with askew__grow
 * and never shrunk: a later world names its nodes again before they run. */
struct hostname {
    char name[ASKEW_HOSTNAME_MAX + 1];
};
static struct hostname *hostnames;
static size_t hostnames_cap;

#define TEST_BODY_HOSTNAME "localhost"
/* Node ids a name is kept for: far past any world, short of a table that
 * one bad id could make huge. */
#define NODES_NAMED_MAX (1LL << 24)

/* Pids as a Linux host hands them out (above the kernel's own threads,
 * below the default pid_max of 32768 that older systems keep). */
#define PID_FIRST 300
#define PID_SPAN  32000

struct ids {
    int32_t pid, ppid;
    uint64_t ident; /* threading.get_ident(): a pthread_t, page-aligned */
};

static struct ids ids_of(uint64_t seed, int64_t node, uint32_t incarnation)
{
    uint64_t x = askew_seed_stream(seed, ASKEW_STREAM_IDENTITY) ^
                 ((uint64_t)(node + 1) << 32 | incarnation);
    struct ids ids;
    ids.pid = PID_FIRST + (int32_t)(askew_splitmix64_next(&x) % PID_SPAN);
    ids.ppid = PID_FIRST + (int32_t)(askew_splitmix64_next(&x) % PID_SPAN);
    ids.ident = 0x7f0000000000ull + ((askew_splitmix64_next(&x) % (1u << 28)) << 12);
    return ids;
}

/* The running node and its incarnation (-1 for the test body). */
static int64_t running_node(struct askew_loop_state *loop, uint32_t *incarnation)
{
    const int64_t node = loop->node_current;
    int alive = 0;
    *incarnation = 0;
    if (node >= 0 && loop->net != NULL &&
        askew_net_node_state(&loop->net->net, (uint32_t)node, &alive, incarnation) < 0)
        *incarnation = 0;
    return node;
}

static void hostname_of(int64_t node, char *out)
{
    if (node < 0) {
        memcpy(out, TEST_BODY_HOSTNAME, sizeof(TEST_BODY_HOSTNAME));
    } else if ((size_t)node < hostnames_cap && hostnames[node].name[0] != '\0') {
        memcpy(out, hostnames[node].name, sizeof(hostnames[node].name));
    } else {
        snprintf(out, ASKEW_HOSTNAME_MAX + 1, "node-%lld", (long long)node);
    }
}

int askew__preload_identity(void *ctx, struct askew_identity *out)
{
    struct askew_loop_state *loop = ctx;
    uint32_t incarnation;
    const int64_t node = running_node(loop, &incarnation);
    const struct ids ids = ids_of(loop->sched.seed, node, incarnation);
    out->pid = ids.pid;
    out->ppid = ids.ppid;
    hostname_of(node, out->hostname);
    return 0;
}

/* _identity() -> (hostname, pid, ppid, ident) of the running node, or None
 * outside a simulation. */
static PyObject *identity(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args))
{
    struct askew_loop_state *loop = askew__active;
    if (loop == NULL || PyThread_get_thread_ident() != askew__active_thread)
        Py_RETURN_NONE;
    uint32_t incarnation;
    const int64_t node = running_node(loop, &incarnation);
    const struct ids ids = ids_of(loop->sched.seed, node, incarnation);
    char name[ASKEW_HOSTNAME_MAX + 1];
    hostname_of(node, name);
    return Py_BuildValue("(siiK)", name, ids.pid, ids.ppid,
                         (unsigned long long)ids.ident);
}

/* _name_node(node, hostname): the hostname node `node` reports. */
static PyObject *name_node(PyObject *Py_UNUSED(module), PyObject *args)
{
    long long node;
    const char *name;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "Ls#", &node, &name, &len))
        return NULL;
    if (node < 0 || node >= NODES_NAMED_MAX) {
        PyErr_Format(PyExc_ValueError, "_name_node: node id %lld is out of range",
                     node);
        return NULL;
    }
    if (len < 1 || len > ASKEW_HOSTNAME_MAX ||
        memchr(name, '\0', (size_t)len) != NULL) {
        PyErr_Format(PyExc_ValueError,
                     "_name_node: a hostname is 1 to %d bytes without NUL, got %R",
                     ASKEW_HOSTNAME_MAX, PyTuple_GET_ITEM(args, 1));
        return NULL;
    }
    const int grown = askew__grow((void **)&hostnames, &hostnames_cap, (size_t)node + 1,
                                  sizeof *hostnames);
    if (grown < 0) {
        askew__raise_engine(grown, "growing the node hostname table");
        return NULL;
    }
    memset(hostnames[node].name, 0, sizeof(hostnames[node].name));
    memcpy(hostnames[node].name, name, (size_t)len);
    Py_RETURN_NONE;
}

static PyMethodDef identity_methods[] = {
    {"_identity", identity, METH_NOARGS,
     "_identity() -> (hostname, pid, ppid, ident) of the running node, or None."},
    {"_name_node", name_node, METH_VARARGS,
     "_name_node(node, hostname): the hostname node `node` reports inside a run."},
    {NULL, NULL, 0, NULL},
};

int askew__preload_identity_setup(PyObject *module)
{
    return PyModule_AddFunctions(module, identity_methods);
}
