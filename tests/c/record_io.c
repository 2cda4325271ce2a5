/* Reads a file, the clock and random bytes through the macros and prints all of it: under
 * replay the output must be byte-identical even after the file is changed or deleted.
 * Usage: record_io FILE */
#include "replay.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    if (replay_init_from_env() != 0) return 3;

    struct timespec ts;
    int rc = REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_REALTIME, &ts);
    printf("clock rc=%d %lld.%09ld\n", rc, (long long)ts.tv_sec, ts.tv_nsec);

    /* open() is recorded too, so a deleted file opens "successfully" in replay. */
    int fd = REPLAY_CALL(open, argv[1], O_RDONLY);
    if (fd < 0) {
        perror("open");
        return 4;
    }
    char buf[7]; /* small, so that the file takes several reads */
    unsigned long total = 0, sum = 0;
    for (;;) {
        ssize_t n = REPLAY_READ(buf, read, fd, buf, sizeof buf);
        if (n < 0) {
            perror("read");
            return 5;
        }
        if (n == 0) break;
        fwrite(buf, 1, (size_t)n, stdout);
        for (ssize_t i = 0; i < n; i++) sum = sum * 31 + (unsigned char)buf[i];
        total += (unsigned long)n;
    }
    REPLAY_CALL(close, fd);
    printf("\nread %lu bytes, hash %lu\n", total, sum);

    unsigned char rnd[16];
    ssize_t got = REPLAY_READ(rnd, getrandom, rnd, sizeof rnd, 0);
    printf("getrandom %zd:", got);
    for (ssize_t i = 0; i < got; i++) printf(" %02x", rnd[i]);
    printf("\n");

    srand((unsigned)ts.tv_nsec);
    int r = REPLAY_VALUE(rand());
    double d = REPLAY_VALUE((double)rand() / RAND_MAX);
    _Bool b = REPLAY_VALUE((_Bool)(rand() & 1));
    signed char c = REPLAY_VALUE((signed char)(rand() % 256 - 128));
    printf("rand %d %.17g %d %d\n", r, d, b, c);

    struct timespec end;
    REPLAY_CALL_OUT(&end, clock_gettime, CLOCK_MONOTONIC, &end);
    printf("monotonic %lld.%09ld\n", (long long)end.tv_sec, end.tv_nsec);
    fprintf(stderr, "mode %d\n", replay_mode());
    return replay_shutdown() == 0 ? 0 : 6;
}
