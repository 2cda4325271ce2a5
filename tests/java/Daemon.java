import java.util.concurrent.CountDownLatch;

/** A daemon thread reads the clock, then blocks for good; main exits while it is blocked. */
public class Daemon {
    public static void main(String[] args) throws Exception {
        CountDownLatch ready = new CountDownLatch(1);
        long[] sum = new long[1];
        Thread d = new Thread(() -> {
            long s = 0;
            for (int i = 0; i < 10; i++) s += System.nanoTime();
            sum[0] = s;
            ready.countDown();
            try {
                new CountDownLatch(1).await();
            } catch (InterruptedException e) {
                // exit
            }
        }, "sleeper");
        d.setDaemon(true);
        d.start();
        ready.await();
        System.out.println("daemon sum " + sum[0] + " main " + System.nanoTime());
    }
}
