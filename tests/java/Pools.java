import java.util.*;
import java.util.concurrent.*;

/**
 * Executor tasks whose worker and completion order race: a fixed pool's idle workers take
 * queued tasks, a cached pool's SynchronousQueue accepts a task only while a worker polls,
 * invokeAll, and an ExecutorCompletionService hands out futures in the order tasks finished.
 * Each task sleeps a Math.random() time and reads the clock; the output names the worker of
 * every task and the completion order.
 */
public class Pools {
    static String work(int k) throws InterruptedException {
        long ms = (long) (Math.random() * 12);
        long t0 = System.nanoTime();
        Thread.sleep(ms);
        return k + "@" + Thread.currentThread().getName() + "/" + ms + (System.nanoTime() > t0 ? "" : "!");
    }

    public static void main(String[] args) throws Exception {
        ExecutorService fixed = Executors.newFixedThreadPool(3);
        List<Future<String>> fs = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            final int k = i;
            fs.add(fixed.submit(() -> work(k)));
        }
        StringBuilder sb = new StringBuilder("fixed");
        for (Future<String> f : fs) sb.append(' ').append(f.get());
        System.out.println(sb);

        ExecutorService cached = Executors.newCachedThreadPool();
        List<Future<String>> cs = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            final int k = i;
            cs.add(cached.submit(() -> work(k)));
            Thread.sleep(3);
        }
        sb = new StringBuilder("cached");
        for (Future<String> f : cs) sb.append(' ').append(f.get());
        System.out.println(sb);

        List<Callable<String>> calls = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            final int k = i;
            calls.add(() -> work(k));
        }
        sb = new StringBuilder("invokeAll");
        for (Future<String> f : fixed.invokeAll(calls)) sb.append(' ').append(f.get());
        System.out.println(sb);

        CompletionService<String> ecs = new ExecutorCompletionService<>(fixed);
        for (int i = 0; i < 8; i++) {
            final int k = i;
            ecs.submit(() -> work(k));
        }
        sb = new StringBuilder("completed");
        for (int i = 0; i < 8; i++) {
            Future<String> f = i % 2 == 0 ? ecs.take() : ecs.poll(5, TimeUnit.SECONDS);
            sb.append(' ').append(f.get());
        }
        System.out.println(sb);
        fixed.shutdown();
        cached.shutdown();
        System.out.println("done " + fixed.awaitTermination(5, TimeUnit.SECONDS));
    }
}
