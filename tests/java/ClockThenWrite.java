import java.io.RandomAccessFile;

/**
 * Reads the clock, opens a file for writing (no event: it is written for real), reads the
 * clock twice more and writes: replay fetches the three clock values as one run, and the open
 * between them must not count as a call made while fetched values were unused (ant's jar task
 * does this).
 */
public class ClockThenWrite {
    public static void main(String[] args) throws Exception {
        long a = System.currentTimeMillis();
        try (RandomAccessFile f = new RandomAccessFile(args[0], "rw")) {
            long b = System.currentTimeMillis();
            long c = System.currentTimeMillis();
            f.setLength(0);
            f.writeLong(c);
            f.seek(0);
            System.out.println("clocks " + a + " " + b + " " + c + " wrote " + (f.readLong() == c));
        }
    }
}
