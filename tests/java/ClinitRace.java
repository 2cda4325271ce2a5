import java.util.concurrent.CountDownLatch;

/**
 * Threads racing to a class whose static initializer reads the clock: the initializer's
 * events belong to whichever thread got there first in the recording.
 */
public class ClinitRace {
    static class Config {
        static final long STAMP = System.currentTimeMillis();
    }

    public static void main(String[] args) throws Exception {
        int n = 4;
        CountDownLatch go = new CountDownLatch(1);
        long[] seen = new long[n];
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int k = i;
            ts[i] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                long t = System.nanoTime();
                seen[k] = Config.STAMP + t % 7 + System.nanoTime() % 5;
            }, "racer-" + i);
            ts[i].start();
        }
        go.countDown();
        for (Thread t : ts) t.join();
        for (int i = 0; i < n; i++) System.out.println(i + " " + seen[i]);
    }
}
