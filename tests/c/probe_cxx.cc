// SPDX-License-Identifier: Apache-2.0
// C++ as a library runs it inside a simulation, built by the preload's
// Python suites (tests/loop/test_preload_*.py) and loaded with ctypes:
// std::condition_variable::wait_for, which ends only when steady_clock
// passes its deadline; a std::thread that the preload refuses (in a run
// that takes no thread) and that nobody catches, so the process dies in
// std::terminate; and std::threads as a run's C threads. Test code only.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

// Wait for a predicate that never turns true: the milliseconds steady_clock
// saw pass, or -1 if the wait claimed the predicate held.
extern "C" long long probe_wait_for_ms(int ms)
{
    // Static: nobody else could lock them anyway (no other thread runs).
    static std::mutex m;
    static std::condition_variable cv;
    const bool ready = false;
    std::unique_lock<std::mutex> lock(m);
    const auto start = std::chrono::steady_clock::now();
    const bool got =
        cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return ready; });
    const auto waited = std::chrono::steady_clock::now() - start;
    return got ? -1
               : std::chrono::duration_cast<std::chrono::milliseconds>(waited).count();
}

// A thread nobody can start inside a run: std::thread throws
// std::system_error, and noexcept turns that into std::terminate.
extern "C" void probe_start_thread(void) noexcept
{
    std::thread t([] {});
    t.join();
}

// Two std::threads add to one counter under a std::mutex: the total, and
// whether each saw the other's adds (so both ran).
extern "C" long probe_thread_sum(int n)
{
    static std::mutex m;
    long total = 0;
    auto add = [&] {
        for (int i = 0; i < n; i++) {
            std::lock_guard<std::mutex> guard(m);
            total++;
        }
    };
    std::thread a(add), b(add);
    a.join();
    b.join();
    return total;
}
