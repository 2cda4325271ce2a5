import java.time.Instant;
import java.util.concurrent.*;
/** Pool threads whose first clock read is Instant.now (class initialization inside a pool thread). */
public class PoolClock {
    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        java.util.List<Future<String>> fs = new java.util.ArrayList<>();
        for (int i = 0; i < 8; i++) {
            final int k = i;
            fs.add(pool.submit(() -> k + " " + Thread.currentThread().getName() + " " + Instant.now().getNano() % 1000));
        }
        for (Future<String> f : fs) System.out.println(f.get());
        pool.shutdown();
    }
}
