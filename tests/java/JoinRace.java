/**
 * Joins a thread with a time-out after sleeping long enough for it to end. Replay compresses
 * the sleep, so the thread may still be running at the join, whose own clock reads then
 * differ from the recording's (ant's ProcessDestroyer does this after every exec).
 */
public class JoinRace {
    public static void main(String[] args) throws Exception {
        long[] sum = new long[1];
        Thread worker = new Thread(() -> {
            long s = 0;
            for (long i = 0; i < 300_000_000L; i++) s += i ^ (s >>> 3);
            sum[0] = s;
        });
        worker.start();
        Thread.sleep(1500);
        worker.join(20_000);
        System.out.println("joined " + (sum[0] != 0) + " at " + System.currentTimeMillis());
    }
}
