/* THREADS named threads each take EVENTS values through REPLAY_VALUE and print them. The
 * live value is i, or 1000000 + i when LIVE_MARK is set: replayed with LIVE_MARK set, any
 * printed value of 1000000 or more is a call that ran live. */
#include "replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define EVENTS 300

static long mark;

static long live_value(long i) { return mark + i; }

static void *worker(void *arg) {
    long id = (long)arg;
    char name[32];
    snprintf(name, sizeof name, "worker-%ld", id);
    replay_thread_name(name);
    for (long i = 0; i < EVENTS; i++) {
        long v = REPLAY_VALUE(live_value(i));
        printf("t%ld %ld\n", id, v);
    }
    return NULL;
}

int main(void) {
    mark = getenv("LIVE_MARK") ? 1000000 : 0;
    if (replay_init_from_env() != 0) return 3;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) return 4;
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    return replay_shutdown() == 0 ? 0 : 5;
}
