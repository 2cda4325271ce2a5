import java.nio.file.Files;
import java.nio.file.Path;

/**
 * `Ticker FILE MS`: a thread counts its timed waits on a monitor (`lock.wait`) while main
 * sleeps MS, then main stops it with notifyAll; a second thread counts `this.wait` timeouts
 * until main interrupts it. The counts go to FILE only (no clock value is printed), and a
 * timed wait interrupted in the recording is interrupted in replay too.
 */
public class Ticker {
    static final Object lock = new Object();
    static boolean stop;
    static int ticks;

    static class Counter extends Thread {
        int n;

        Counter() {
            super("counter");
        }

        @Override
        public void run() {
            synchronized (this) {
                try {
                    while (true) {
                        n++;
                        this.wait(15);
                    }
                } catch (InterruptedException e) {
                    // Stopped by main.
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        long ms = Long.parseLong(args[1]);
        Thread ticker = new Thread(() -> {
            synchronized (lock) {
                while (!stop) {
                    ticks++;
                    try {
                        lock.wait(10);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }, "ticker");
        Counter counter = new Counter();
        ticker.start();
        counter.start();
        Thread.sleep(ms);
        synchronized (lock) {
            stop = true;
            lock.notifyAll();
        }
        ticker.join();
        Thread.sleep(ms / 2);
        counter.interrupt();
        counter.join();
        Files.writeString(Path.of(args[0]), "ticks=" + ticks + " counted=" + counter.n + "\n");
        System.out.println("done");
    }
}
