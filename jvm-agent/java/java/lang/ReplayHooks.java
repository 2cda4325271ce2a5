package java.lang;

import jdk.internal.misc.InnocuousThread;
import jdk.internal.misc.Unsafe;
import jdk.internal.misc.VM;

/**
 * Where the replay agent (libreplay.so) sends calls of System.nanoTime, System.currentTimeMillis
 * and VM.getNanoTimeAdjustment: it rewrites those Methodrefs in every class's constant pool to
 * this class, which has the same names and descriptors.
 *
 * The agent defines this class into the boot loader at VMStart from bytes it carries, so:
 * it is one class (a nested, anonymous or lambda class could not be found by the boot loader),
 * it has no static initializer (it may first run while the JDK is still starting; the agent
 * calls {@link #init} at VMInit) and it uses no string concatenation (invokedynamic).
 *
 * Record: each event takes its sequence number from the core's global counter when it happens
 * (an atomic add on the counter's native memory), so batching never reorders events across
 * threads; the (sequence, kind) and value go into a per-thread buffer in native memory (plain
 * stores, then the count published with a release store) that the core's flusher drains
 * within the flush interval and the JVM's shutdown drains for every thread, so no event waits
 * for its thread to run again (jvm-agent/src/drain.rs). Native is called once per full
 * buffer. Replay: a thread's buffer holds the run of its next recorded events that
 * follow each other in sequence and share one kind (Replayer::next_run): no other thread's
 * event lies inside such a run, so fetching it never waits for other threads and never
 * reorders calls across them. Each buffered value is served only to a call of the run's kind;
 * any other call while values are pending is a divergence, reported by native with the stack.
 */
public final class ReplayHooks {
    private static final int K_NANO = 0;
    private static final int K_MILLIS = 1;
    private static final int K_ADJUST = 2;
    private static final int K_SLEEP = 3;
    private static final int K_POOL_TAKE = 4;
    private static final int K_SELECTOR = 5;
    private static final int K_ATOMIC = 6;
    private static final int K_WAIT = 7;

    /** 0: pass through; 1: record; 2: replay. Volatile: init publishes the fields below. */
    private static volatile int mode;
    private static long seqAddr;
    private static Unsafe unsafe;
    private static ThreadLocal<Object[]> buffers;
    /** Record: the index at which a thread's native buffer is full (1 + 2 * pairs). */
    private static long limit;
    /**
     * The last thread's {thread, buffer} pair: a hot loop on one thread finds its buffer with
     * one compare instead of a ThreadLocal lookup (measured: ThreadLocal.get was most of the
     * hook's cost). Each pair is built by its own thread and never changed, so a thread that
     * sees its own Thread in p[0] also sees its p[1]; any other pair fails the compare.
     */
    private static Object[] last;
    /**
     * The buffer of threads whose calls are not events (JDK service threads). Record: every
     * other thread's buffer is {address of its native buffer}, or {0} for a virtual thread
     * (recorded call by call). Replay: see event().
     */
    private static long[] skip;
    private static int capacity;
    /** JDK 21+: Thread's sleeps all go through its private sleepNanos, which is the hook. */
    private static boolean sleepNanosHooked;
    /**
     * ThreadPoolExecutor tasks (see poolOffer): the lock of the three maps below, a task's
     * number (its place among the offers to its pool's queue), each queue's count of offers,
     * and replay's tasks taken from a queue by a worker they were not recorded for.
     */
    private static Object poolLock;
    private static java.util.WeakHashMap<Object, long[]> taskNumbers;
    private static java.util.WeakHashMap<Object, long[]> offers;
    private static java.util.WeakHashMap<Object, java.util.HashMap<Long, Object>> stashes;
    /** The lock under which an ordered atomic operation and its event happen together. */
    private static Object atomLock;
    /** The last HttpClient selector thread's {thread, registrations, deregistrations, lock}. */
    private static volatile Object[] selCache;
    /** Replay: registrations set aside past a selector pass's recorded count, by list. */
    private static java.util.IdentityHashMap<Object, java.util.ArrayList<Object>> selStash;
    /** ExecutorCompletionService.QueueingFuture's fields (see ecsExecute). */
    private static volatile java.lang.reflect.Field qfTask;
    private static volatile java.lang.reflect.Field qfQueue;

    private ReplayHooks() {}

    public static long nanoTime() {
        int m = mode;
        if (m == 2) {
            // Replay reads the real clock only when it needs a live value (measured: the read
            // was a third of a buffered replayed call).
            long[] b = buffer();
            if (b != null && b.length > 1) {
                int i = (int) b[0];
                if (i < (int) b[1] && b[2] == K_NANO) {
                    b[0] = i + 1;
                    return b[i];
                }
            }
        }
        long v = System.nanoTime();
        return m == 0 ? v : event(m, K_NANO, v);
    }

    public static long currentTimeMillis() {
        int m = mode;
        if (m == 2) {
            long[] b = buffer();
            if (b != null && b.length > 1) {
                int i = (int) b[0];
                if (i < (int) b[1] && b[2] == K_MILLIS) {
                    b[0] = i + 1;
                    return b[i];
                }
            }
        }
        long v = System.currentTimeMillis();
        return m == 0 ? v : event(m, K_MILLIS, v);
    }

    public static long getNanoTimeAdjustment(long offset) {
        long v = VM.getNanoTimeAdjustment(offset);
        int m = mode;
        if (m == 0) {
            return v;
        }
        long[] b = buffer();
        if (b == null) {
            return v;
        }
        if (m == 2 && b.length > 1) {
            // Native serves it alone (it has an input digest) or, if clock values of this
            // thread are still pending, reports that the recorded program read those first.
            return run0(K_ADJUST, v, offset, b);
        }
        if (m == 1) {
            // Rare (Instant.now, Clock), and it carries an input: recorded directly (native
            // hands over this thread's buffered events first, so they stay in order).
            record0(K_ADJUST, v, offset);
            return v;
        }
        return replay0(K_ADJUST, v, offset);
    }

    /**
     * Where calls of sun.security.provider.SeedGenerator.getSystemEntropy() go (SHA1PRNG's and
     * the DRBG's seeders): native calls the original, then records its digest or, in replay,
     * returns the recorded one (the heap's free memory and the machine's properties in it
     * differ between runs).
     */
    public static byte[] getSystemEntropy() {
        return entropy0();
    }

    private static native byte[] entropy0();

    /**
     * Where java.util.Random's calls of its private seedUniquifier() go (src/seeds.rs): the
     * original runs (native, through JNI), and its value is recorded as an event of this
     * thread or, in replay, this thread's recorded value is returned. The order in which
     * threads reach the shared atomic races.
     */
    public static long seedUniquifier() {
        return seed(0, uniquifier0());
    }

    /** ThreadLocalRandom's seeder.getAndAdd(d) (localInit, nextSecondarySeed). */
    public static long seedThreadLocalRandom(java.util.concurrent.atomic.AtomicLong a, long d) {
        return seed(1, a.getAndAdd(d));
    }

    /** SplittableRandom()'s defaultGen.getAndAdd(d). */
    public static long seedSplittableRandom(java.util.concurrent.atomic.AtomicLong a, long d) {
        return seed(2, a.getAndAdd(d));
    }

    /**
     * Math.random(): its one generator is shared by every thread, so which value a thread
     * gets depends on the order of all threads' calls. Each thread gets back the values it
     * took, in its own order (a seed kind: served out of the threads' turns).
     */
    public static double random() {
        double v = Math.random();
        return mode == 0 ? v : Double.longBitsToDouble(seed(3, Double.doubleToRawLongBits(v)));
    }

    private static long seed(int which, long v) {
        int m = mode;
        if (m == 0) {
            return v;
        }
        long[] b = buffer();
        if (b == null) {
            return v;
        }
        // Record: native hands over this thread's buffered clock events (they took earlier
        // numbers) before it records the seed. Replay serves seeds out of the threads' turns, so clock values fetched for this
        // thread and not used yet stay pending for its next clock calls.
        return seed0(which, v);
    }

    /**
     * Where Thread.sleep(long) calls go (JDK 17: the native itself; JDK 21+: the public method,
     * whose sleepNanos call is the hook below). Record: the sleep runs and its end is an event
     * of this thread (value 0, or 1 if it was interrupted; the duration is the input digest),
     * taken when the sleep ends, so its place among other threads' events is when it woke.
     * Replay does not sleep: the call returns at that event's turn, once every event recorded
     * before it is replayed. A sleep recorded as interrupted sleeps live (the interrupt comes
     * from the replayed program), and throws when the interrupt comes.
     */
    public static void sleep(long millis) throws InterruptedException {
        if (sleepNanosHooked) {
            Thread.sleep(millis);
            return;
        }
        timed(millis, false);
    }

    /** JDK 21+: Thread.sleepNanos(long), which every sleep of a Thread calls. */
    public static void sleepNanos(long nanos) throws InterruptedException {
        timed(nanos, true);
    }

    private static void timed(long t, boolean nanos) throws InterruptedException {
        int m = mode;
        long[] b = m == 0 ? null : buffer();
        if (b == null) {
            sleepLive(t, nanos);
            return;
        }
        if (m == 1) {
            long outcome = 1;
            try {
                sleepLive(t, nanos);
                outcome = 0;
            } finally {
                // Native hands over this thread's buffered clock events first.
                record0(K_SLEEP, outcome, t);
            }
            return;
        }
        untilEnd(K_SLEEP, null);
        // -1: replay runs live (gone live, or the agent stopped).
        long r = replayCall(K_SLEEP, -1L, t, b);
        if (r != 0) {
            sleepLive(t, nanos);
        }
    }

    /**
     * {@code o.wait(millis)} with a timeout, in the program's classes and java.util.Timer's
     * (src/classfile.rs, MONITOR_SITES). How often a thread's timed waits return before
     * another thread acts is timing: a thread counting its waits while another slept wrote
     * another count in replay, where the sleep returned at once. Record: the wait runs and its
     * return is an event of this thread, taken when it returned, so its place among the other
     * threads' events is when it woke; its value says how: 0 timed out, 2 woken before its
     * time (a notify), 1 interrupted; the timeout is the input digest. Replay: the wait
     * returns at that event's turn, waiting on the monitor in steps of a millisecond until
     * then (a thread before it may need the monitor, and a step releases it as a wait does).
     * One woken by a notify in the recording then also waits for a notify of the same
     * monitor in these classes since it began (the notifier's turn is not an event: it may
     * come after the waiter's, which the recording took once the notifier had let go of the
     * monitor). Not for just its own timeout: in replay the waiter's earlier waits and the
     * notifier's sleeps return at once, so the notifier's work between events, which
     * overlapped several timeouts in the recording, may fall in this one (H2's background
     * writer then ran one round too many); for at most {@link #NOTIFY_WAIT_NS} more, in case
     * the notifier is not in these classes. One interrupted waits live. {@code wait(0)} (no timeout) is not an event:
     * a notify ends it, which the other thread's replayed turn brings.
     */
    public static void waitTimed(Object o, long millis) throws InterruptedException {
        int m = mode;
        long[] b = m == 0 || millis <= 0L ? null : buffer();
        if (b == null) {
            o.wait(millis);
            return;
        }
        if (m == 1) {
            long start = System.nanoTime();
            try {
                o.wait(millis);
            } catch (InterruptedException e) {
                record0(K_WAIT, 1L, millis);
                throw e;
            }
            long woke = System.nanoTime() - start < nanosOf(millis) ? 2L : 0L;
            record0(K_WAIT, woke, millis);
            return;
        }
        long seen = notifiesOf(o);
        boolean interrupted = false;
        Object[] p = quiet();
        try {
            // About a minute at most, then the replay call waits under the core's timeout
            // and reports what is stuck.
            for (int i = 0; i < 60000; i++) {
                if ((b.length > 1 && (int) b[0] < (int) b[1]) || turnOf0(K_WAIT) != 0) {
                    break;
                }
                interrupted |= pause(o);
            }
            interrupted |= untilEnd(K_WAIT, o);
        } finally {
            loud(p);
        }
        long r = replayCall(K_WAIT, -1L, millis, b);
        if (r == 2L) {
            p = quiet();
            try {
                long from = System.nanoTime();
                long limit = Math.max(nanosOf(millis), NOTIFY_WAIT_NS);
                while (notifiesOf(o) == seen && System.nanoTime() - from < limit) {
                    interrupted |= pause(o);
                }
            } finally {
                loud(p);
            }
        }
        if (interrupted) {
            // Kept for the wait recorded as interrupted, or for the thread's next
            // interruptible call.
            Thread.currentThread().interrupt();
        }
        if (r == 1L || r < 0L) {
            o.wait(millis);
        }
    }

    /**
     * Replay of a sleep or timed wait with nothing left in this thread's recording: the
     * recorded process ended while the thread slept or waited here (a server's timer thread,
     * say), so the call waits for the replayed process's end too (on {@code o}'s monitor in
     * steps, when given, releasing it as a wait does) instead of reporting a call past the
     * recording at once. Gives up after about {@link #END_WAIT_MS}: the call is then reported.
     * True if the thread was interrupted meanwhile.
     */
    private static boolean untilEnd(int kind, Object o) {
        boolean interrupted = false;
        for (int i = 0; i < END_WAIT_MS && turnOf0(kind) == -2; i++) {
            if (o != null) {
                interrupted |= pause(o);
            } else {
                try {
                    // The real sleep of a millisecond (JDK 21+: Thread.sleep would come back
                    // here through the hooked sleepNanos).
                    sleepLive(sleepNanosHooked ? 1_000_000L : 1L, sleepNanosHooked);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        return interrupted;
    }

    private static final int END_WAIT_MS = 10_000;

    /** A timeout in nanoseconds, at most Long.MAX_VALUE (wait(Long.MAX_VALUE) is "forever"). */
    private static long nanosOf(long millis) {
        return millis > Long.MAX_VALUE / 1000000L ? Long.MAX_VALUE : millis * 1000000L;
    }

    /**
     * Notifies in the classes whose timed waits are hooked, counted for waitTimed per monitor
     * (by identity hash: monitors that share a slot only wake each other's replayed waits
     * early; counting all monitors together did so for every unrelated notify).
     */
    private static final long[] NOTIFIES = new long[1024];

    /** How long past its own timeout a replayed wait woken by a notify waits for one. */
    private static final long NOTIFY_WAIT_NS = 5_000_000_000L;

    private static long notifiesOf(Object o) {
        int i = System.identityHashCode(o) & (NOTIFIES.length - 1);
        synchronized (NOTIFIES) {
            return NOTIFIES[i];
        }
    }

    private static void notified(Object o) {
        int i = System.identityHashCode(o) & (NOTIFIES.length - 1);
        synchronized (NOTIFIES) {
            NOTIFIES[i]++;
        }
    }

    /** A millisecond's wait on {@code o}'s monitor; true if the thread was interrupted. */
    private static boolean pause(Object o) {
        try {
            o.wait(1L);
            return false;
        } catch (InterruptedException e) {
            return true;
        }
    }

    /** {@code o.notify()} where timed waits are hooked: counted (see waitTimed). */
    public static void notifyOne(Object o) {
        o.notify();
        if (mode == 2) {
            notified(o);
        }
    }

    /** {@code o.notifyAll()} where timed waits are hooked: counted (see waitTimed). */
    public static void notifyEvery(Object o) {
        o.notifyAll();
        if (mode == 2) {
            notified(o);
        }
    }

    private static void sleepLive(long t, boolean nanos) throws InterruptedException {
        if (nanos) {
            sleepNanos0(t);
        } else {
            Thread.sleep(t);
        }
    }

    /**
     * ThreadPoolExecutor.execute's {@code workQueue.offer(task)}. Which idle worker takes a
     * queued task is a race; so is whether a SynchronousQueue (a cached pool) accepts it
     * (only while a worker polls: refused, the pool starts a new worker for the task). A
     * task is known across runs by its number, its place among the offers to its queue
     * (made in the program's order by the threads that submit). Record: the offer runs and
     * whether it was accepted is an event of the submitting thread, of a seed kind: replay
     * gives each thread its own answers in its order, out of the threads' turns (the event
     * is recorded after the offer returned, when the worker may have recorded its take of the
     * task already). An accepted task is offered until the queue takes it (a SynchronousQueue
     * takes it once some worker polls).
     */
    public static boolean poolOffer(java.util.concurrent.BlockingQueue<Object> q, Object task) {
        int m = mode;
        long[] b = m == 0 ? null : buffer();
        if (b == null) {
            return q.offer(task);
        }
        long n;
        synchronized (poolLock) {
            long[] c = offers.get(q);
            if (c == null) {
                c = new long[1];
                offers.put(q, c);
            }
            n = c[0]++;
            taskNumbers.put(task, new long[] {n});
        }
        if (m == 1) {
            boolean ok = false;
            Object[] p = quiet();
            try {
                ok = q.offer(task);
            } finally {
                loud(p);
                seed(4, ok ? 1L : 0L);
            }
            return ok;
        }
        long r = seed(4, -1L);
        if (r == -1L) {
            return q.offer(task); // live
        }
        if (r == 1L) {
            Object[] p = quiet();
            try {
                for (int i = 0; i < 30000; i++) {
                    if (q.offer(task, 1L, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                        return true;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                loud(p);
            }
            poolStall0(n, 0);
        }
        synchronized (poolLock) {
            taskNumbers.remove(task);
        }
        return false;
    }

    /** ThreadPoolExecutor.getTask's {@code workQueue.take()}. */
    public static Object poolTake(java.util.concurrent.BlockingQueue<Object> q) throws InterruptedException {
        return poolTaken(q, 0, 0L, null);
    }

    /** ThreadPoolExecutor.getTask's {@code workQueue.poll(keepAliveTime, NANOSECONDS)}. */
    public static Object poolPoll(java.util.concurrent.BlockingQueue<Object> q, long t,
            java.util.concurrent.TimeUnit u) throws InterruptedException {
        return poolTaken(q, 1, t, u);
    }

    /**
     * ExecutorCompletionService.submit's {@code executor.execute(new QueueingFuture(f, q))}:
     * numbers `f`, the future that arrives in the completion queue `q` once its task is
     * done, by its place among the submissions to that queue.
     */
    public static void ecsExecute(java.util.concurrent.Executor e, Runnable qf) {
        if (mode != 0 && buffer() != null) {
            try {
                // Looked up once: reflection's own caches are ConcurrentHashMaps, whose
                // contention would start ThreadLocalRandom (a seed event) in other threads.
                java.lang.reflect.Field tf = qfTask;
                java.lang.reflect.Field qq = qfQueue;
                if (tf == null || tf.getDeclaringClass() != qf.getClass()) {
                    tf = qf.getClass().getDeclaredField("task");
                    qq = qf.getClass().getDeclaredField("completionQueue");
                    tf.setAccessible(true);
                    qq.setAccessible(true);
                    qfQueue = qq;
                    qfTask = tf;
                }
                Object f = tf.get(qf);
                Object q = qq.get(qf);
                synchronized (poolLock) {
                    long[] c = offers.get(q);
                    if (c == null) {
                        c = new long[1];
                        offers.put(q, c);
                    }
                    taskNumbers.put(f, new long[] {c[0]++});
                }
            } catch (ReflectiveOperationException | RuntimeException x) {
                // Another JDK's QueueingFuture: its futures are taken live (number -3).
            }
        }
        e.execute(qf);
    }

    /** ExecutorCompletionService.take's {@code completionQueue.take()}. */
    public static Object ecsTake(java.util.concurrent.BlockingQueue<Object> q) throws InterruptedException {
        return poolTaken(q, 2, 0L, null);
    }

    /** ExecutorCompletionService.poll()'s {@code completionQueue.poll()}. */
    public static Object ecsPollNow(java.util.concurrent.BlockingQueue<Object> q) {
        try {
            return poolTaken(q, 3, 0L, null);
        } catch (InterruptedException x) {
            Thread.currentThread().interrupt(); // never thrown: poll() does not wait
            return null;
        }
    }

    /** ExecutorCompletionService.poll(timeout, unit)'s {@code completionQueue.poll(...)}. */
    public static Object ecsPoll(java.util.concurrent.BlockingQueue<Object> q, long t,
            java.util.concurrent.TimeUnit u) throws InterruptedException {
        return poolTaken(q, 4, t, u);
    }

    /** How a taking hook takes: 0 take, 1 poll(t, u), 2 take, 3 poll(), 4 poll(t, u). */
    private static Object takeLive(java.util.concurrent.BlockingQueue<Object> q, int how, long t,
            java.util.concurrent.TimeUnit u) throws InterruptedException {
        if (how == 0 || how == 2) {
            return q.take();
        }
        return how == 3 ? q.poll() : q.poll(t, u);
    }

    /**
     * Record: the worker takes its next task as it would; the task's number is an event of
     * the worker (-1: the timed poll ran out; -3: a task not offered through execute); an
     * interrupted take is no event. Replay: at the event's turn the worker takes that very task, from
     * the queue or from the tasks other workers took out of it for their own; a recorded
     * time-out returns at once (the keep-alive wait is not waited again); an interrupted or
     * unknown take runs live.
     */
    private static Object poolTaken(java.util.concurrent.BlockingQueue<Object> q, int how, long t,
            java.util.concurrent.TimeUnit u) throws InterruptedException {
        int m = mode;
        long[] b = m == 0 ? null : buffer();
        if (b == null) {
            return takeLive(q, how, t, u);
        }
        if (m == 1) {
            Object r = null;
            long n = -2L;
            Object[] p = quiet();
            try {
                r = takeLive(q, how, t, u);
                n = r == null ? -1L : numberOf(r);
            } finally {
                loud(p);
                if (n != -2L) {
                    record0(K_POOL_TAKE, n, how);
                }
            }
            return r;
        }
        if ((b.length > 1 && (int) b[0] < (int) b[1]) || !nextIsTake0()) {
            // Not recorded: interrupted in the recording (a shutdown; whether the worker took
            // at all then raced), so it waits here too until interrupted or timed out. A
            // task it gets meanwhile is another worker's: kept for it.
            Object[] p = quiet();
            Object r;
            try {
                r = waitUnrecorded(q, how, t, u);
            } finally {
                loud(p);
            }
            if (r != null) {
                poolStall0(-1L, 2);
            }
            return r;
        }
        if (how <= 1) {
            // While other threads' events come first, the worker already waits on the queue,
            // as it did in the recording: a SynchronousQueue (a cached pool's) accepts an offer
            // only from a waiting worker, and a replayed accepted offer waits for one. What it
            // takes meanwhile is kept for the worker the recording gave it to.
            java.util.HashMap<Long, Object> stash = stashOf(q);
            Object[] p = quiet();
            try {
                while (turnOf0(K_POOL_TAKE) == 0) {
                    Object r = q.poll(1L, java.util.concurrent.TimeUnit.MILLISECONDS);
                    if (r != null) {
                        long n = numberOf(r);
                        synchronized (poolLock) {
                            stash.put(Long.valueOf(n), r);
                        }
                    }
                }
            } finally {
                loud(p);
            }
        }
        long want = replayCall(K_POOL_TAKE, -4L, how, b);
        if (want == -1L) {
            return null;
        }
        Object[] p = quiet();
        try {
            return want < 0L ? takeLive(q, how, t, u) : takeNumbered(q, want, how, t, u);
        } finally {
            loud(p);
        }
    }

    /**
     * Replay: a take the recording has no event for. Waits as the take would (until
     * interrupted, or for a timed poll its time), passing every numbered task it meets to the
     * stash for the worker that took it in the recording; returns a task only if one not
     * numbered comes (taken live), or null.
     */
    private static Object waitUnrecorded(java.util.concurrent.BlockingQueue<Object> q, int how, long t,
            java.util.concurrent.TimeUnit u) throws InterruptedException {
        long end = how == 1 || how == 4 ? System.nanoTime() + u.toNanos(t) : Long.MAX_VALUE;
        java.util.HashMap<Long, Object> stash = stashOf(q);
        for (;;) {
            Object r = how == 3 ? q.poll() : q.poll(1L, java.util.concurrent.TimeUnit.MILLISECONDS);
            if (r != null) {
                long n = numberOf(r);
                if (n < 0L) {
                    return r;
                }
                synchronized (poolLock) {
                    stash.put(Long.valueOf(n), r);
                }
            }
            if (how == 3 || (end != Long.MAX_VALUE && System.nanoTime() - end >= 0L)) {
                return null;
            }
        }
    }

    private static java.util.HashMap<Long, Object> stashOf(java.util.concurrent.BlockingQueue<Object> q) {
        synchronized (poolLock) {
            java.util.HashMap<Long, Object> stash = stashes.get(q);
            if (stash == null) {
                stash = new java.util.HashMap<>();
                stashes.put(q, stash);
            }
            return stash;
        }
    }

    /** Replay: task `want` of queue `q`, taken by this worker as in the recording. */
    private static Object takeNumbered(java.util.concurrent.BlockingQueue<Object> q, long want, int how,
            long t, java.util.concurrent.TimeUnit u) throws InterruptedException {
        java.util.HashMap<Long, Object> stash = stashOf(q);
        Long key = Long.valueOf(want);
        // Polled in 1 ms steps: a task another worker took out for its own is found without
        // anyone waking this one. 30 s without it: the recorded order cannot be followed.
        for (int i = 0; i < 30000; i++) {
            synchronized (poolLock) {
                Object s = stash.remove(key);
                if (s != null) {
                    return s;
                }
            }
            Object r = q.poll(1L, java.util.concurrent.TimeUnit.MILLISECONDS);
            if (r == null) {
                continue;
            }
            long n = numberOf(r);
            if (n == want) {
                return r;
            }
            synchronized (poolLock) {
                stash.put(Long.valueOf(n), r);
            }
        }
        poolStall0(want, 1);
        // Gone live (warn-live) or going on (warn-continue): whatever comes next.
        return takeLive(q, how, t, u);
    }

    /**
     * HttpClient's SelectorManager: every {@code list.iterator()} of its code. For the
     * selector thread's {@code registrations} and {@code deregistrations} (taken under its
     * lock at the top of its loop), how many it takes is an event: recorded, or in replay
     * waited for (see jvm-agent/src/selector.rs). Any other list passes through.
     */
    public static java.util.Iterator<Object> selIterator(java.util.List<Object> l) {
        int m = mode;
        Object[] c = m == 0 ? null : selLists();
        long[] b = c == null ? null : buffer();
        int which = c == null ? 0 : l == c[1] ? 1 : l == c[2] ? 2 : 0;
        if (b == null || which == 0) {
            return l.iterator();
        }
        if (m == 1) {
            record0(K_SELECTOR, l.size(), which);
            return l.iterator();
        }
        Object[] p = quiet();
        try {
            // Its turn is waited for with the lock released: a thread before it in the
            // recording may need the lock to add its registration.
            for (int i = 0; i < 30000; i++) {
                if ((b.length > 1 && (int) b[0] < (int) b[1]) || turnOf0(K_SELECTOR) != 0) {
                    break;
                }
                selPause(c[3]);
            }
        } finally {
            loud(p);
        }
        long n = replayCall(K_SELECTOR, -1L, which, b);
        if (n < 0L) {
            return l.iterator();
        }
        p = quiet();
        try {
            // The adds it took in the recording came before its event: their threads are past
            // them, or about to add.
            for (int i = 0; i < 5000 && l.size() < n; i++) {
                selPause(c[3]);
            }
        } finally {
            loud(p);
        }
        int size = l.size();
        if (size > n) {
            java.util.List<Object> tail = l.subList((int) n, size);
            java.util.ArrayList<Object> later = new java.util.ArrayList<>(tail);
            tail.clear();
            synchronized (poolLock) {
                java.util.ArrayList<Object> old = selStash.put(l, later);
                if (old != null) {
                    later.addAll(0, old);
                }
            }
        }
        return l.iterator();
    }

    /** The SelectorManager's {@code list.clear()}: in replay, what a pass set aside comes back. */
    public static void selClear(java.util.List<Object> l) {
        l.clear();
        if (mode == 2) {
            java.util.ArrayList<Object> later;
            synchronized (poolLock) {
                later = selStash.isEmpty() ? null : selStash.remove(l);
            }
            if (later != null) {
                l.addAll(later);
            }
        }
    }

    /**
     * HttpClient's SequentialScheduler: the operations on its {@code AtomicInteger state}
     * decide which thread runs the scheduler's task (the one whose compareAndSet wins), and
     * the task's I/O is then that thread's. Their order across threads is recorded (each
     * operation and its event under one lock) and replayed (each at its event's turn, under
     * the same lock, so the next thread's comes after it). Same result as the plain call.
     */
    public static int atomGet(java.util.concurrent.atomic.AtomicInteger a) {
        return (int) atomic(a, 0, 0, 0);
    }

    public static boolean atomCas(java.util.concurrent.atomic.AtomicInteger a, int expect, int update) {
        return atomic(a, 1, expect, update) != 0L;
    }

    public static void atomSet(java.util.concurrent.atomic.AtomicInteger a, int v) {
        atomic(a, 2, 0, v);
    }

    private static long atomDo(java.util.concurrent.atomic.AtomicInteger a, int op, int expect, int v) {
        if (op == 0) {
            return a.get();
        }
        if (op == 1) {
            return a.compareAndSet(expect, v) ? 1L : 0L;
        }
        a.set(v);
        return 0L;
    }

    private static long atomic(java.util.concurrent.atomic.AtomicInteger a, int op, int expect, int v) {
        int m = mode;
        long[] b = m == 0 ? null : buffer();
        if (b == null) {
            return atomDo(a, op, expect, v);
        }
        if (m == 1) {
            synchronized (atomLock) {
                long r = atomDo(a, op, expect, v);
                record0(K_ATOMIC, r, op);
                return r;
            }
        }
        for (int i = 0;; i++) {
            boolean pending = b.length > 1 && (int) b[0] < (int) b[1];
            synchronized (atomLock) {
                int t = pending ? -1 : turnOf0(K_ATOMIC);
                if (t == 1) {
                    long r = atomDo(a, op, expect, v);
                    replayCall(K_ATOMIC, r, op, b);
                    return r;
                }
                if (t < 0) {
                    break;
                }
            }
            if (i < 64) {
                Thread.onSpinWait();
            } else {
                java.util.concurrent.locks.LockSupport.parkNanos(20000L);
            }
        }
        // Another kind of event is next, or replay stopped or went live: the replay call
        // reports it or answers live (outside the lock: it may wait for its turn).
        long r = atomDo(a, op, expect, v);
        replayCall(K_ATOMIC, r, op, b);
        return r;
    }

    /** Replays a hook call of `kind` through this thread's buffer {@code b} or, unbuffered, alone. */
    private static long replayCall(int kind, long live, long arg, long[] b) {
        return b.length > 1 ? run0(kind, live, arg, b) : replay0(kind, live, arg);
    }

    /** {thread, registrations, deregistrations, lock} if this is an HttpClient selector thread. */
    private static Object[] selLists() {
        Thread t = Thread.currentThread();
        Object[] c = selCache;
        if (c != null && c[0] == t) {
            return c;
        }
        if (!"jdk.internal.net.http.HttpClientImpl$SelectorManager".equals(t.getClass().getName())) {
            return null;
        }
        c = selLists0(t);
        if (c != null) {
            selCache = c;
        }
        return c;
    }

    /** About a millisecond with the selector's lock (held once, by this thread) released. */
    private static void selPause(Object lock) {
        if (lock instanceof java.util.concurrent.locks.ReentrantLock) {
            java.util.concurrent.locks.ReentrantLock rl = (java.util.concurrent.locks.ReentrantLock) lock;
            boolean held = rl.getHoldCount() == 1;
            if (held) {
                rl.unlock();
            }
            try {
                java.util.concurrent.locks.LockSupport.parkNanos(1000000L);
            } finally {
                if (held) {
                    rl.lock();
                }
            }
            return;
        }
        synchronized (lock) {
            try {
                lock.wait(1L);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static native Object[] selLists0(Thread t);

    private static native int turnOf0(int kind);

    /**
     * Makes the calling thread's clock reads and sleeps not events until {@link #loud}: the
     * queue's own timed waits (AQS awaitNanos reads System.nanoTime) inside a pool hook are
     * not the program's; the hook's event is the task taken. Returns the thread's pair.
     */
    private static Object[] quiet() {
        Thread t = Thread.currentThread();
        ThreadLocal<Object[]> tl = buffers;
        Object[] p = tl.get();
        Object[] q = new Object[] {t, skip};
        tl.set(q);
        last = q;
        return p;
    }

    private static void loud(Object[] p) {
        buffers.set(p);
        last = p;
    }

    /** A task's number, forgotten once taken; -3 for a task not offered through poolOffer. */
    private static long numberOf(Object task) {
        synchronized (poolLock) {
            long[] n = taskNumbers.remove(task);
            return n == null ? -3L : n[0];
        }
    }

    /**
     * Replay: task `n` never came (`taking`: 1) or was never accepted (0) within 30 s, or
     * (2) a task was taken where the recording's take was interrupted.
     */
    private static native void poolStall0(long n, int taking);

    /** Replay: whether this thread's next recorded event is a pool take. */
    private static native boolean nextIsTake0();

    /** JDK 21+: the original Thread.sleepNanos (private: called through JNI). */
    private static native void sleepNanos0(long nanos) throws InterruptedException;

    private static native long uniquifier0();

    private static native long seed0(int which, long live);

    private static long event(int m, int kind, long v) {
        long[] b = buffer();
        if (b == null) {
            return v;
        }
        if (m == 1) {
            long a = b[0];
            if (a == 0L) {
                record0(kind, v, 0L); // a virtual thread
                return v;
            }
            Unsafe u = unsafe;
            long n = u.getLong(a);
            long at = a + (n << 3);
            u.putLong(at, (u.getAndAddLong(null, seqAddr, 1L) << 2) | kind);
            u.putLong(at + 8L, v);
            n += 2;
            // Published: the flusher may record the pair from now on.
            u.putLongRelease(null, a, n);
            if (n == limit) {
                flush0();
            }
            return v;
        }
        if (b.length == 1) {
            return replay0(kind, v, 0L); // an unbuffered (daemon) thread
        }
        // b[0]: next index, b[1]: end, b[2]: the run's kind, b[3..]: recorded values.
        int i = (int) b[0];
        if (i < (int) b[1] && b[2] == kind) {
            b[0] = i + 1;
            return b[i];
        }
        return run0(kind, v, 0L, b);
    }

    /**
     * Called by the agent's FileInputStream wrappers (native, inside the hook guard): whether
     * this thread's file call is an event (it attaches the thread first). In record, native
     * hands over the thread's buffered clock events before it records the call.
     */
    /** Whether this thread's calls are events (fileEvent() without its pending check). */
    private static boolean eventThread() {
        return mode != 0 && buffer() != null;
    }

    private static boolean fileEvent() {
        int m = mode;
        if (m == 0) {
            return false;
        }
        long[] b = buffer();
        if (b == null) {
            return false;
        }
        if (m == 2 && b.length > 1 && (int) b[0] < (int) b[1]) {
            // Clock values fetched for this thread are unused: the recorded program read the
            // clock before this file call. A divergence, never a file event out of order.
            pending0(b);
        }
        return true;
    }

    // ---- HttpClient exchanges (jdk.internal.net.http.ReplayHttp calls these) ----

    /** 0: this thread's calls are not events (off, or a JDK service thread); 1 record; 2 replay. */
    public static int httpMode() {
        int m = mode;
        if (m == 0) {
            return 0;
        }
        return buffer() == null ? 0 : m;
    }

    /**
     * Whether {@code uri} names a server socket of this program on a loopback address: an
     * exchange with it is not recorded whole but runs live in both modes, its connection
     * being the program's own (src/net.rs runs both of its ends live). Recorded whole, the
     * server's accept took the client's connection for an outside one, and replay, which
     * served the exchange without connecting, left the server's recorded side waiting.
     */
    public static boolean ownServer(java.net.URI uri) {
        if (uri == null || mode == 0) {
            return false;
        }
        String h = uri.getHost();
        if (h == null) {
            return false;
        }
        boolean loopback = h.equals("localhost") || h.startsWith("127.") || h.equals("[::1]")
            || h.equals("::1");
        if (!loopback) {
            return false;
        }
        int port = uri.getPort();
        if (port < 0) {
            port = "https".equalsIgnoreCase(uri.getScheme()) ? 443 : 80;
        }
        return ownServer0(port);
    }

    private static native boolean ownServer0(int port);

    /**
     * NativePRNG's {@code INSTANCE.implNextBytes(bytes)} (src/entropy.rs): record runs it with
     * this thread's hooks live (its /dev/urandom reads are no events) and records the bytes;
     * replay fills them in without running it (nor taking its lock).
     */
    public static void prngNextBytes(Object io, byte[] bytes) {
        if (mode == 2 && bytes != null) {
            prngWarm(io);
            if (prngReplay0(bytes, 0)) {
                return;
            }
        }
        Object saved = mode == 1 ? liveBegin() : null;
        try {
            prngCall0(io, bytes);
        } finally {
            liveEnd(saved);
        }
        if (saved != null && bytes != null) {
            prngRecord0(bytes, 0);
        }
    }

    /** The NativePRNG instances {@link #prngWarm} ran once (compared by ==: no hash taken). */
    private static final Object[] prngWarmed = new Object[8];
    private static final Object prngWarmLock = new Object();

    /**
     * Replay: the first call on an instance runs the real one once, its bytes dropped. Its
     * first call sets the instance up (the SHA1PRNG it mixes in, the provider lookups), and
     * that takes identity hashes from the calling thread's sequence: skipped, every later
     * {@code Object.toString()} and identity-keyed set of that thread came out other than
     * recorded after a UUID.randomUUID() or a temporary file's name.
     */
    private static void prngWarm(Object io) {
        synchronized (prngWarmLock) {
            for (int i = 0; i < prngWarmed.length; i++) {
                if (prngWarmed[i] == io) {
                    return;
                }
                if (prngWarmed[i] == null) {
                    prngWarmed[i] = io;
                    break;
                }
            }
        }
        // With this thread's clock hooks live, as record runs it (its buffer's expiry reads
        // currentTimeMillis).
        Object saved = liveBegin();
        try {
            prngCall0(io, new byte[1]);
        } finally {
            liveEnd(saved);
        }
    }

    /** NativePRNG's {@code INSTANCE.implGenerateSeed(n)}, as {@link #prngNextBytes}. */
    public static byte[] prngGenerateSeed(Object io, int n) {
        if (mode == 2 && n >= 0) {
            prngWarm(io);
            byte[] b = new byte[n];
            if (prngReplay0(b, 1)) {
                return b;
            }
        }
        Object saved = mode == 1 ? liveBegin() : null;
        byte[] r;
        try {
            r = prngSeed0(io, n);
        } finally {
            liveEnd(saved);
        }
        if (saved != null && r != null) {
            prngRecord0(r, 1);
        }
        return r;
    }

    private static native void prngCall0(Object io, byte[] bytes);

    private static native byte[] prngSeed0(Object io, int n);

    private static native void prngRecord0(byte[] bytes, int which);

    private static native boolean prngReplay0(byte[] bytes, int which);

    /**
     * Where calls of sun.security.provider.SeedGenerator.generateSeed(byte[]) go (the seeds of
     * SHA1PRNG and DRBG, read from /dev/random): as {@link #prngNextBytes}. The device stream
     * is pooled with NativePRNG's, whose opens are live.
     */
    public static void generateSeed(byte[] bytes) {
        if (mode == 2 && bytes != null && prngReplay0(bytes, 2)) {
            return;
        }
        Object saved = mode == 1 ? liveBegin() : null;
        try {
            seedGen0(bytes);
        } finally {
            liveEnd(saved);
        }
        if (saved != null && bytes != null) {
            prngRecord0(bytes, 2);
        }
    }

    private static native void seedGen0(byte[] bytes);

    /**
     * Makes the calling thread's hooked calls live and unrecorded until {@link #liveEnd}
     * (what HttpClient does inside an exchange recorded whole). Returns what to restore.
     */
    public static Object liveBegin() {
        if (buffer() == null) {
            return null;
        }
        Object[] p = buffers.get();
        if (p == null) {
            return null;
        }
        Object saved = p[1];
        p[1] = skip;
        return saved;
    }

    public static void liveEnd(Object saved) {
        if (saved == null) {
            return;
        }
        Object[] p = buffers.get();
        if (p != null) {
            p[1] = saved;
        }
    }

    /**
     * Record: records the exchange `payload` for the request line `input`; returns null.
     * Replay: the recorded payload (the request line is checked), or null to run live.
     */
    public static byte[] httpEvent(String input, byte[] payload) {
        return httpEvent0(input, payload);
    }

    /** Record: a body chunk of exchange `x`, or its end (`end`: "" complete, else the error). */
    public static void httpSide(long x, byte[] chunk, String end) {
        if (mode == 1) {
            httpSide0(x, chunk, end);
        }
    }

    /** Replay: exchange `x`'s body chunks (byte[]) and, if recorded, its end (a String). */
    public static Object[] httpBody(long x) {
        return httpBody0(x);
    }

    private static native byte[] httpEvent0(String input, byte[] payload);

    private static native void httpSide0(long x, byte[] chunk, String end);

    private static native Object[] httpBody0(long x);

    /** This thread's buffer (see {@link #skip} and event()), or null if its calls are not events. */
    private static long[] buffer() {
        Thread t = Thread.currentThread();
        Object[] p = last;
        if (p == null || p[0] != t) {
            ThreadLocal<Object[]> tl = buffers;
            if (tl == null) {
                return null;
            }
            p = tl.get();
            if (p == null) {
                p = attach(tl, t);
            }
            last = p;
        }
        long[] b = (long[]) p[1];
        return b == skip ? null : b;
    }

    private static Object[] attach(ThreadLocal<Object[]> tl, Thread t) {
        long[] b;
        if (isService(t)) {
            b = skip;
        } else if (mode == 1) {
            // Record: every platform thread, daemon or not, buffers in native memory that
            // the flusher and VMDeath drain. A virtual thread has no ThreadEnd to free a
            // buffer by, and moves between carriers: it records each call.
            boolean virtual = t.isDaemon() && t.getClass().getName().equals("java.lang.VirtualThread");
            // Names make logical threads stable across runs (creation order names them).
            long a = attach0(t.getName(), null, !virtual);
            b = a != 0L || virtual ? new long[] {a} : skip;
        } else {
            // Replay buffers only for non-daemon threads: their ThreadEnd checks that no
            // fetched value is left unused (a daemon thread may still run at VMDeath).
            b = new long[t.isDaemon() ? 1 : 3 + capacity];
            b[0] = b.length == 1 ? 1 : 3;
            if (b.length > 1) {
                b[1] = 3;
                b[2] = -1;
            }
            attach0(t.getName(), b, false);
        }
        Object[] p = new Object[] {t, b};
        tl.set(p);
        return p;
    }

    /**
     * JDK service threads (Reference Handler, Finalizer, Signal Dispatcher, Common-Cleaner,
     * Attach Listener, ...) read the clock when timing says so, not when the program does:
     * their calls are never events, so they can never make replay diverge.
     */
    private static boolean isService(Thread t) {
        if (t instanceof InnocuousThread) {
            return true;
        }
        ThreadGroup g = t.getThreadGroup();
        if (g == null || g.getParent() == null) {
            return true; // the system group holds the JDK's own threads
        }
        String n = t.getName();
        // HttpClient's selector thread and its default pool's workers: exchanges are recorded
        // whole at the API (jdk.internal.net.http.ReplayHttp), and these never run in replay.
        if (n.startsWith("HttpClient-") && (n.endsWith("-SelectorManager") || n.contains("-Worker-"))) {
            return true;
        }
        return n.equals("Reference Handler") || n.equals("Finalizer") || n.equals("Signal Dispatcher")
            || n.equals("Common-Cleaner") || n.equals("Attach Listener") || n.equals("Notification Thread");
    }

    /** Called by the agent at VMInit, once the already-loaded classes are hooked. */
    private static void init(int m, long addr, int cap) {
        unsafe = Unsafe.getUnsafe();
        buffers = new ThreadLocal<>();
        skip = new long[1];
        capacity = cap;
        limit = 1 + 2 * (long) cap;
        seqAddr = addr;
        poolLock = new Object();
        taskNumbers = new java.util.WeakHashMap<>();
        offers = new java.util.WeakHashMap<>();
        stashes = new java.util.WeakHashMap<>();
        selStash = new java.util.IdentityHashMap<>();
        atomLock = new Object();
        try {
            Thread.class.getDeclaredMethod("sleepNanos", long.class);
            sleepNanosHooked = true;
        } catch (NoSuchMethodException e) {
            sleepNanosHooked = false;
        }
        mode = m;
        // System's clock natives go through the hooks too (src/reflected.rs): reflection and
        // method handles call them without a call site the class hook could redirect. Bound
        // from here, a class of System's loader, so the JVM does not warn.
        bindClocks0();
    }

    private static native void bindClocks0();

    /**
     * JDK classes whose static initializer would take events, initialized by the agent at
     * VMInit on the main thread before the program runs. A class initializer runs once, on
     * whichever thread first uses the class: left to the program, its events would belong to
     * another thread in replay whenever threads race to the class (six threads starting on
     * ThreadLocalRandom together), and a thread waiting for its turn inside the initializer
     * blocks every other thread that needs the class (an Instant.now first called by pool
     * threads stalled replay).
     *
     * live (called before init, hooks off): ThreadLocalRandom and SplittableRandom, whose
     * initializers only make the base of seeders whose every value a thread takes is an event
     * of its own (seedThreadLocalRandom, seedSplittableRandom): their clock reads and seed need
     * not be events. Otherwise (hooks on): java.time.Clock, whose clock read is the offset of
     * every Instant.now (getNanoTimeAdjustment's input): one event of main, at the same place
     * in every run. Math.random()'s generator (a `new Random()`: a seed and a clock read, made
     * by whichever thread calls Math.random first) is made live here too: every value a thread
     * takes from it is an event of its own (random()). ForkJoinPool (hooks on): its
     * initializer reads availableProcessors for the common pool's parallelism, an event of
     * whichever thread first needed the pool (CompletableFuture, parallel streams,
     * HttpClient, Process): an idle pool worker's in the recording, where the hook it waited
     * in ran it live, main's in replay, a divergence every time. One event of main now.
     */
    private static void preinit(boolean live) {
        String[] names = live
            ? new String[] {"java.util.concurrent.ThreadLocalRandom", "java.util.SplittableRandom",
                "java.lang.Math$RandomNumberGeneratorHolder"}
            : new String[] {"java.time.Clock", "java.util.concurrent.ForkJoinPool"};
        for (String n : names) {
            try {
                Class.forName(n, true, null);
            } catch (Throwable t) {
                // Not in this JDK: nothing to do.
            }
        }
    }

    /** Called by the agent when it stops (VMDeath) or disables itself: calls run live. */
    private static void stop() {
        mode = 0;
    }

    /**
     * The calling Java stack, for divergence reports. The JDK's stream and encoder frames on
     * top (a println is 12 of them before the program's own frame) are counted, not shown, so
     * the 20 frames shown are the program's.
     */
    private static String stack() {
        StackTraceElement[] st = new Throwable().getStackTrace();
        StringBuilder sb = new StringBuilder();
        int shown = 0;
        int io = 0;
        for (StackTraceElement e : st) {
            String c = e.getClassName();
            if (c.equals("java.lang.ReplayHooks")) {
                continue;
            }
            if (shown == 0 && (c.startsWith("java.io.") || c.startsWith("sun.nio.cs.")
                    || c.equals("java.lang.System$Out"))) {
                io++;
                continue;
            }
            if (io > 0) {
                sb.append("    (").append(io).append(" JDK stream frames)\n");
                io = 0;
            }
            if (shown == 20) {
                sb.append("    ...\n");
                break;
            }
            sb.append("    at ").append(e.toString()).append('\n');
            shown++;
        }
        return sb.toString();
    }

    /**
     * Names the calling thread's logical thread. Record: makes the thread's native buffer if
     * `buffered` and returns its address (0: none). Replay: keeps `buffer` for ThreadEnd.
     */
    private static native long attach0(String name, long[] buffer, boolean buffered);

    /** Record: hands this thread's full native buffer to the core. */
    private static native void flush0();

    private static native void record0(int kind, long value, long arg);

    private static native long replay0(int kind, long live, long arg);

    /** Replay: serves this call from the next run of recorded events, refilling b. */
    private static native long run0(int kind, long live, long arg, long[] b);

    /** Replay: reports the pending values of b as a divergence (a file call came first). */
    private static native void pending0(long[] b);
}
