/** Sleeps `n` times `ms` milliseconds, printing clock-derived values. */
public class Sleeper {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        long ms = Long.parseLong(args[1]);
        long t0 = System.nanoTime();
        Thread other = new Thread(() -> {
            for (int i = 0; i < n; i++) {
                try { Thread.sleep(ms / 2, 1000); } catch (InterruptedException e) { return; }
                System.out.println("other " + i + " " + (System.nanoTime() - t0) / 1000);
            }
        }, "other");
        other.start();
        for (int i = 0; i < n; i++) {
            Thread.sleep(ms);
            System.out.println("main " + i + " " + (System.nanoTime() - t0) / 1000 + " " + System.currentTimeMillis());
        }
        other.join();
        Thread sleeper = new Thread(() -> {
            try { Thread.sleep(600_000); System.out.println("not interrupted"); }
            catch (InterruptedException e) { System.out.println("interrupted at " + (System.nanoTime() - t0) / 1000); }
        }, "long");
        sleeper.start();
        Thread.sleep(ms);
        sleeper.interrupt();
        sleeper.join();
    }
}
