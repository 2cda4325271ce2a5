/** Named threads reading the clock concurrently: each prints what its own values add up to. */
public class Threads {
    public static void main(String[] args) throws Exception {
        int n = 4;
        long[] sums = new long[n];
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int k = i;
            ts[i] = new Thread(() -> {
                long s = 0;
                for (int j = 0; j < 20000; j++) {
                    s += System.nanoTime() * (j + k);
                }
                sums[k] = s;
            }, "worker-" + i);
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        for (int i = 0; i < n; i++) System.out.println("worker " + i + " " + sums[i]);
        System.out.println("millis " + System.currentTimeMillis());
    }
}
