"""Two C threads deposit into one account: a lost update.

A C library (built below from its source, loaded with ctypes) keeps a balance. Each
deposit runs on a thread of its own: it reads the balance, writes a line to the
journal (under the journal's lock), then stores what it read plus its amount. When the
other thread's deposit lands between that read and that store, it is lost. Under
askew-exec the C threads are real threads that run only while they hold the run's
baton, and every pthread call is a point where the seed may hand the baton on, so the
seed that interleaves the two deposits finds the lost one, and replays it.

    askew-exec pytest examples/cthreads_counter.py
"""

import ctypes
import hashlib
import os
import subprocess
import tempfile

import askew

SOURCE = r"""
#include <pthread.h>
#include <stdio.h>

static long balance;
static char journal[256];
static pthread_mutex_t journal_lock = PTHREAD_MUTEX_INITIALIZER;

static void *deposit(void *arg)
{
    long amount = (long)arg;
    long seen = balance; /* read ... */
    pthread_mutex_lock(&journal_lock);
    snprintf(journal, sizeof journal, "deposit %ld onto %ld", amount, seen);
    pthread_mutex_unlock(&journal_lock);
    balance = seen + amount; /* ... then store: another deposit may have been in between */
    return NULL;
}

long deposit_both(long a, long b)
{
    pthread_t one, two;
    balance = 0;
    pthread_create(&one, NULL, deposit, (void *)a);
    pthread_create(&two, NULL, deposit, (void *)b);
    pthread_join(one, NULL);
    pthread_join(two, NULL);
    return balance;
}
"""


def build(source):
    """The C source as a shared library, built once per source (by its hash)."""
    name = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"askew-example-{name}.so")
    if not os.path.exists(path):
        c_file = path[:-3] + ".c"
        with open(c_file, "w") as f:
            f.write(source)
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-shared", "-fPIC", "-o", path + ".tmp", c_file], check=True)
        os.replace(path + ".tmp", path)
    lib = ctypes.CDLL(path)
    lib.deposit_both.restype = ctypes.c_long
    lib.deposit_both.argtypes = [ctypes.c_long, ctypes.c_long]
    return lib


bank = build(SOURCE)


@askew.simulate(seed=11, iterations=50)
async def test_both_deposits_land(world):
    assert askew.preload_active(), "C threads are the seed's only under askew-exec"
    a, b = world.random.randint(1, 100), world.random.randint(1, 100)
    balance = bank.deposit_both(a, b)
    assert balance == a + b
