/* THREADS threads (argv[1]) each record EVENTS (argv[2]) REPLAY_VALUE events: the values
 * 0, 1, 2, ... of a per-thread counter. Threads are named worker-<i>. */
#include "replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long events;

static void *worker(void *arg) {
    long id = (long)arg;
    char name[32];
    snprintf(name, sizeof name, "worker-%ld", id);
    replay_thread_name(name);
    long sum = 0;
    for (long i = 0; i < events; i++) sum += REPLAY_VALUE(i);
    return (void *)sum;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int threads = atoi(argv[1]);
    events = atol(argv[2]);
    if (threads < 1 || threads > 64 || events < 0) return 2;
    if (replay_init_from_env() != 0) return 3;
    pthread_t t[64];
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) return 4;
    long total = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    printf("sum %ld\n", total);
    return replay_shutdown() == 0 ? 0 : 5;
}
