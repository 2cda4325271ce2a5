/* Forks a child that uses a macro and returns from main (so exit handlers run in it too):
 * the child runs live and leaves the parent's session alone. */
#include "replay.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    if (replay_init_from_env() != 0) return 3;
    long before = REPLAY_VALUE((long)getpid());
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 4;
    if (pid == 0) {
        long live = REPLAY_VALUE((long)getpid());
        return live == (long)getpid() && replay_mode() == 0 ? 0 : 1;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 5;
    long after = REPLAY_VALUE((long)getpid());
    printf("child %s, parent values %ld %ld\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ran live" : "FAILED",
           before, after);
    return replay_shutdown() == 0 ? 0 : 6;
}
