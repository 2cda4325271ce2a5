import java.util.UUID;

/**
 * Four threads make UUIDs at once, the first of them racing to initialize UUID's
 * SecureRandom (the JDK's security properties, NativePRNG's devices) and then to its lock.
 * Each thread's UUIDs are printed by main, in thread order.
 */
public class UuidThreads {
    public static void main(String[] args) throws Exception {
        int n = 4;
        String[] made = new String[n];
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int k = i;
            ts[i] = new Thread(() -> {
                StringBuilder sb = new StringBuilder();
                for (int j = 0; j < 20; j++) {
                    sb.append(UUID.randomUUID().toString(), 0, 8).append(' ');
                }
                made[k] = sb.toString();
            });
        }
        for (Thread t : ts) {
            t.start();
        }
        for (Thread t : ts) {
            t.join();
        }
        for (int i = 0; i < n; i++) {
            System.out.println(i + ": " + made[i]);
        }
    }
}
