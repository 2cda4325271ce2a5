/**
 * Prints what the JVM says of the machine: heap sizes and the processor count (pdftk's
 * document IDs hash freeMemory(); the processor count decides how parallel work is split).
 */
public class Machine {
    public static void main(String[] args) {
        Runtime r = Runtime.getRuntime();
        byte[][] junk = new byte[40][];
        for (int i = 0; i < junk.length; i++) {
            junk[i] = new byte[100_000];
        }
        System.out.println("max " + r.maxMemory() + " cpus " + r.availableProcessors());
        System.out.println("free " + r.freeMemory() + " total " + r.totalMemory() + " " + junk.length);
    }
}
