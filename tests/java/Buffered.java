import java.io.FileInputStream;

/**
 * Replay buffering (runs of same-kind clock events served Java-side). Modes:
 * (none) the recorded program; "changed": at call 3000 of the nanoTime loop it reads
 * currentTimeMillis instead; "file": there it opens a file instead; "pingpong": two threads
 * taking turns (runs of 3 events); "worker" / "worker-short": a worker thread makes 100 or 50
 * calls.
 */
public class Buffered {
    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "";
        if (mode.equals("pingpong")) {
            pingPong();
            return;
        }
        if (mode.startsWith("worker")) {
            int n = mode.equals("worker") ? 100 : 50;
            long[] sum = new long[1];
            Thread t = new Thread(() -> {
                for (int i = 0; i < n; i++) sum[0] += System.nanoTime();
            }, "worker");
            t.start();
            t.join();
            System.out.println("worker " + sum[0]);
            return;
        }
        long s = 0;
        for (int i = 0; i < 5000; i++) {
            if (i == 3000 && !mode.isEmpty()) {
                System.out.println("at " + i);
                s += other(mode);
            } else {
                s += System.nanoTime();
            }
        }
        System.out.println("after nanos " + s);
        long m = 0;
        for (int i = 0; i < 3000; i++) m += System.currentTimeMillis();
        System.out.println("millis " + m + " nano " + System.nanoTime());
    }

    static long other(String mode) throws Exception {
        if (mode.equals("file")) {
            try (FileInputStream in = new FileInputStream("/proc/self/stat")) {
                return in.read();
            }
        }
        return System.currentTimeMillis();
    }

    static final Object LOCK = new Object();
    static int turn;

    static void pingPong() throws Exception {
        StringBuilder[] seen = {new StringBuilder(), new StringBuilder()};
        Thread[] ts = new Thread[2];
        for (int k = 0; k < 2; k++) {
            final int me = k;
            ts[k] = new Thread(() -> {
                for (int r = 0; r < 200; r++) {
                    synchronized (LOCK) {
                        while (turn != me) {
                            try {
                                LOCK.wait();
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                        long a = System.nanoTime(), b = System.nanoTime(), c = System.nanoTime();
                        seen[me].append(a % 1000).append(',').append(b - a).append(',').append(c - b).append(';');
                        turn = 1 - me;
                        LOCK.notifyAll();
                    }
                }
            }, "pp-" + k);
            ts[k].start();
        }
        for (Thread t : ts) t.join();
        System.out.println("pp-0 " + seen[0]);
        System.out.println("pp-1 " + seen[1]);
    }
}
