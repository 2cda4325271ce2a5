/* Cost of the lock macros: an uncontended lock/unlock pair, bare vs through the macros.
 *
 * Build (from the workspace root, after `cargo build --release -p replay-c`):
 *   cc -O2 bench/c/mutex.c -Ic-header/include target/release/libreplay_c.a -lpthread -ldl -lm -o /tmp/mutex-bench
 * Run:
 *   REPLAY_MODE=record REPLAY_LOG=/tmp/mutex.replay /tmp/mutex-bench [N]     # recorded
 *   /tmp/mutex-bench [N]                                                     # replay off
 *   REPLAY_MODE=replay REPLAY_LOG=/tmp/mutex.replay /tmp/mutex-bench [N]     # replayed
 * (record and replay with the same N). Prints `name ns_per_pair ratio_vs_bare`, best of 5
 * rounds of N pairs (default 200000) each:
 *   bare_lock_unlock    pthread_mutex_lock + pthread_mutex_unlock
 *   macro_lock_unlock   REPLAY_MUTEX_LOCK + REPLAY_MUTEX_UNLOCK (one event per pair)
 * Each recorded round starts after replay_flush(), as in clock.c: the hot path, not the
 * log writer's sustained rate.
 */
#include "replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double bare(long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return (now_ns() - t0) / (double)n;
}

static double macro(long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        REPLAY_MUTEX_LOCK(&m);
        counter++;
        REPLAY_MUTEX_UNLOCK(&m);
    }
    return (now_ns() - t0) / (double)n;
}

static double best(double (*f)(long), long n) {
    double b = 1e300;
    for (int r = 0; r < 5; r++) {
        replay_flush();
        double x = f(n);
        if (x < b) b = x;
    }
    return b;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000;
    if (replay_init_from_env() != 0) return 1;
    double b = best(bare, n);
    double mc = best(macro, n);
    fprintf(stderr, "bare_lock_unlock   %7.1f ns  1.00\n", b);
    fprintf(stderr, "macro_lock_unlock  %7.1f ns  %.2f\n", mc, mc / b);
    return replay_shutdown();
}
