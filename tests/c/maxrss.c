/* Runs a command and writes its peak RSS in KiB (ru_maxrss) to the file named first.
 * Usage: maxrss OUTFILE CMD [ARG...]; exits with CMD's status (128+N for signal N).
 * The tests measure a child through this small process rather than directly: a child that
 * a large test process spawns starts with the parent's high-water mark (vfork shares the
 * memory map, and exec keeps the old map's peak in ru_maxrss), which would hide its own. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: maxrss OUTFILE CMD [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) return 2;
    FILE *f = fopen(argv[1], "w");
    if (!f) return 2;
    fprintf(f, "%ld\n", ru.ru_maxrss);
    fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
