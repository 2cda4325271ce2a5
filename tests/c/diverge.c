/* Behaves differently when DIVERGE is set: makes a clock call where the recording has a
 * value. With FEWER set it stops early and returns from main without replay_shutdown (the
 * exit handler then finds recorded events left over). VALUE_T (a -D define) picks the type of
 * the last value, so that two builds of this file can disagree about it. */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifndef VALUE_T
#define VALUE_T int
#endif

int main(void) {
    int rc = replay_init_from_env();
    if (rc != 0) return 3;
    long pid = REPLAY_VALUE((long)getpid());
    printf("pid %ld\n", pid);
    if (getenv("DIVERGE")) {
        struct timespec ts;
        REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_REALTIME, &ts);
        printf("clock read\n");
    }
    if (getenv("FEWER")) {
        printf("stopping early\n");
        return 0;
    }
    srand((unsigned)pid);
    int r = REPLAY_VALUE(rand());
    printf("rand %d\n", r);
    VALUE_T v = REPLAY_VALUE((VALUE_T)(r % 100));
    printf("value %g\n", (double)v);
    fflush(stdout);
    printf("shutdown %d\n", replay_shutdown());
    return 0;
}
