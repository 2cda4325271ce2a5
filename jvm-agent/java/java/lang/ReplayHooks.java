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
        // -1: replay runs live (gone live, or the agent stopped).
        long r = b.length > 1 ? run0(K_SLEEP, -1L, t, b) : replay0(K_SLEEP, -1L, t);
        if (r != 0) {
            sleepLive(t, nanos);
        }
    }

    private static void sleepLive(long t, boolean nanos) throws InterruptedException {
        if (nanos) {
            sleepNanos0(t);
        } else {
            Thread.sleep(t);
        }
    }

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
        try {
            Thread.class.getDeclaredMethod("sleepNanos", long.class);
            sleepNanosHooked = true;
        } catch (NoSuchMethodException e) {
            sleepNanosHooked = false;
        }
        mode = m;
    }

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
     * in every run.
     */
    private static void preinit(boolean live) {
        String[] names = live
            ? new String[] {"java.util.concurrent.ThreadLocalRandom", "java.util.SplittableRandom"}
            : new String[] {"java.time.Clock"};
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
