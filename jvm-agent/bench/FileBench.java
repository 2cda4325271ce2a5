import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;

/**
 * Per-call cost of the file hooks, for jvm-agent/bench/files.sh. In directory args[0] (which
 * holds small files f0..f15 and a directory d of 10 entries) it times OPS operations of each
 * kind, ROUNDS times after WARM warm-up rounds, and prints "<name> <ns/op>": the median round
 * in the calling thread's CPU time (user + system, so the syscalls the bare run makes and the
 * replay skips count). The agent does not hook ThreadMXBean; System.nanoTime would return the
 * recorded times in replay. Every mode does exactly the same calls, so replay consumes the
 * recording made by the record run.
 *
 *   java -cp . FileBench DIR [ops]                                        bare
 *   java -agentpath:libreplay.so=record,log=f.replay -cp . FileBench DIR   record
 *   java -agentpath:libreplay.so=replay,log=f.replay -cp . FileBench DIR   replay
 */
public class FileBench {
    static final int WARM = 3;
    static final int ROUNDS = 7;
    static final int FILES = 16;

    interface Op {
        long run(int i) throws IOException;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int ops = args.length > 1 ? Integer.parseInt(args[1]) : 5000;
        File[] files = new File[FILES];
        Path[] paths = new Path[FILES];
        for (int i = 0; i < FILES; i++) {
            files[i] = new File(dir.toFile(), "f" + i);
            paths[i] = dir.resolve("f" + i);
        }
        Path sub = dir.resolve("d");
        byte[] buf = new byte[256];
        // FileInputStream: open, read a small file (one read of its bytes, one at EOF), close.
        time("FileInputStream(open+read+close)", ops, i -> {
            try (FileInputStream in = new FileInputStream(files[i % FILES])) {
                return in.read(buf) + in.read(buf);
            }
        });
        // The read alone, on one open stream of a 100-byte file: back to the start through its
        // channel (one more event) when a read comes up short.
        try (FileInputStream in = new FileInputStream(files[0])) {
            time("FileInputStream.read(byte[16])", ops, i -> {
                int n = in.read(buf, 0, 16);
                if (n < 16) in.getChannel().position(0);
                return n;
            });
        }
        time("File.exists", ops, i -> files[i % FILES].exists() ? 1 : 0);
        time("File.length", ops, i -> files[i % FILES].length());
        time("Files.readAllBytes", ops, i -> Files.readAllBytes(paths[i % FILES]).length);
        time("Files.exists", ops, i -> Files.exists(paths[i % FILES]) ? 1 : 0);
        time("Files.size", ops, i -> Files.size(paths[i % FILES]));
        time("Files.list(10-entries)", ops / 10, i -> {
            try (Stream<Path> s = Files.list(sub)) {
                return s.count();
            }
        });
    }

    static void time(String name, int ops, Op op) throws IOException {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sink = 0;
        double[] ns = new double[ROUNDS];
        for (int r = 0; r < WARM + ROUNDS; r++) {
            long t0 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < ops; i++) sink += op.run(i);
            long t1 = mx.getCurrentThreadCpuTime();
            if (r >= WARM) ns[r - WARM] = (double) (t1 - t0) / ops;
        }
        Arrays.sort(ns);
        System.out.printf("%s %.0f%n", name, ns[ROUNDS / 2]);
        if (sink == 42) System.out.println();
    }
}
