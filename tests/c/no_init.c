/* Uses the macros but never calls replay_init_from_env: with REPLAY_MODE set, the first use
 * says so once, and the program runs live to its end. */
#include "replay.h"

#include <stdio.h>

int main(void) {
    long sum = 0;
    for (long i = 1; i <= 3; i++) sum += REPLAY_VALUE(i * 10);
    printf("sum %ld mode %d\n", sum, replay_mode());
    return 0;
}
