/* lockwait: main locks m, makes a call, starts a worker that locks m too, and makes another
 * call once it released m. Argument "late": main keeps m across that last call (a program
 * changed after recording). Replayed, the worker's acquisition is due before main's last
 * call, which main makes holding m: the recorded order cannot be followed, which replay must
 * report (naming the lock and main) rather than deadlock.
 */
#include "replay.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int shared;

static long work(long x) { return x * 3; }

static void *worker(void *arg) {
    (void)arg;
    REPLAY_MUTEX_LOCK(&m);
    shared += (int)REPLAY_VALUE(work(3));
    REPLAY_MUTEX_UNLOCK(&m);
    return NULL;
}

int main(int argc, char **argv) {
    int late = argc > 1 && strcmp(argv[1], "late") == 0;
    if (replay_init_from_env() != 0) return 2;
    replay_lock_name(&m, "m");
    pthread_t t;
    REPLAY_MUTEX_LOCK(&m);
    shared = (int)REPLAY_VALUE(work(1));
    REPLAY_THREAD_CREATE(&t, NULL, worker, NULL);
    long last;
    if (late) {
        /* replayed, main waits here for the turn of this call, holding m */
        last = REPLAY_VALUE(work(2));
        REPLAY_MUTEX_UNLOCK(&m);
        pthread_join(t, NULL);
    } else {
        REPLAY_MUTEX_UNLOCK(&m);
        pthread_join(t, NULL);
        last = REPLAY_VALUE(work(2));
    }
    printf("shared %d, last %ld\n", shared, last);
    return 0;
}
