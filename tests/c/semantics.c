/* Macro semantics: REPLAY_VALUE does not evaluate its expression in replay, a macro used
 * inside another macro's call is not an event, errno comes back from the recording, and
 * every scalar type survives the round trip.
 * Usage: semantics MISSING_PATH   (a path that does not exist at record time) */
#include "replay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int evaluations;

/* Has a side effect, and uses a macro itself: when called from inside REPLAY_VALUE that
 * inner use runs live and is not an event. */
static long bump(void) {
    evaluations++;
    struct timespec ts;
    REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts);
    return (long)(ts.tv_nsec % 1000) + evaluations * 1000L;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    if (replay_init_from_env() != 0) return 3;

    long sum = 0;
    for (int i = 0; i < 5; i++) sum += REPLAY_VALUE(bump());
    printf("values sum %ld\n", sum);

    int fd = REPLAY_CALL(open, argv[1], O_RDONLY);
    int err = errno;
    printf("open %d errno %s\n", fd, strerror(err));

    struct timespec seed;
    clock_gettime(CLOCK_REALTIME, &seed);
    long n = seed.tv_nsec;
    uint8_t u8 = REPLAY_VALUE((uint8_t)(n & 0xff));
    int16_t i16 = REPLAY_VALUE((int16_t)(-(n & 0x7fff)));
    uint64_t u64 = REPLAY_VALUE((uint64_t)n * 0x9e3779b97f4a7c15ull);
    int64_t i64 = REPLAY_VALUE(-(int64_t)n * 1000003);
    float f = REPLAY_VALUE((float)n / 7.0f);
    double d = REPLAY_VALUE((double)n / 3.0);
    _Bool b = REPLAY_VALUE((_Bool)(n & 1));
    enum color { RED = -1, GREEN = 1 } c = REPLAY_VALUE((enum color)((n & 2) ? RED : GREEN));
    printf("u8 %u i16 %d u64 %llu i64 %lld f %.9g d %.17g b %d c %d\n", u8, i16, (unsigned long long)u64,
           (long long)i64, f, d, b, (int)c);

    /* To stderr, since it differs between record and replay by design. */
    fprintf(stderr, "evaluations %d mode %d\n", evaluations, replay_mode());
    return replay_shutdown() == 0 ? 0 : 6;
}
