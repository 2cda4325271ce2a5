import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * `PoolInit`: a pool worker goes idle (waiting in its queue's take), then main first needs
 * the common ForkJoinPool (CompletableFuture.supplyAsync). ForkJoinPool's initializer reads
 * availableProcessors; which thread ran it was timing (the idle worker in the recording,
 * main in replay) until the agent initialized the class itself.
 */
public class PoolInit {
    public static void main(String[] a) throws Exception {
        ExecutorService ex = Executors.newFixedThreadPool(1);
        ex.submit(() -> { }).get();
        Thread.sleep(200);
        System.out.println("supplied " + CompletableFuture.supplyAsync(() -> 42).get()
            + " parallelism " + java.util.concurrent.ForkJoinPool.getCommonPoolParallelism());
        ex.shutdown();
    }
}
