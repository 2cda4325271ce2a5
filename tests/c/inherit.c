/* Starts itself again (fork + exec, the environment inherited with its REPLAY_* variables)
 * between two values: the child finds the log taken and runs live; the parent's log and
 * replay stay whole. */
#include "replay.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (replay_init_from_env() != 0) return 3;
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        long v = REPLAY_VALUE((long)getpid());
        printf("child: mode %d, %s\n", (int)replay_mode(), v == (long)getpid() ? "live" : "REPLAYED");
        return replay_shutdown() == 0 ? 0 : 7;
    }
    long before = REPLAY_VALUE((long)getpid());
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 4;
    if (pid == 0) {
        execl(argv[0], argv[0], "child", (char *)0);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 5;
    long after = REPLAY_VALUE((long)getpid());
    printf("parent: values %ld %ld, child exit %d\n", before, after, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return replay_shutdown() == 0 ? 0 : 6;
}
