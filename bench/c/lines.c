/* Prints N lines (default 100000) with printf; with a second argument, line-buffered (one
 * write per line, the worst case for output capture). Used by bench/launcher-output.sh. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (argc > 2) setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line */
    for (long i = 0; i < n; i++) printf("line %ld of %ld %s\n", i, n, i % 7 ? "other" : "seven");
    return 0;
}
