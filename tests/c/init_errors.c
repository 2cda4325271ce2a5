/* Prints what init returned, then keeps working with three REPLAY_VALUE uses: whatever went
 * wrong with replay, the program runs on and exits 0. */
#include "replay.h"

#include <stdio.h>

int main(void) {
    int rc = replay_init_from_env();
    printf("init %s\n", rc == 0 ? "ok" : "failed");
    long sum = 0;
    for (long i = 1; i <= 3; i++) sum += REPLAY_VALUE(i * 10);
    printf("sum %ld mode %d\n", sum, replay_mode());
    replay_shutdown();
    return 0;
}
