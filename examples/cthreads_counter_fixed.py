"""Two C threads deposit into one account, each store under the account's lock.

The fix for examples/cthreads_counter.py: a deposit holds the account's lock from its
read to its store, so no other deposit can land in between, whatever the seed hands the
baton to at the journal's lock.

    askew-exec pytest examples/cthreads_counter_fixed.py
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
static pthread_mutex_t account_lock = PTHREAD_MUTEX_INITIALIZER;

static void *deposit(void *arg)
{
    long amount = (long)arg;
    pthread_mutex_lock(&account_lock);
    long seen = balance;
    pthread_mutex_lock(&journal_lock);
    snprintf(journal, sizeof journal, "deposit %ld onto %ld", amount, seen);
    pthread_mutex_unlock(&journal_lock);
    balance = seen + amount;
    pthread_mutex_unlock(&account_lock);
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
