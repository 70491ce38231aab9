/* SPDX-License-Identifier: Apache-2.0 */
/* The extension's side of libaskew-preload.so: finds its control API with
 * dlsym(RTLD_DEFAULT) at module init (never links against it: a copy loaded
 * late would interpose nothing), self-tests it, hands it the loop's clock,
 * entropy, sleep and identity hooks around a run (with the run's seed, the
 * note a death report prints, and where the interpreter's own code lies),
 * and turns recorded refusals into NondeterminismError, noted in
 * refusal.c's slot like every other refusal. Without the preload every
 * entry point is a cheap no-op. The sleep hook runs possibly without the
 * GIL and never calls into Python; on_violation takes the GIL (the
 * interposer's caller released it only for a blocking call it was about to
 * come back from) so that the refusal is annotated with the task and the
 * user's line while both are still on the stack. */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "active.h"
#include "errors.h"
#include "loop.h"
#include "preload.h"
#include "preload_disk.h"
#include "preload_identity.h"
#include "preload_thread.h"
#include "refusal.h"

static const struct askew_preload_api *api;
static int api_found; /* the symbol is there, whatever its ABI */
static int api_ok;    /* found, ABI compatible, and self_test passed */
static char api_msg[512];
static char api_path[1024];
static char api_abi[24];   /* "1.1": what the preload found speaks */
static int api_mismatch;   /* found, but speaking another ABI: runs fail */
static uintptr_t api_base; /* load address of the preload, to skip its frames */

/* on_violation sets askew__refusal_flag (refusal.c) and schedules at most
 * one pending call at a time, which raises pending_exc; GIL-protected. */
static atomic_int pending_call_scheduled;
static PyObject *pending_exc;

/* Entropy drawn while a module is being imported comes from a stream of
 * its own, so that whether an iteration is the first to import a module
 * (and so runs its initialisation, which may draw: cryptography draws 16
 * bytes) does not shift os.urandom and the trace for the rest of the run.
 * A sweep's iteration then replays alone under its reported seed.
 * GIL-protected. */
static struct askew_rng import_rng;
/* importlib._bootstrap._call_with_frames_removed's code: every module body
 * and every extension module's creation and init runs under it. */
static PyObject *import_code;
/* Refusals already turned into an exception; GIL-protected. */
static uint64_t violations_seen;

static const char *kind_hint(uint32_t kind)
{
    switch (kind) {
    case ASKEW_VIOLATION_THREAD:
        return "a thread would run, or wait, outside the seeded schedule (a run "
               "with executor=\"threads\" under askew-exec takes C threads, whose "
               "mutexes, condition variables, semaphores, joins and sleeps are its "
               "switch points; read-write locks, barriers and cancellation are not); "
               "run the work in a task, or let askew run executor work inline "
               "(simulate(executor=\"inline\"))";
    case ASKEW_VIOLATION_PROCESS:
        return "a child process is real concurrency with a real pid";
    case ASKEW_VIOLATION_SOCKET:
        return "real network I/O; use the simulated network (node.send/recv)";
    case ASKEW_VIOLATION_DNS:
        return "a real name lookup; only numeric hosts and localhost resolve "
               "inside a run";
    case ASKEW_VIOLATION_SLEEP:
        return "a timed wait can only time out inside the simulation, and a sleep "
               "costs virtual time only up to the run's max_time; await "
               "asyncio.sleep or a future instead";
    case ASKEW_VIOLATION_DEVRANDOM:
        return "reading the kernel's entropy bypasses the run's seed (its random uuid, "
               "a process's AT_RANDOM bytes); use os.urandom, getrandom or "
               "/dev/urandom, which the run serves";
    case ASKEW_VIOLATION_CLOCK:
        return "a real clock or real-time event the simulation does not model (the "
               "kernel's uptime or a process's times through /proc, a timer armed in "
               "real time, a timerfd, waiting for an fd fed from outside the run); "
               "read time.monotonic or the loop's clock, and use loop.call_later or "
               "asyncio.sleep for timers";
    case ASKEW_VIOLATION_IDENTITY:
        return "the host's identity (its hostname or boot id through /proc) or a "
               "signal to a process outside the run; each node has its own hostname "
               "and pid (socket.gethostname, os.getpid), and a signal to the node's "
               "own pid reaches this process";
    case ASKEW_VIOLATION_HANDOFF:
        return "work handed to another thread runs outside the seeded schedule "
               "and in real time (a thread pool, a queue consumer, Event.set); "
               "run the work in a task, or let askew run executor work inline "
               "(simulate(executor=\"inline\"))";
    case ASKEW_VIOLATION_OWN_RNG:
        return "the calling object carries its own OpenSSL (statically linked, as "
               "cryptography's wheels do), whose random generator mixes the process "
               "id and the thread's address into its state where the preload cannot "
               "reach: keys, nonces and salts made with it "
               "differ across processes even inside a run. Make such keys outside "
               "the run, or from os.urandom inside it (for example "
               "Ed25519PrivateKey.from_private_bytes(os.urandom(32)))";
    case ASKEW_VIOLATION_DISK:
        return "the simulated disk cannot serve this call: mmap and the other calls it "
               "does not model on a simulated fd, a stream (fopen) on it, or a path on "
               "a disk the running node cannot reach (another node's mount, or code "
               "outside every node); use read/write/pread/pwrite, and reach a node's "
               "disk from code that node runs";
    default:
        return "refused by the preload";
    }
}

/* "symbol+0x1f" from the file's own symbol table (static functions
 * included, which dladdr cannot name), or NULL: askew._loop.preload.symbolize
 * reads .symtab when the file still has one. */
static PyObject *symtab_name(const char *path, uintptr_t offset)
{
    PyObject *mod = PyImport_ImportModule("askew._loop.preload"); // new reference
    PyObject *name = mod != NULL ? PyObject_CallMethod(mod, "symbolize", "sk", path,
                                                       (unsigned long)offset)
                                 : NULL;
    Py_XDECREF(mod);
    if (name == NULL || !PyUnicode_Check(name)) {
        Py_XDECREF(name);
        PyErr_Clear();
        return NULL;
    }
    return name;
}

/* "0x7f...: libfoo.so(symbol+0x1f)" for each frame outside the preload. */
static PyObject *format_frames(const struct askew_violation *v)
{
    PyObject *lines = PyList_New(0); // new reference
    if (lines == NULL)
        return NULL;
    for (uint32_t i = 0; i < v->nframes && i < ASKEW_VIOLATION_FRAMES; i++) {
        uintptr_t pc = v->frames[i];
        Dl_info info;
        char buf[600];
        unsigned idx = (unsigned)PyList_GET_SIZE(lines);
        /* A return address points past the call: look up the call itself. */
        if (pc != 0 && dladdr((void *)(pc - 1), &info) != 0) {
            if ((uintptr_t)info.dli_fbase == api_base)
                continue;
            const char *file = info.dli_fname ? info.dli_fname : "?";
            const char *slash = strrchr(file, '/');
            PyObject *sym = symtab_name(file, pc - (uintptr_t)info.dli_fbase);
            if (sym != NULL) {
                snprintf(buf, sizeof(buf), "    #%u 0x%lx in %s (%s)", idx,
                         (unsigned long)pc, slash ? slash + 1 : file,
                         PyUnicode_AsUTF8(sym));
                Py_DECREF(sym);
                PyErr_Clear();
            } else if (info.dli_sname != NULL)
                snprintf(buf, sizeof(buf), "    #%u 0x%lx in %s (%s+0x%lx)", idx,
                         (unsigned long)pc, slash ? slash + 1 : file, info.dli_sname,
                         (unsigned long)(pc - (uintptr_t)info.dli_saddr));
            else
                snprintf(buf, sizeof(buf), "    #%u 0x%lx in %s (+0x%lx)", idx,
                         (unsigned long)pc, slash ? slash + 1 : file,
                         (unsigned long)(pc - (uintptr_t)info.dli_fbase));
        } else {
            snprintf(buf, sizeof(buf), "    #%u 0x%lx", idx, (unsigned long)pc);
        }
        PyObject *line = PyUnicode_DecodeFSDefault(buf); // new reference
        if (line == NULL || PyList_Append(lines, line) < 0) {
            Py_XDECREF(line);
            Py_DECREF(lines);
            return NULL;
        }
        Py_DECREF(line);
    }
    PyObject *sep = PyUnicode_FromString("\n"); // new reference
    if (sep == NULL) {
        Py_DECREF(lines);
        return NULL;
    }
    PyObject *joined = PyUnicode_Join(sep, lines);
    Py_DECREF(sep);
    Py_DECREF(lines);
    return joined;
}

/* The refusals the preload recorded since the last call, as one
 * NondeterminismError for the first of them (new reference), noted in the
 * refusal slot; NULL with no exception when there is none. */
static PyObject *take_violations(int where_known)
{
    uint64_t n = api->violations();
    if (n <= violations_seen)
        return NULL;
    uint64_t first = violations_seen;
    if (n - first > ASKEW_VIOLATION_RING)
        first = n - ASKEW_VIOLATION_RING;
    const uint64_t more = n - violations_seen - 1;
    violations_seen = n;
    /* A record overwritten meanwhile (the ring is the newest 16) still
     * fails the run: with the newest record, or with no record at all. */
    struct askew_violation v;
    if (api->violation_get(first, &v) != 0 &&
        api->violation_get(api->violations() - 1, &v) != 0) {
        memset(&v, 0, sizeof(v)); /* no call, no frames: kind_hint's default */
    }
    /* An object with a generator of its own is named in the first line. */
    Dl_info info;
    const char *object = "";
    if (v.kind == ASKEW_VIOLATION_OWN_RNG && v.nframes > 0 &&
        dladdr((void *)(v.frames[0] - 1), &info) != 0 && info.dli_fname != NULL)
        object = info.dli_fname;
    PyObject *frames = format_frames(&v); // new reference
    if (frames == NULL)
        return NULL;
    PyObject *type = askew__nondeterminism_error(askew__state_active()); // borrowed
    PyObject *exc = PyObject_CallFunction(
        type, "N",
        PyUnicode_FromFormat(
            "%s%s%s%s was refused inside the simulation: %s\n"
            "  C callers (innermost first):\n%U%s",
            v.call ? v.call : "a C call",
            v.call ? "()" : " (its record was overwritten)", object[0] ? " from " : "",
            object, kind_hint(v.kind), frames,
            more ? "\n  (and more refused calls after this one)" : ""));
    Py_DECREF(frames);
    if (exc != NULL)
        (void)askew__refusal_note_at(exc, where_known);
    return exc;
}

int askew__preload_check(void)
{
    if (__builtin_expect(
            !atomic_load_explicit(&askew__refusal_flag, memory_order_relaxed), 1))
        return 0;
    atomic_store_explicit(&askew__refusal_flag, 0, memory_order_relaxed);
    /* No Python code of the step's is on the stack now: where the refused
     * call was made is not known here (the pending call knows it). */
    PyObject *exc = api != NULL ? take_violations(/* where_known */ 0) : NULL;
    if (exc == NULL && PyErr_Occurred())
        return -1;
    Py_XDECREF(exc); /* the slot holds it, or an earlier refusal */
    return askew__refusal_raise();
}

/* Runs in the main thread with the GIL, at the next bytecode boundary,
 * usually in the frame that made the refused call: it raises the refusal
 * there, so a caller that retries a refused call forever (a loop on frozen
 * time, queue.get(timeout=...)) still gets the error. The same exception is
 * raised again at the step's end if the caller swallows it. */
static int pending_raise(void *arg)
{
    (void)arg;
    atomic_store(&pending_call_scheduled, 0);
    PyObject *exc = pending_exc; // the reference pending_exc held
    pending_exc = NULL;
    if (api == NULL || askew__active == NULL ||
        PyThread_get_thread_ident() != askew__active_thread) {
        Py_XDECREF(exc);
        return 0;
    }
    if (exc == NULL)
        exc = take_violations(/* where_known */ 1);
    if (exc == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return -1;
}

/* With the GIL: the refusals recorded so far become one exception, noted
 * (task and user's line) while the refused call's Python caller is still
 * the innermost frame; an exception already set is kept aside meanwhile. */
static void note_now(void)
{
    if (api == NULL || askew__active == NULL ||
        PyThread_get_thread_ident() != askew__active_thread)
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *exc = take_violations(ASKEW_WHERE_C_CALL);
    if (exc != NULL)
        Py_XSETREF(pending_exc, exc);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* Called from inside an interposer on the simulation thread. It takes the
 * GIL if the caller had released it: the caller was about to take it back
 * on return, and between the release and here it holds no lock of
 * CPython's. Then the pending call: Py_AddPendingCall is callable from any
 * thread, and raises at the next bytecode boundary. A process refusal gets
 * none: fork's callers run os.register_at_fork hooks next, where an
 * exception would only be printed and ignored; the step's end raises it. */
/* Py_IsFinalizing is public from 3.13; before, it is _Py_IsFinalizing. */
static int is_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

static void on_violation(void *ctx)
{
    (void)ctx;
    atomic_store_explicit(&askew__refusal_flag, 1, memory_order_relaxed);
    uint32_t kind = 0;
    uint64_t n = api != NULL ? api->violations() : 0;
    struct askew_violation v;
    if (n > 0 && api->violation_get(n - 1, &v) == 0)
        kind = v.kind;
    if (Py_IsInitialized() && !is_finalizing()) {
        PyGILState_STATE gil = PyGILState_Ensure();
        note_now();
        PyGILState_Release(gil);
    }
    if (kind == ASKEW_VIOLATION_PROCESS)
        return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&pending_call_scheduled, &expected, 1) &&
        Py_AddPendingCall(pending_raise, NULL) < 0)
        atomic_store(&pending_call_scheduled, 0); /* queue full: the step check
                                                     still reports it */
}

/* Whether the simulation thread is inside an import: a frame of
 * _call_with_frames_removed on its stack. Takes the GIL if the caller had
 * released it (os.urandom does, around getrandom). */
static int importing(void)
{
    if (import_code == NULL || !Py_IsInitialized() || is_finalizing())
        return 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int found = 0;
    PyFrameObject *frame = (PyFrameObject *)Py_XNewRef(PyEval_GetFrame());
    while (frame != NULL && !found) {
        PyCodeObject *code = PyFrame_GetCode(frame); // new reference
        found = (PyObject *)code == import_code;
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(frame); // new reference
        Py_DECREF(frame);
        frame = back;
    }
    Py_XDECREF(frame);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    PyGILState_Release(gil);
    return found;
}

/* The import stream during an import, the run's entropy stream (and its
 * trace record) otherwise: the preload's entropy hook, and os.urandom's. */
int askew__entropy_serve(void *ctx, void *buf, size_t len)
{
    if (len > 0 && importing()) {
        askew_rng_fill(&import_rng, buf, len);
        return 0;
    }
    return askew__entropy_fill(ctx, buf, len);
}

/* The handoff hook: a lock release or a wait that would block on the
 * simulation thread hands work to another thread when concurrent.futures'
 * thread.py or _base.py is among the innermost Python frames (submit's put
 * to the work queue and the idle-worker check before it; Future.result and
 * futures.wait blocking; a result set for a thread that waits on it).
 * asyncio.to_thread and run_in_executor on a real executor come through
 * the same. A release nobody waits on (ASKEW_HANDOFF_POST_IDLE) hands over
 * work only from thread.py (a busy worker takes it later); from _base.py
 * it is a Future's own lock on the loop thread, which involves no thread
 * (Future.set_result with nobody waiting). A hand-rolled Event or Queue
 * between the run and a thread of the user's is let through, as
 * docs/preload.md says. Every lock release of the run asks, so the check
 * compares each frame's file with two cached objects (code objects of one
 * module share their co_filename) and takes nothing without the GIL; only
 * the rare blocking wait takes the GIL back if the caller had released
 * it. The files are cached at enter: a pool made before the run means
 * concurrent.futures was imported then, and a pool made inside the run
 * cannot start threads. */
static PyObject *executor_files[2]; /* thread.py, _base.py; NULL if unused */

#define HANDOFF_DEPTH 4

/* 1 for thread.py, 2 for _base.py among the innermost frames; 0 for none. */
static int executor_on_stack(void)
{
    /* Making a frame object can fail; that must not leave an exception
     * behind in whatever C code released the lock. */
    const int had_error = PyErr_Occurred() != NULL;
    int found = 0;
    PyFrameObject *frame = (PyFrameObject *)Py_XNewRef(PyEval_GetFrame());
    for (int depth = 0; frame != NULL && !found && depth < HANDOFF_DEPTH; depth++) {
        PyCodeObject *code = PyFrame_GetCode(frame); // new reference
        found = code->co_filename == executor_files[0]   ? 1
                : code->co_filename == executor_files[1] ? 2
                                                         : 0;
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(frame); // new reference
        Py_DECREF(frame);
        frame = back;
    }
    Py_XDECREF(frame);
    if (!had_error && PyErr_Occurred())
        PyErr_Clear();
    return found;
}

static int preload_handoff(void *ctx, int waiting)
{
    (void)ctx;
    if (executor_files[0] == NULL || !Py_IsInitialized() || is_finalizing())
        return 0;
    if (PyGILState_Check()) {
        const int found = executor_on_stack();
        return waiting == ASKEW_HANDOFF_POST_IDLE ? found == 1 : found != 0;
    }
    /* A post made without the GIL is C code's own: never wait for the GIL
     * on one. */
    if (waiting != 1)
        return 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    const int found = executor_on_stack();
    PyGILState_Release(gil);
    return found != 0;
}

/* co_filename of `module`.`cls`.`fn` if the module is imported, else NULL;
 * new reference. */
static PyObject *code_file(const char *module, const char *cls, const char *fn)
{
    PyObject *modules = PyImport_GetModuleDict();          // borrowed
    PyObject *mod = PyDict_GetItemString(modules, module); // borrowed
    PyObject *type = mod ? PyObject_GetAttrString(mod, cls) : NULL;
    PyObject *func = type ? PyObject_GetAttrString(type, fn) : NULL;
    PyObject *code = func ? PyObject_GetAttrString(func, "__code__") : NULL;
    PyObject *file = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
    Py_XDECREF(type);
    Py_XDECREF(func);
    Py_XDECREF(code);
    PyErr_Clear();
    return file;
}

/* Seed the import stream from the run's entropy stream as it stands at
 * enter (after the loop's reset), without drawing from it. */
static void import_stream_setup(const struct askew_loop_state *loop)
{
    uint64_t seed = 0;
    for (int i = 0; i < 4; i++)
        seed = seed * 0x9E3779B97F4A7C15ull ^ loop->entropy.s[i];
    askew_rng_seed(&import_rng, askew_seed_stream(seed, ASKEW_STREAM_IMPORT));
    if (import_code != NULL)
        return;
    PyObject *bootstrap = PyImport_ImportModule("_frozen_importlib"); // new reference
    PyObject *fn = bootstrap
                       ? PyObject_GetAttrString(bootstrap, "_call_with_frames_removed")
                       : NULL;
    import_code = fn ? PyObject_GetAttrString(fn, "__code__") : NULL;
    Py_XDECREF(bootstrap);
    Py_XDECREF(fn);
    PyErr_Clear(); /* without it, imports draw from the run's stream */
}

/* The quiet-draws hook: the functions of an object carrying its own
 * OpenSSL whose draws never reach an output, from its symbol table
 * (askew._loop.preload.quiet_draws names them). Takes the GIL. */
static int preload_quiet_draws(void *ctx, const char *path, uintptr_t base,
                               struct askew_code_range *out, int max)
{
    (void)ctx;
    if (!Py_IsInitialized() || is_finalizing())
        return 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int n = 0;
    PyObject *mod = PyImport_ImportModule("askew._loop.preload"); // new reference
    PyObject *ranges = mod != NULL ? PyObject_CallMethod(mod, "quiet_draws", "s", path)
                                   : NULL; // new reference
    Py_XDECREF(mod);
    for (Py_ssize_t i = 0; ranges != NULL && PyList_Check(ranges) &&
                           i < PyList_GET_SIZE(ranges) && n < max;
         i++) {
        unsigned long long start, size;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(ranges, i), "KK", &start, &size))
            break;
        out[n].lo = base + (uintptr_t)start;
        out[n].hi = base + (uintptr_t)(start + size);
        n++;
    }
    Py_XDECREF(ranges);
    PyErr_Clear(); /* without names, every draw of the object is refused */
    PyErr_Restore(type, value, tb);
    PyGILState_Release(gil);
    return n;
}

/* What a report of a death after a refusal says about replaying (the
 * pytest plugin sets it per test: _preload_note); "" when nothing. */
static char run_note[4096];

static PyObject *preload_note(PyObject *Py_UNUSED(module), PyObject *arg)
{
    if (arg == Py_None) {
        run_note[0] = '\0';
        Py_RETURN_NONE;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &len) : NULL;
    if (text == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "_preload_note: a str or None, got %R", arg);
        return NULL;
    }
    if ((size_t)len >= sizeof(run_note)) {
        PyErr_Format(PyExc_ValueError, "_preload_note: at most %zu bytes, got %zd",
                     sizeof(run_note) - 1, len);
        return NULL;
    }
    memcpy(run_note, text, (size_t)len + 1);
    Py_RETURN_NONE;
}

/* The interpreter's own code: the object holding the eval loop (the python
 * executable or libpython) and the one holding _asyncio (3.11 compares the
 * running loop's pid with getpid on every lookup). Found at module init. */
static struct askew_code_range interp[ASKEW_INTERP_RANGES];

struct code_probe {
    uintptr_t base;
    struct askew_code_range range;
};

static int code_of(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct code_probe *p = data;
    if ((uintptr_t)info->dlpi_addr != p->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0)
            continue;
        const uintptr_t lo = p->base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (p->range.hi == 0 || lo < p->range.lo)
            p->range.lo = lo;
        if (hi > p->range.hi)
            p->range.hi = hi;
    }
    return 1;
}

/* The executable code of the object `fn` lies in; empty when none. */
static struct askew_code_range code_range_of(const void *fn)
{
    Dl_info info;
    if (fn == NULL || dladdr(fn, &info) == 0)
        return (struct askew_code_range){0, 0};
    struct code_probe p = {.base = (uintptr_t)info.dli_fbase};
    dl_iterate_phdr(code_of, &p);
    return p.range;
}

static void interp_add(const void *fn)
{
    const struct askew_code_range range = code_range_of(fn);
    if (range.hi == 0)
        return;
    for (int i = 0; i < ASKEW_INTERP_RANGES; i++) {
        if (interp[i].hi == range.hi && interp[i].lo == range.lo)
            return;
        if (interp[i].hi == 0) {
            interp[i] = range;
            return;
        }
    }
}

static void interp_setup(void)
{
    memset(interp, 0, sizeof(interp));
    interp_add((const void *)&PyEval_SaveThread);
    PyObject *mod = PyImport_ImportModule("_asyncio"); // new reference
    PyObject *fn =
        mod != NULL ? PyObject_GetAttrString(mod, "_get_running_loop") : NULL;
    if (fn != NULL && PyCFunction_Check(fn))
        interp_add((const void *)PyCFunction_GetFunction(fn));
    Py_XDECREF(fn);
    Py_XDECREF(mod);
    PyErr_Clear(); /* without _asyncio's range, its pid is the node's */
}

/* The extension's own code (the baton's locks), found at module init. */
static struct askew_code_range own_code;

/* The run the last enter belonged to: a loop, and its resets so far. */
static const struct askew_loop_state *last_loop;
static uint64_t last_reset;

int askew__preload_enter(struct askew_loop_state *ctx)
{
    askew__refusal_reset(); /* the slot is everybody's, preload or not */
    violations_seen = 0;
    Py_CLEAR(pending_exc);
    import_stream_setup(ctx); /* os.urandom serves imports from it too */
    if (api == NULL && api_mismatch) {
        /* A preload that is there but cannot be driven would let C code
         * read the real clock unseen: never run as if it were absent. */
        PyErr_Format(PyExc_RuntimeError,
                     "askew: %s; reinstall askew (or run `make`) so "
                     "that askew-exec loads the preload built with this askew._core",
                     api_msg);
        return -1;
    }
    if (api == NULL)
        return 0;
    if (!api_ok) {
        PyErr_Format(PyExc_RuntimeError,
                     "askew: libaskew-preload.so is loaded but not usable (%s); fix "
                     "LD_PRELOAD (askew-exec puts it in the right place) or unset it",
                     api_msg);
        return -1;
    }
    Py_XSETREF(executor_files[0],
               code_file("concurrent.futures.thread", "ThreadPoolExecutor", "submit"));
    Py_XSETREF(executor_files[1],
               code_file("concurrent.futures._base", "Future", "result"));
    /* The first enter after the loop's reset starts a run (a run is
     * entered again to finish its cancelled tasks). pct_run counts resets. */
    const int new_run = ctx != last_loop || ctx->sched.pct_run != last_reset;
    last_loop = ctx;
    last_reset = ctx->sched.pct_run;
    struct askew_preload_hooks hooks = {
        .size = sizeof(struct askew_preload_hooks),
        .ctx = ctx,
        .now = askew__clock_read,
        .random = askew__entropy_serve,
        .on_violation = on_violation,
        .sleep = askew__loop_consume_ns,
        .handoff = preload_handoff,
        .disk = askew__preload_disk_call,
        .identity = askew__preload_identity,
        .new_run = (uint32_t)new_run,
        .seed = ctx->sched.seed,
        .libc_seed = askew_seed_stream(ctx->sched.seed, ASKEW_STREAM_LIBC),
        .note = run_note[0] != '\0' ? run_note : NULL,
        .quiet_draws = preload_quiet_draws,
        .thread = askew__preload_thread,
        .own = own_code,
    };
    memcpy(hooks.interp, interp, sizeof(interp));
    askew__preload_disk_enter(ctx);
    int rc = api->enter(&hooks);
    if (rc < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "askew: the preload refused to enter a simulation: %s%s",
                     strerror(-rc),
                     rc == -EBUSY ? " (another thread is running one)" : "");
        return -1;
    }
    return 0;
}

void askew__preload_leave(void)
{
    /* A refusal noted after the last step's check (a run cut short by
     * KeyboardInterrupt, say) belongs to this run: the next starts clean. */
    askew__refusal_reset();
    Py_CLEAR(pending_exc);
    if (api != NULL && api_ok)
        api->leave();
}

static PyObject *preload_active(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args))
{
    return PyBool_FromLong(api_ok);
}

static PyObject *preload_status(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args))
{
    /* A 1.0 preload works, but refuses every sleep: say which one is here. */
    return Py_BuildValue(
        "{s:O,s:O,s:z,s:s,s:z,s:O,s:O,s:O,s:O,s:O}", "found",
        api_found ? Py_True : Py_False, "active", api_ok ? Py_True : Py_False, "path",
        api_path[0] ? api_path : NULL, "self_test", api_msg, "abi",
        api != NULL ? api_abi : NULL, "sleeps_cost_time",
        api_ok && api->abi_minor >= 1 ? Py_True : Py_False, "refuses_handoffs",
        api_ok && api->abi_minor >= 2 ? Py_True : Py_False, "serves_disks",
        api_ok && api->abi_minor >= 3 ? Py_True : Py_False, "hermetic",
        api_ok && api->abi_minor >= 4 ? Py_True : Py_False, "c_threads",
        api_ok && api->abi_minor >= 5 ? Py_True : Py_False);
}

static PyMethodDef preload_methods[] = {
    {"preload_active", preload_active, METH_NOARGS,
     "preload_active() -> bool: libaskew-preload.so is loaded and comes first."},
    {"preload_status", preload_status, METH_NOARGS,
     "preload_status() -> dict: found, active, path and the self-test message."},
    {"_preload_note", preload_note, METH_O,
     "_preload_note(text or None): what a death after a refusal reports besides the "
     "seed (key=value lines; {seed} stands for the seed)."},
    {NULL, NULL, 0, NULL},
};

/* Which ABI the preload at api_path speaks, in api_msg: it answers
 * get_api(major) for its own major only, so ask the plausible ones. */
#define ABI_MAJOR_PROBE_MAX 64u

static void describe_mismatch(askew_preload_get_api_fn get,
                              const struct askew_preload_api *same_major)
{
    const char *path = api_path[0] ? api_path : "an unknown file";
    if (same_major != NULL) {
        snprintf(api_msg, sizeof(api_msg),
                 "preload ABI mismatch: %s speaks preload ABI %u.%u with a %u-byte API "
                 "table, this askew._core speaks %u.%u and needs %zu bytes",
                 path, ASKEW_PRELOAD_ABI_MAJOR, same_major->abi_minor, same_major->size,
                 ASKEW_PRELOAD_ABI_MAJOR, ASKEW_PRELOAD_ABI_MINOR,
                 sizeof(struct askew_preload_api));
        return;
    }
    for (uint32_t major = 0; major < ABI_MAJOR_PROBE_MAX; major++) {
        const struct askew_preload_api *other =
            major != ASKEW_PRELOAD_ABI_MAJOR ? get(major) : NULL;
        if (other == NULL)
            continue;
        snprintf(api_msg, sizeof(api_msg),
                 "preload ABI mismatch: %s speaks preload ABI %u.%u, this askew._core "
                 "speaks %u.%u",
                 path, major, other->abi_minor, ASKEW_PRELOAD_ABI_MAJOR,
                 ASKEW_PRELOAD_ABI_MINOR);
        return;
    }
    snprintf(api_msg, sizeof(api_msg),
             "preload ABI mismatch: %s speaks no preload ABI major below %u, this "
             "askew._core speaks %u.%u",
             path, ABI_MAJOR_PROBE_MAX, ASKEW_PRELOAD_ABI_MAJOR,
             ASKEW_PRELOAD_ABI_MINOR);
}

int askew__preload_setup(PyObject *module)
{
    askew_preload_get_api_fn get =
        (askew_preload_get_api_fn)dlsym(RTLD_DEFAULT, ASKEW_PRELOAD_GET_API);
    api = NULL;
    api_ok = 0;
    api_mismatch = 0;
    api_found = get != NULL;
    api_path[0] = '\0';
    snprintf(api_msg, sizeof(api_msg), "not loaded (run under askew-exec)");
    if (get != NULL) {
        Dl_info info;
        if (dladdr((void *)get, &info) != 0 && info.dli_fname != NULL) {
            snprintf(api_path, sizeof(api_path), "%s", info.dli_fname);
            api_base = (uintptr_t)info.dli_fbase;
        }
        api = get(ASKEW_PRELOAD_ABI_MAJOR);
        if (api == NULL || api->size < sizeof(struct askew_preload_api)) {
            describe_mismatch(get, api);
            api = NULL;
            api_mismatch = 1;
        } else {
            /* Minor versions only add hooks at the end of the tables, which
             * each side sizes: any 1.x works with any other. */
            snprintf(api_abi, sizeof(api_abi), "%u.%u", ASKEW_PRELOAD_ABI_MAJOR,
                     api->abi_minor);
            api_ok = api->self_test(api_msg, sizeof(api_msg)) == 0;
        }
    }
    interp_setup();
    own_code = code_range_of((const void *)&askew__preload_setup);
    if (askew__refusal_setup(module) < 0 || askew__preload_disk_setup(module) < 0 ||
        askew__preload_identity_setup(module) < 0 ||
        askew__preload_thread_setup(module) < 0)
        return -1;
    return PyModule_AddFunctions(module, preload_methods);
}
