/* Records REPLAY_VALUE events in an endless loop. After about a second it flushes the log,
 * prints "flushed <events>" and "ready", and keeps recording until it is killed. */
#include "replay.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
    if (replay_init_from_env() != 0) return 3;
    double start = seconds();
    int announced = 0;
    for (long i = 0;; i++) {
        (void)REPLAY_VALUE(i);
        if (i % 10000 == 9999) {
            usleep(1000); /* keep the log small: about 10 M events/s at most */
            if (!announced && seconds() - start >= 1.0) {
                if (replay_flush() != 0) return 4;
                printf("flushed %ld\nready\n", i + 1);
                fflush(stdout);
                announced = 1;
            }
        }
    }
}
