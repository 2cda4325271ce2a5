/**
 * `Stopper N`: a background thread loops on timed waits of a monitor (`sync.wait(50)`) until
 * main clears its flag and notifies it, after main notified another monitor and computed for
 * a while (N million steps, longer than one wait). It prints how many rounds it ran. In
 * replay the background thread's last wait was woken by the notify in the recording: it
 * must wait for that monitor's notify, not return on the unrelated one or at its own
 * timeout while main still computes (H2's background writer did, and ran a round too many).
 */
public class Stopper {
    static final Object sync = new Object();
    static final Object other = new Object();
    static volatile boolean running = true;
    static volatile long sink;

    public static void main(String[] a) throws Exception {
        long n = Long.parseLong(a[0]) * 1_000_000L;
        Thread t = new Thread(() -> {
            int loops = 0;
            while (running) {
                synchronized (sync) {
                    try {
                        sync.wait(50);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (!running) {
                    break;
                }
                loops++;
            }
            System.out.println("rounds " + loops);
        }, "bg");
        t.start();
        Thread.sleep(120);
        synchronized (other) {
            other.notifyAll();
        }
        long x = 0;
        for (long i = 0; i < n; i++) {
            x += i ^ (x >>> 3);
        }
        sink = x;
        running = false;
        synchronized (sync) {
            sync.notifyAll();
        }
        t.join();
        System.out.println("done");
    }
}
