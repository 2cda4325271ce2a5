import java.util.*;
import java.util.concurrent.*;

/**
 * Threads taking seeds from the JDK's shared seeders at the same moment (args: random, tlr or
 * split, and the number of threads): each prints 100 values of its own generators.
 */
public class Seeds {
    public static void main(String[] args) throws Exception {
        String what = args[0];
        int n = Integer.parseInt(args[1]);
        String[] out = new String[n];
        CountDownLatch go = new CountDownLatch(1);
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int k = i;
            ts[i] = new Thread(() -> {
                try { go.await(); } catch (InterruptedException e) { return; }
                StringBuilder sb = new StringBuilder();
                for (int j = 0; j < 100; j++) {
                    long v;
                    if (what.equals("random")) v = new Random().nextLong();
                    else if (what.equals("tlr")) v = ThreadLocalRandom.current().nextLong();
                    else v = new SplittableRandom().nextLong();
                    sb.append(' ').append(Long.toHexString(v & 0xffff));
                }
                out[k] = sb.toString();
            }, "seed-" + i);
            ts[i].start();
        }
        go.countDown();
        for (Thread t : ts) t.join();
        for (int i = 0; i < n; i++) System.out.println(i + ":" + out[i]);
    }
}
