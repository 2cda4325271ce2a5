/**
 * For the crash tests (tests/tests/jvm_crash.rs). The main thread reads crash-input.txt (a
 * file event), prints it, starts two threads and waits for them in join(): its clock events
 * are then held by a thread that will not run again. "worker" prints "i millis elapsed" every
 * few milliseconds until the process is killed (or, with args "exit N", for N lines); "quiet"
 * reads the clock every millisecond and prints nothing (2N times with "exit N"), so its events
 * reach the log only by the agent's flusher (or its shutdown).
 */
public class Crash {
    public static void main(String[] args) throws Exception {
        long start = System.currentTimeMillis();
        int lines = args.length > 1 && args[0].equals("exit") ? Integer.parseInt(args[1]) : -1;
        try (java.io.FileInputStream in = new java.io.FileInputStream("crash-input.txt")) {
            System.out.println("input " + new String(in.readAllBytes()).trim());
        }
        Thread quiet = new Thread(() -> {
            long s = 0;
            for (long k = 0; lines < 0 || k < 2 * lines; k++) {
                s += System.nanoTime();
                pause(1);
            }
            if (s == 42) System.out.println();
        }, "quiet");
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
