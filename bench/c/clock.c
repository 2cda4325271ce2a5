/* Hot-path cost of the C front end.
 *
 * Build (from the workspace root, after `cargo build --release -p replay-c`):
 *   cc -O2 bench/c/clock.c -Ic-header/include target/release/libreplay_c.a -lpthread -ldl -lm -o /tmp/clock-bench
 * Run (record mode, so that the macros record; the log goes to a temporary file):
 *   REPLAY_MODE=record REPLAY_LOG=/tmp/clock-bench.replay /tmp/clock-bench [N]
 *
 * Prints one line per case: `name ns_per_call ratio_vs_bare`, where bare is N direct
 * clock_gettime(CLOCK_MONOTONIC) calls (N defaults to 100000):
 *   bare_clock_gettime              the direct call
 *   record_clock_gettime            REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts)
 *   record_value                    REPLAY_VALUE(counter)
 *   record_clock_gettime_sustained  the REPLAY_CALL_OUT case for 20 x N calls in a row
 * The first three measure the hot path: each round starts after replay_flush(), so the
 * recorder's bounded buffers have room and the calling thread never waits for the log
 * writer. The sustained case runs long enough to fill them: it measures how fast the core's
 * background writer keeps up (the calling thread waits for it once 64 chunks are pending).
 * With REPLAY_MODE unset the macro cases measure the cost of replay being off. Each case
 * takes the best of 5 rounds, which filters out preemption on a shared machine.
 */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Keeps the compiler from dropping the measured work. */
static volatile long sink;

static double bare(long n) {
    struct timespec ts;
    long acc = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        acc += ts.tv_nsec;
    }
    double t = now_ns() - t0;
    sink = acc;
    return t / (double)n;
}

static double recorded_clock(long n) {
    struct timespec ts;
    long acc = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts);
        acc += ts.tv_nsec;
    }
    double t = now_ns() - t0;
    sink = acc;
    return t / (double)n;
}

static double recorded_value(long n) {
    long acc = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) acc += REPLAY_VALUE(i);
    double t = now_ns() - t0;
    sink = acc;
    return t / (double)n;
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
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (n <= 0) {
        fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
        return 2;
    }
    if (replay_init_from_env() != 0) return 1;
    if (replay_mode() != REPLAY_MODE_RECORD)
        fprintf(stderr, "clock-bench: REPLAY_MODE is not record; measuring the macros with replay off\n");
    double b = best(bare, n);
    double c = best(recorded_clock, n);
    double v = best(recorded_value, n);
    double s = best(recorded_clock, 20 * n);
    printf("bare_clock_gettime %.1f %.2f\n", b, 1.0);
    printf("record_clock_gettime %.1f %.2f\n", c, c / b);
    printf("record_value %.1f %.2f\n", v, v / b);
    printf("record_clock_gettime_sustained %.1f %.2f\n", s, s / b);
    fflush(stdout);
    return replay_shutdown() == 0 ? 0 : 1;
}
