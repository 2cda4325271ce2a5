// Flaky: the C demo's job in Java. A pretend service answers after a random latency
// (java.util.Random), each attempt has a jittered timeout, and System.nanoTime measures it.
// All three attempts time out in about one run out of three: the job then exits with status 1.
// Nothing here knows about replay: the agent records the clock reads, the Random seed and
// what is printed.
//
//   replay hunt -- java demo/Flaky.java     # records until a run fails, keeps that recording
//   replay replay -- java demo/Flaky.java   # the same failure, every time
import java.util.Random;

public class Flaky {
    static final int ATTEMPTS = 3;
    static final Random RNG = new Random();

    static double nowMs() {
        return System.nanoTime() / 1e6;
    }

    static boolean callService(int attempt, double timeoutMs) throws InterruptedException {
        int latencyMs = 5 + RNG.nextInt(105);
        double start = nowMs();
        Thread.sleep((long) Math.min(latencyMs, timeoutMs));
        double elapsed = nowMs() - start;
        if (elapsed >= timeoutMs) {
            System.out.printf("  attempt %d: no answer within %.0f ms, giving up on it%n", attempt, timeoutMs);
            return false;
        }
        System.out.printf("  attempt %d: answer after %.1f ms (timeout %.0f ms)%n", attempt, elapsed, timeoutMs);
        return true;
    }

    public static void main(String[] args) throws InterruptedException {
        double t0 = nowMs();
        System.out.printf("flaky: fetching the report (%d attempts)%n", ATTEMPTS);
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            double timeout = 30 + RNG.nextInt(20);
            if (callService(attempt, timeout)) {
                System.out.printf("flaky: OK after %d attempt(s), %.0f ms in all%n", attempt, nowMs() - t0);
                return;
            }
            if (attempt < ATTEMPTS) {
                int backoff = 1 + RNG.nextInt(5);
                System.out.printf("  backing off %d ms%n", backoff);
                Thread.sleep(backoff);
            }
        }
        System.out.printf("flaky: FAILED: all %d attempts timed out (%.0f ms in all)%n", ATTEMPTS, nowMs() - t0);
        System.exit(1);
    }
}
