/* flaky: a job that sometimes fails, depending on timing and randomness.
 *
 * It calls a pretend service whose latency is random (getrandom), with a per-attempt
 * timeout that has random jitter, and measures each attempt with clock_gettime. Three
 * attempts time out in about one run out of three: the job then fails with exit status 1.
 * Every clock read and random draw goes through the replay macros, so a failing run that
 * was recorded fails again, identically, each time it is replayed.
 *
 *   cc demo/flaky.c -Ic-header/include target/release/libreplay_c.a -lpthread -ldl -lm -o flaky
 *   REPLAY_MODE=record REPLAY_LOG=flaky.replay ./flaky    # until it fails
 *   REPLAY_MODE=replay REPLAY_LOG=flaky.replay ./flaky    # the same failure, every time
 */
#include "replay.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ATTEMPTS 3

static double now_ms(void) {
    struct timespec ts;
    if (REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts) != 0) return 0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A random number in [0, n). */
static unsigned draw(unsigned n) {
    uint32_t r = 0;
    if (REPLAY_READ(&r, getrandom, &r, sizeof r, 0) != (ssize_t)sizeof r) return 0;
    return r % n;
}

/* The pretend service: answers after its latency, or is given up on at the timeout. */
static int call_service(int attempt, double timeout_ms) {
    unsigned latency_ms = 5 + draw(105);
    double start = now_ms();
    double wait = latency_ms < timeout_ms ? latency_ms : timeout_ms;
    usleep((useconds_t)(wait * 1000));
    double elapsed = now_ms() - start;
    if (elapsed >= timeout_ms) {
        printf("  attempt %d: no answer within %.0f ms, giving up on it\n", attempt, timeout_ms);
        return -1;
    }
    printf("  attempt %d: answer after %.1f ms (timeout %.0f ms)\n", attempt, elapsed, timeout_ms);
    return 0;
}

int main(void) {
    if (replay_init_from_env() != 0) fprintf(stderr, "flaky: running without replay\n");
    double t0 = now_ms();
    printf("flaky: fetching the report (%d attempts)\n", ATTEMPTS);
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
        double timeout = 30 + draw(20); /* jittered deadline */
        if (call_service(attempt, timeout) == 0) {
            printf("flaky: OK after %d attempt(s), %.0f ms in all\n", attempt, now_ms() - t0);
            replay_shutdown();
            return 0;
        }
        if (attempt < ATTEMPTS) {
            unsigned backoff = 1 + draw(5);
            printf("  backing off %u ms\n", backoff);
            usleep(backoff * 1000);
        }
    }
    printf("flaky: FAILED: all %d attempts timed out (%.0f ms in all)\n", ATTEMPTS, now_ms() - t0);
    replay_shutdown();
    return 1;
}
