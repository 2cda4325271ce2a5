import java.time.Clock;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;

/**
 * Prints values that depend on the clocks. Args: "changed" makes a different clock call
 * (replay must diverge), "short" skips the hot loop (replay must find events left over).
 */
public class Clocks {
    public static void main(String[] args) throws Exception {
        boolean changed = args.length > 0 && args[0].equals("changed");
        boolean shortRun = args.length > 0 && args[0].equals("short");
        long t0 = System.nanoTime();
        Thread.sleep(20);
        long t1 = System.nanoTime();
        System.out.println("slept ns " + (t1 - t0));
        System.out.println("millis " + (changed ? System.nanoTime() : System.currentTimeMillis()));
        System.out.println("instant " + Instant.now());
        System.out.println("clock " + Clock.systemUTC().millis() + " " + Clock.systemUTC().instant());
        System.out.println("local " + LocalDateTime.now());
        System.out.println("random " + new Random().nextInt());
        System.out.println("math.random " + Math.random());
        System.out.println("tlr " + ThreadLocalRandom.current().nextLong());
        System.out.println("splittable " + new SplittableRandom().nextLong());
        List<Integer> l = new ArrayList<>();
        for (int i = 0; i < 20; i++) l.add(i);
        Collections.shuffle(l);
        System.out.println("shuffle " + l);
        LongSupplier ref = System::nanoTime; // a method-handle constant, not an invokestatic
        System.out.println("method ref " + ref.getAsLong());
        if (!shortRun) {
            // JIT-hot: C2 compiles this loop (it would intrinsify System.nanoTime).
            long sum = 0;
            for (int i = 0; i < 2_000_000; i++) sum += System.nanoTime();
            System.out.println("hot sum " + sum);
        }
        System.out.println("end " + System.currentTimeMillis());
    }
}
