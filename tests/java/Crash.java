/**
 * For the crash tests (tests/tests/jvm_crash.rs): the main thread reads the clock, starts a
 * worker and waits for it in join() (its clock events are then buffered by a thread that will
 * not run again); the worker prints "i millis" every few milliseconds until killed. A second
 * worker reads the clock without printing anything, so its events reach the log only by the
 * agent's flusher. args[0] = "exit": the worker stops after args[1] lines and main returns
 * (the program's normal end).
 */
public class Crash {
    static volatile boolean done;

    public static void main(String[] args) throws Exception {
        long start = System.currentTimeMillis();
        int lines = args.length > 1 && args[0].equals("exit") ? Integer.parseInt(args[1]) : -1;
        Thread quiet = new Thread(() -> {
            long s = 0;
            while (!done) {
                s += System.nanoTime();
                pause(1);
            }
            if (s == 42) System.out.println();
        }, "quiet");
        quiet.setDaemon(true);
        quiet.start();
        Thread w = new Thread(() -> {
            for (long i = 0; lines < 0 || i < lines; i++) {
                long now = System.currentTimeMillis();
                System.out.println(i + " " + now + " " + (now - start));
                pause(2 + (int) (i % 5));
            }
        }, "worker");
        w.start();
        w.join();
        done = true;
        quiet.join();
        System.out.println("end " + (System.currentTimeMillis() - start));
    }

    static void pause(int ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }
}
