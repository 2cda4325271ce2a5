/* THREADS threads (argv[1]) x STEPS steps (argv[2]) append their id to one shared array under
 * a mutex. The mutex goes through REPLAY_CALL, and each step records its position with
 * REPLAY_VALUE before unlocking: in strict replay the recorded order of those events decides
 * who appends when, so the printed interleaving is the recorded one. (In replay the mutex
 * calls do not run: the replay order provides the exclusion, from a thread's lock event to
 * its value event.) */
#include "replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *order;
static long len, steps, mismatches;

static void *worker(void *arg) {
    long id = (long)arg;
    char name[32];
    snprintf(name, sizeof name, "worker-%ld", id);
    replay_thread_name(name);
    for (long i = 0; i < steps; i++) {
        if (REPLAY_CALL(pthread_mutex_lock, &lock) != 0) abort();
        order[len] = (char)('a' + id);
        long mine = ++len;
        /* Recorded while the lock is held: the next thread's lock event comes after it. In
         * replay, returning from here ends this thread's turn (the next lock event may be
         * consumed at once), so only locals are used after it. */
        long pos = REPLAY_VALUE(len);
        if (pos != mine) __atomic_fetch_add(&mismatches, 1, __ATOMIC_RELAXED);
        if (REPLAY_CALL(pthread_mutex_unlock, &lock) != 0) abort();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int threads = atoi(argv[1]);
    steps = atol(argv[2]);
    if (threads < 1 || threads > 26 || steps < 1) return 2;
    if (replay_init_from_env() != 0) return 3;
    order = calloc((size_t)(threads * steps + 1), 1);
    if (!order) return 4;
    pthread_t t[26];
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) return 4;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    long switches = 0;
    for (long i = 1; i < len; i++) switches += order[i] != order[i - 1];
    printf("appended %ld, thread switches %ld, position mismatches %ld\n", len, switches, mismatches);
    for (long i = 0; i < len; i += 100) printf("%.100s\n", order + i);
    return replay_shutdown() == 0 ? 0 : 5;
}
