/* sleeper: sleeps N times one second (nanosleep, usleep, sleep in turn) on two threads that
 * hand a token back and forth under a mutex and a condition variable, and prints how long
 * each nap took by the (replayed) clock. Replay returns every sleep and wait at once: the
 * output is the same, the wall time a fraction.
 */
#include "replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn; /* whose nap: 0 main, 1 helper */
static int naps;

static double now(void) {
    struct timespec ts;
    REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(int who, int i) {
    double t0 = now();
    switch (i % 3) {
    case 0: {
        struct timespec req = {1, 0};
        REPLAY_NANOSLEEP(&req, NULL);
        break;
    }
    case 1:
        REPLAY_USLEEP(1000000);
        break;
    default:
        REPLAY_SLEEP(1);
    }
    printf("nap %d by %s: %.0f s\n", i, who ? "helper" : "main", now() - t0);
}

static void *helper(void *arg) {
    (void)arg;
    for (;;) {
        REPLAY_MUTEX_LOCK(&m);
        while (turn != 1 && naps >= 0) REPLAY_COND_WAIT(&c, &m);
        if (naps < 0) {
            REPLAY_MUTEX_UNLOCK(&m);
            return NULL;
        }
        nap(1, naps++);
        turn = 0;
        REPLAY_COND_SIGNAL(&c);
        REPLAY_MUTEX_UNLOCK(&m);
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    if (replay_init_from_env() != 0) fprintf(stderr, "sleeper: running without replay\n");
    double t0 = now();
    pthread_t t;
    REPLAY_THREAD_CREATE(&t, NULL, helper, NULL);
    REPLAY_MUTEX_LOCK(&m);
    while (naps < n) {
        if (turn == 0) {
            nap(0, naps++);
            turn = 1;
            REPLAY_COND_SIGNAL(&c);
        } else {
            /* a timed wait that times out now and then, by the replayed clock too */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 300000000;
            if (until.tv_nsec >= 1000000000) { until.tv_sec++; until.tv_nsec -= 1000000000; }
            int rc = REPLAY_COND_TIMEDWAIT(&c, &m, &until);
            if (rc == ETIMEDOUT) printf("main: still waiting\n");
        }
    }
    naps = -1;
    REPLAY_COND_BROADCAST(&c);
    REPLAY_MUTEX_UNLOCK(&m);
    pthread_join(t, NULL);
    printf("slept %d times, %.0f s in all\n", n, now() - t0);
    return 0;
}
