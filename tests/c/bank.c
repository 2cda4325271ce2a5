/* bank (also the race of demo/run.sh): two tellers withdraw from one account. Each
 * withdrawal is two locked steps, a check ("is there enough?") and the withdrawal itself,
 * with the lock released in between: an atomicity violation. When both tellers pass the check on the same balance before either
 * withdraws, the account is overdrawn and the program fails (exit 1). That takes the other
 * teller to run exactly inside the window between the two steps: a few runs in a hundred
 * without chaos, far more with it.
 *
 * Argument "reversed": the withdrawal step takes the audit lock before the account lock
 * (the recorded program takes the account lock first): a program changed after recording.
 */
#include "replay.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STEP 30

static pthread_mutex_t account = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t audit = PTHREAD_MUTEX_INITIALIZER;
static int balance = 100;
static int withdrawn[2];
static int audited;
static int reversed;

static void *teller(void *arg) {
    int id = (int)(long)arg;
    for (;;) {
        REPLAY_MUTEX_LOCK(&account);
        int enough = balance >= STEP; /* step 1: check */
        REPLAY_MUTEX_UNLOCK(&account);
        if (!enough) break;
        /* the window: approving takes a moment (a clock read for the slip) */
        struct timespec ts;
        REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts);
        pthread_mutex_t *first = reversed ? &audit : &account;
        pthread_mutex_t *second = reversed ? &account : &audit;
        REPLAY_MUTEX_LOCK(first);
        REPLAY_MUTEX_LOCK(second);
        balance -= STEP; /* step 2: withdraw, on a check that may be stale */
        withdrawn[id] += STEP;
        audited++;
        REPLAY_MUTEX_UNLOCK(&audit);
        REPLAY_MUTEX_UNLOCK(&account);
    }
    return NULL;
}

int main(int argc, char **argv) {
    reversed = argc > 1 && strcmp(argv[1], "reversed") == 0;
    if (replay_init_from_env() != 0) fprintf(stderr, "bank: running without replay\n");
    replay_lock_name(&account, "account");
    replay_lock_name(&audit, "audit");
    pthread_t t[2];
    for (long i = 0; i < 2; i++) REPLAY_THREAD_CREATE(&t[i], NULL, teller, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("teller 0 withdrew %d, teller 1 withdrew %d, %d withdrawals\n", withdrawn[0],
           withdrawn[1], audited);
    if (balance < 0) {
        printf("FAILED: the account is overdrawn: balance %d\n", balance);
        return 1;
    }
    printf("OK: balance %d\n", balance);
    return 0;
}
