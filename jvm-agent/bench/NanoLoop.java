/**
 * JIT-hot clock loop for the agent benchmark. Prints "nanoTime <ns/call>" and
 * "currentTimeMillis <ns/call>": the median of ROUNDS timed rounds after 3 warm-up rounds
 * (C2 has compiled the loops by then).
 *
 * Run bare, under record and under replay in the same session and compare ratios:
 *   java -Dbench.clock=cpu -cp . NanoLoop [calls-per-round]
 *   java -agentpath:libreplay.so=record,log=b.replay -Dbench.clock=cpu -cp . NanoLoop [calls]
 *   java -agentpath:libreplay.so=replay,log=b.replay -Dbench.clock=cpu -cp . NanoLoop [calls]
 * -Dbench.clock=cpu times rounds with the thread's CPU clock (ThreadMXBean), which the agent
 * does not hook: under replay, System.nanoTime would return the recorded times. The default
 * (System.nanoTime) is only right for bare and record runs.
 */
public class NanoLoop {
    static final int ROUNDS = 7;

    public static void main(String[] args) {
        int calls = args.length > 0 ? Integer.parseInt(args[0]) : 5_000_000;
        boolean cpu = "cpu".equals(System.getProperty("bench.clock"));
        java.lang.management.ThreadMXBean mx = cpu ? java.lang.management.ManagementFactory.getThreadMXBean() : null;
        long sink = 0;
        for (String which : new String[] {"nanoTime", "currentTimeMillis"}) {
            boolean nano = which.equals("nanoTime");
            for (int w = 0; w < 3; w++) sink += nano ? loopNano(calls) : loopMillis(calls);
            double[] ns = new double[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                long t0 = cpu ? mx.getCurrentThreadCpuTime() : System.nanoTime();
                sink += nano ? loopNano(calls) : loopMillis(calls);
                long t1 = cpu ? mx.getCurrentThreadCpuTime() : System.nanoTime();
                ns[r] = (double) (t1 - t0) / calls;
            }
            java.util.Arrays.sort(ns);
            System.out.printf("%s %.1f%n", which, ns[ROUNDS / 2]);
        }
        if (sink == 42) System.out.println();
    }

    static long loopNano(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += System.nanoTime();
        return s;
    }

    static long loopMillis(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += System.currentTimeMillis();
        return s;
    }
}
