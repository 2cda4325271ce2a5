//! Constant-pool rewriting: redirect `System.nanoTime()J`, `System.currentTimeMillis()J`,
//! `jdk.internal.misc.VM.getNanoTimeAdjustment(J)J` and
//! `sun.security.provider.SeedGenerator.getSystemEntropy()[B` to the hook class.
//!
//! Why the constant pool and not the bytecode: the hook has the same names and descriptors,
//! so changing only those Methodrefs' `class_index` (to a Class entry appended at the end of
//! the pool) redirects every `invokestatic` and every `MethodHandle` constant that names them,
//! with no change to code lengths, offsets or StackMapTables. C1/C2 compile the call to the
//! hook like any other call, so JIT-hot code stays hooked (rebinding the native method would
//! not: the JIT intrinsifies the original).
//!
//! The parser never trusts its input: every read is bounds-checked and any problem is an
//! `Err`, on which the caller leaves the class unchanged.

/// The clocks: the first [`CLOCK_TARGETS`] entries of [`TARGETS`].
const CLOCK_TARGETS: usize = 3;

/// The methods redirected to the hook class: (class, name, descriptor).
pub const TARGETS: &[(&str, &str, &str)] = &[
    ("java/lang/System", "nanoTime", "()J"),
    ("java/lang/System", "currentTimeMillis", "()J"),
    ("jdk/internal/misc/VM", "getNanoTimeAdjustment", "(J)J"),
    // Timed sleeps, completed at their recorded turn in replay (src/lib.rs, "Sleeps"): JDK 17's
    // native `Thread.sleep(long)`, and JDK 21+'s private `sleepNanos(long)` that all of
    // Thread's sleeps call (the JDK 21+ public `sleep(long)` hook then just sleeps).
    ("java/lang/Thread", "sleep", "(J)V"),
    ("java/lang/Thread", "sleepNanos", "(J)V"),
    // `new Random()`'s seed uniquifier, a shared atomic (src/seeds.rs).
    ("java/util/Random", "seedUniquifier", "()J"),
    // Math.random(): one generator every thread shares, so each value depends on the order in
    // which threads call it (src/seeds.rs).
    ("java/lang/Math", "random", "()D"),
    // What SHA1PRNG's and the DRBG's seeders mix in besides /dev/random (src/entropy.rs).
    (
        "sun/security/provider/SeedGenerator",
        "getSystemEntropy",
        "()[B",
    ),
    // The seeds SHA1PRNG and DRBG read from /dev/random (src/entropy.rs).
    (
        "sun/security/provider/SeedGenerator",
        "generateSeed",
        "([B)V",
    ),
];

/// A virtual call replaced, in one class, by a static call of the hook class that takes the
/// receiver as its first argument: `invokevirtual` and `invokestatic` with a 2-byte pool
/// index are both 3 bytes and leave the same types on the stack, so no offset, exception
/// table or StackMapTable frame changes. An `invokeinterface` (5 bytes: index, count, 0)
/// becomes `invokestatic` and two `nop`s: no branch targets a `nop` in the middle of what was
/// one instruction, so frames stay right too. Used where a value comes from an atomic shared
/// by threads whose order races (src/seeds.rs), and where a pool's worker takes its next task
/// from a queue other workers race for (src/pools.rs).
pub struct Site {
    /// The class whose code is changed (internal name).
    pub class: &'static str,
    /// The called method's class or interface; `interface`: an InterfaceMethodref called
    /// with `invokeinterface`.
    pub owner: &'static str,
    pub interface: bool,
    pub name: &'static str,
    pub desc: &'static str,
    /// The hook class's static method called instead.
    pub hook: &'static str,
    pub hook_desc: &'static str,
}

impl Site {
    /// The pool entry's tag of the called method.
    fn tag(&self) -> u8 {
        if self.interface {
            INTERFACE_METHODREF
        } else {
            METHODREF
        }
    }

    /// The call instruction replaced.
    fn op(&self) -> u8 {
        if self.interface {
            INVOKEINTERFACE
        } else {
            INVOKEVIRTUAL
        }
    }
}

const SEEDER: &str = "(Ljava/util/concurrent/atomic/AtomicLong;J)J";

/// Timed waits: every `invokevirtual` of `wait(J)V`, whatever class the Methodref names
/// (`this.wait(20)` names the caller's class; `wait` is Object's final method), in the
/// program's classes and in `java.util.Timer` and its thread (which waits for its next task
/// so), becomes `ReplayHooks.waitTimed(Object, long)`: its return comes at its recorded turn
/// in replay. Their `notify()` and `notifyAll()` calls are counted in replay (a timed wait
/// one ended in the recording waits for one in replay too). Not in the JDK's other classes, whose timed waits (reference
/// queues, the cleaner) run on the garbage collector's timing, nor in the [`LIVE_CLOCKS`]
/// classes, left live on purpose.
pub static MONITOR_SITES: [Site; 3] = [
    Site {
        class: "",
        owner: "",
        interface: false,
        name: "wait",
        desc: "(J)V",
        hook: "waitTimed",
        hook_desc: "(Ljava/lang/Object;J)V",
    },
    Site {
        class: "",
        owner: "",
        interface: false,
        name: "notify",
        desc: "()V",
        hook: "notifyOne",
        hook_desc: "(Ljava/lang/Object;)V",
    },
    Site {
        class: "",
        owner: "",
        interface: false,
        name: "notifyAll",
        desc: "()V",
        hook: "notifyEvery",
        hook_desc: "(Ljava/lang/Object;)V",
    },
];

/// Whether the timed waits of class `name` are hooked ([`MONITOR_SITES`]).
fn timed_waits_hooked(name: &[u8]) -> bool {
    const JDK: [&[u8]; 6] = [
        b"java/",
        b"javax/",
        b"jdk/",
        b"sun/",
        b"com/sun/",
        b"org/xml/sax/",
    ];
    if name == b"java/util/TimerThread" || name == b"java/util/Timer" {
        return true;
    }
    !JDK.iter().any(|p| name.starts_with(p)) && !live_clocks(name)
}

/// Every `seeder.getAndAdd` of `ThreadLocalRandom` (`localInit`, `nextSecondarySeed`; JDK 17
/// and 25) and `defaultGen.getAndAdd` of `SplittableRandom()`: the only `getAndAdd` calls of
/// those classes.
pub const SITES: &[Site] = &[
    Site {
        class: "java/util/concurrent/ThreadLocalRandom",
        owner: "java/util/concurrent/atomic/AtomicLong",
        name: "getAndAdd",
        desc: "(J)J",
        hook: "seedThreadLocalRandom",
        hook_desc: SEEDER,
        interface: false,
    },
    Site {
        class: "java/util/SplittableRandom",
        owner: "java/util/concurrent/atomic/AtomicLong",
        name: "getAndAdd",
        desc: "(J)J",
        hook: "seedSplittableRandom",
        hook_desc: SEEDER,
        interface: false,
    },
    // ThreadPoolExecutor: `workQueue.offer(task)` in execute, `workQueue.take()` and
    // `workQueue.poll(keepAlive, NANOSECONDS)` in getTask, its only calls of those methods
    // (JDK 17 and 25): which worker takes which task comes back (src/pools.rs).
    Site {
        class: TPE,
        owner: QUEUE,
        interface: true,
        name: "offer",
        desc: "(Ljava/lang/Object;)Z",
        hook: "poolOffer",
        hook_desc: "(Ljava/util/concurrent/BlockingQueue;Ljava/lang/Object;)Z",
    },
    Site {
        class: TPE,
        owner: QUEUE,
        interface: true,
        name: "take",
        desc: NO_ARGS,
        hook: "poolTake",
        hook_desc: QUEUE_ONLY,
    },
    Site {
        class: TPE,
        owner: QUEUE,
        interface: true,
        name: "poll",
        desc: TIMED,
        hook: "poolPoll",
        hook_desc: QUEUE_TIMED,
    },
    // ExecutorCompletionService: `executor.execute(new QueueingFuture(f, completionQueue))`
    // in submit numbers `f`, and `completionQueue.take()`, `poll()`, `poll(timeout, unit)`
    // give each caller the future it got in the recording (which task finished first is a
    // race). Its only calls of those methods (JDK 17 and 25).
    Site {
        class: ECS,
        owner: "java/util/concurrent/Executor",
        interface: true,
        name: "execute",
        desc: "(Ljava/lang/Runnable;)V",
        hook: "ecsExecute",
        hook_desc: "(Ljava/util/concurrent/Executor;Ljava/lang/Runnable;)V",
    },
    Site {
        class: ECS,
        owner: QUEUE,
        interface: true,
        name: "take",
        desc: NO_ARGS,
        hook: "ecsTake",
        hook_desc: QUEUE_ONLY,
    },
    Site {
        class: ECS,
        owner: QUEUE,
        interface: true,
        name: "poll",
        desc: NO_ARGS,
        hook: "ecsPollNow",
        hook_desc: QUEUE_ONLY,
    },
    Site {
        class: ECS,
        owner: QUEUE,
        interface: true,
        name: "poll",
        desc: TIMED,
        hook: "ecsPoll",
        hook_desc: QUEUE_TIMED,
    },
    // HttpClient's facade: its calls of the client's send and sendAsync go to the exchange
    // hook (src/http.rs; hook class jdk/internal/net/http/ReplayHttp). JDK 17 and 25.
    Site {
        class: FACADE,
        owner: CLIENT_IMPL,
        interface: false,
        name: "send",
        desc: "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)Ljava/net/http/HttpResponse;",
        hook: "send",
        hook_desc: "(Ljdk/internal/net/http/HttpClientImpl;Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)Ljava/net/http/HttpResponse;",
    },
    Site {
        class: FACADE,
        owner: CLIENT_IMPL,
        interface: false,
        name: "sendAsync",
        desc: "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)Ljava/util/concurrent/CompletableFuture;",
        hook: "sendAsync",
        hook_desc: "(Ljdk/internal/net/http/HttpClientImpl;Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)Ljava/util/concurrent/CompletableFuture;",
    },
    Site {
        class: FACADE,
        owner: CLIENT_IMPL,
        interface: false,
        name: "sendAsync",
        desc: "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;Ljava/net/http/HttpResponse$PushPromiseHandler;)Ljava/util/concurrent/CompletableFuture;",
        hook: "sendAsync",
        hook_desc: "(Ljdk/internal/net/http/HttpClientImpl;Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;Ljava/net/http/HttpResponse$PushPromiseHandler;)Ljava/util/concurrent/CompletableFuture;",
    },
    // HttpClient's SelectorManager: `deregistrations`/`registrations` taken in its loop
    // (`for (... : list)` then `list.clear()`), and its other lists' iterations and clears,
    // which the hooks pass through (src/selector.rs). JDK 17 and 25.
    Site {
        class: SELECTOR,
        owner: "java/util/List",
        interface: true,
        name: "iterator",
        desc: "()Ljava/util/Iterator;",
        hook: "selIterator",
        hook_desc: "(Ljava/util/List;)Ljava/util/Iterator;",
    },
    Site {
        class: SELECTOR,
        owner: "java/util/List",
        interface: true,
        name: "clear",
        desc: "()V",
        hook: "selClear",
        hook_desc: "(Ljava/util/List;)V",
    },
    // HttpClient's SequentialScheduler: every operation on its `state` (its only atomic),
    // in the class and in its completer; which thread runs the task is the race they decide
    // (src/selector.rs). JDK 17 and 25.
    atomic(
        SCHEDULER,
        "get",
        "()I",
        "atomGet",
        "(Ljava/util/concurrent/atomic/AtomicInteger;)I",
    ),
    atomic(SCHEDULER, "compareAndSet", "(II)Z", "atomCas", ATOMIC_CAS),
    atomic(SCHEDULER, "set", "(I)V", "atomSet", ATOMIC_SET),
    atomic(
        COMPLETER,
        "get",
        "()I",
        "atomGet",
        "(Ljava/util/concurrent/atomic/AtomicInteger;)I",
    ),
    atomic(COMPLETER, "compareAndSet", "(II)Z", "atomCas", ATOMIC_CAS),
    atomic(COMPLETER, "set", "(I)V", "atomSet", ATOMIC_SET),
    // NativePRNG's `INSTANCE.implNextBytes(bytes)` (SecureRandom's default, UUID.randomUUID):
    // the bytes are one event of the caller (src/entropy.rs). Its /dev/urandom reads happen
    // under one lock for every thread: as events, a replayed thread waiting for its read's
    // turn held the lock the thread whose turn it was needed (UUIDs from several threads).
    // Its `implGenerateSeed(n)` (reads /dev/random) likewise.
    prng(PRNG, false),
    prng(PRNG, true),
    prng("sun/security/provider/NativePRNG$Blocking", false),
    prng("sun/security/provider/NativePRNG$Blocking", true),
    prng("sun/security/provider/NativePRNG$NonBlocking", false),
    prng("sun/security/provider/NativePRNG$NonBlocking", true),
];

const PRNG: &str = "sun/security/provider/NativePRNG";

/// NativePRNG's (or a variant's) call of `implNextBytes` or, with `seed`, `implGenerateSeed`.
const fn prng(class: &'static str, seed: bool) -> Site {
    let owner = "sun/security/provider/NativePRNG$RandomIO";
    if seed {
        Site {
            class,
            owner,
            interface: false,
            name: "implGenerateSeed",
            desc: "(I)[B",
            hook: "prngGenerateSeed",
            hook_desc: "(Ljava/lang/Object;I)[B",
        }
    } else {
        Site {
            class,
            owner,
            interface: false,
            name: "implNextBytes",
            desc: "([B)V",
            hook: "prngNextBytes",
            hook_desc: "(Ljava/lang/Object;[B)V",
        }
    }
}

const SELECTOR: &str = "jdk/internal/net/http/HttpClientImpl$SelectorManager";
const FACADE: &str = "jdk/internal/net/http/HttpClientFacade";
const CLIENT_IMPL: &str = "jdk/internal/net/http/HttpClientImpl";
const SCHEDULER: &str = "jdk/internal/net/http/common/SequentialScheduler";
const COMPLETER: &str = "jdk/internal/net/http/common/SequentialScheduler$TryEndDeferredCompleter";
const ATOMIC_CAS: &str = "(Ljava/util/concurrent/atomic/AtomicInteger;II)Z";
const ATOMIC_SET: &str = "(Ljava/util/concurrent/atomic/AtomicInteger;I)V";

/// A call of `AtomicInteger.NAME` in `class`, made a call of the hook `hook`.
const fn atomic(
    class: &'static str,
    name: &'static str,
    desc: &'static str,
    hook: &'static str,
    hook_desc: &'static str,
) -> Site {
    Site {
        class,
        owner: "java/util/concurrent/atomic/AtomicInteger",
        interface: false,
        name,
        desc,
        hook,
        hook_desc,
    }
}

/// Classes whose clock reads are never redirected (a name ending in `/` is a package and its
/// subpackages; else a class and its nested classes): in them a clock read only measures a
/// timed wait (`java.util.concurrent`'s `awaitNanos`, `FutureTask.get(timeout)`,
/// `awaitTermination`, a queue's `poll(timeout)`; `Thread.join(millis)`;
/// `Process.waitFor(timeout)`; `ReferenceQueue.remove(timeout)`), and whether such a wait
/// reads the clock at all depends on whether another thread was done first: recorded as
/// events, they made replays diverge on the race itself (ant's `ProcessDestroyer` joins a
/// thread that has ended, or not yet, with a time-out). The waits run live; what the program
/// sees of them (a task taken, a time-out) is recorded where it matters (src/pools.rs), and
/// the program's own clock reads are events as before. Class loaders, `ZipFile` and the module
/// path read the clock only for the JVM's performance counters (`ClassLoader.loadClass`,
/// `URLClassLoader.defineClass`, a jar's open): which thread loads a class first is a race
/// (groovy's threads replayed with the load in another thread), and when a jar is opened
/// depends on what was loaded before, the agent's own work included: class loading stays
/// live, its clock reads too.
const LIVE_CLOCKS: [&str; 16] = [
    "java/util/concurrent/",
    // Scala 2.11's and Akka's copies of the fork-join pool: an idle worker's timed wait read
    // the clock in a thread the recording did not have (the scala runner, 3 in 9 replays).
    "scala/concurrent/forkjoin/",
    "akka/dispatch/forkjoin/",
    // okio's timeouts (its watchdog thread checks the deadlines of every read and write in
    // flight) and okhttp 3's idle-connection cleanup: when those threads read the clock
    // depends on timing only (okhttp's replay stalled on the watchdog's reads, every time).
    "okio/AsyncTimeout",
    "okio/Timeout",
    "okhttp3/ConnectionPool",
    "okhttp3/internal/concurrent/",
    "java/lang/ref/",
    "java/lang/Thread",
    "java/lang/ProcessImpl",
    "java/lang/ProcessHandleImpl",
    "java/lang/ClassLoader",
    "java/net/URLClassLoader",
    "jdk/internal/loader/",
    "jdk/internal/module/ModulePath",
    "java/util/zip/ZipFile",
];

/// Whether class `name` is one of [`LIVE_CLOCKS`].
fn live_clocks(name: &[u8]) -> bool {
    LIVE_CLOCKS.iter().any(|c| {
        let c = c.as_bytes();
        match name.strip_prefix(c) {
            Some(rest) => c.ends_with(b"/") || rest.is_empty() || rest.starts_with(b"$"),
            None => false,
        }
    })
}

const ECS: &str = "java/util/concurrent/ExecutorCompletionService";
const TPE: &str = "java/util/concurrent/ThreadPoolExecutor";
const QUEUE: &str = "java/util/concurrent/BlockingQueue";
/// `BlockingQueue.take()` and `poll()`, and their hooks, which take the queue first.
const NO_ARGS: &str = "()Ljava/lang/Object;";
const QUEUE_ONLY: &str = "(Ljava/util/concurrent/BlockingQueue;)Ljava/lang/Object;";
/// `BlockingQueue.poll(timeout, unit)`, and its hooks.
const TIMED: &str = "(JLjava/util/concurrent/TimeUnit;)Ljava/lang/Object;";
const QUEUE_TIMED: &str =
    "(Ljava/util/concurrent/BlockingQueue;JLjava/util/concurrent/TimeUnit;)Ljava/lang/Object;";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    Truncated(usize),
    BadMagic,
    BadTag { index: u16, tag: u8 },
    BadIndex { index: u16 },
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Truncated(at) => write!(f, "class file truncated at byte {at}"),
            ParseError::BadMagic => write!(f, "not a class file (bad magic)"),
            ParseError::BadTag { index, tag } => {
                write!(f, "constant pool entry {index} has unknown tag {tag}")
            }
            ParseError::BadIndex { index } => {
                write!(f, "constant pool reference to invalid entry {index}")
            }
        }
    }
}

const UTF8: u8 = 1;
const CLASS: u8 = 7;
const METHODREF: u8 = 10;
const INTERFACE_METHODREF: u8 = 11;
const INVOKEVIRTUAL: u8 = 0xb6;
const INVOKEINTERFACE: u8 = 0xb9;
const NAME_AND_TYPE: u8 = 12;
const METHOD_HANDLE: u8 = 15;
const INVOKESTATIC: u8 = 0xb8;

#[derive(Clone, Copy, Default)]
struct Entry {
    tag: u8,
    /// Offset of the entry's tag byte in the scanned bytes.
    off: usize,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, ParseError> {
    match b.get(at..at + 2) {
        Some(s) => Ok(u16::from_be_bytes([s[0], s[1]])),
        None => Err(ParseError::Truncated(at)),
    }
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, ParseError> {
    match b.get(at..at + 4) {
        Some(s) => Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]])),
        None => Err(ParseError::Truncated(at)),
    }
}

/// A parsed constant pool: entries by index (1-based; 0 and the second slots of
/// Long/Double are empty) and where the pool ends.
struct Pool<'a> {
    bytes: &'a [u8],
    entries: Vec<Entry>,
    end: usize,
}

impl<'a> Pool<'a> {
    /// Parses `count - 1` entries starting at `start` in `bytes`.
    fn parse(bytes: &'a [u8], start: usize, count: u16) -> Result<Pool<'a>, ParseError> {
        let mut entries = vec![Entry::default(); count as usize];
        let mut p = start;
        let mut i: u16 = 1;
        while i < count {
            let tag = *bytes.get(p).ok_or(ParseError::Truncated(p))?;
            entries[i as usize] = Entry { tag, off: p };
            let size = match tag {
                UTF8 => 3 + u16_at(bytes, p + 1)? as usize,
                3 | 4 => 5,                // Integer, Float
                5 | 6 => 9,                // Long, Double: take two slots
                7 | 8 | 16 | 19 | 20 => 3, // Class, String, MethodType, Module, Package
                9..=12 | 17 | 18 => 5, // Field/Method/InterfaceMethodref, NameAndType, (Invoke)Dynamic
                15 => 4,               // MethodHandle
                _ => return Err(ParseError::BadTag { index: i, tag }),
            };
            if bytes.len() < p + size {
                return Err(ParseError::Truncated(bytes.len()));
            }
            p += size;
            i += if tag == 5 || tag == 6 { 2 } else { 1 };
        }
        if i != count {
            // A Long/Double in the last slot claims a slot past the end.
            return Err(ParseError::BadIndex { index: i });
        }
        Ok(Pool {
            bytes,
            entries,
            end: p,
        })
    }

    fn entry(&self, index: u16, tag: u8) -> Result<Entry, ParseError> {
        match self.entries.get(index as usize) {
            Some(e) if e.tag == tag && index != 0 => Ok(*e),
            _ => Err(ParseError::BadIndex { index }),
        }
    }

    fn utf8(&self, index: u16) -> Result<&'a [u8], ParseError> {
        let e = self.entry(index, UTF8)?;
        let len = u16_at(self.bytes, e.off + 1)? as usize;
        // Bounds were checked by `parse`.
        Ok(&self.bytes[e.off + 3..e.off + 3 + len])
    }

    fn ref_at(&self, e: Entry, field: usize) -> Result<u16, ParseError> {
        u16_at(self.bytes, e.off + 1 + 2 * field)
    }

    /// The index of the Methodref (`tag` METHODREF) or InterfaceMethodref `owner.name desc`.
    fn any_method_ref(
        &self,
        tag: u8,
        owner: &str,
        name: &str,
        desc: &str,
    ) -> Result<Option<u16>, ParseError> {
        for (i, e) in self.entries.iter().enumerate() {
            if e.tag != tag {
                continue;
            }
            let class = self.entry(self.ref_at(*e, 0)?, CLASS)?;
            if self.utf8(self.ref_at(class, 0)?)? != owner.as_bytes() {
                continue;
            }
            let nat = self.entry(self.ref_at(*e, 1)?, NAME_AND_TYPE)?;
            if self.utf8(self.ref_at(nat, 0)?)? == name.as_bytes()
                && self.utf8(self.ref_at(nat, 1)?)? == desc.as_bytes()
            {
                return Ok(Some(i as u16));
            }
        }
        Ok(None)
    }

    /// The class's own internal name (`this_class`, after the pool).
    fn this_name(&self) -> Result<&'a [u8], ParseError> {
        let this = self.entry(u16_at(self.bytes, self.end + 2)?, CLASS)?;
        self.utf8(self.ref_at(this, 0)?)
    }

    /// The [`SITES`] of this class whose call its pool names: (site, Methodref index).
    fn sites(&self) -> Result<Vec<(&'static Site, u16)>, ParseError> {
        // A class whose this_class is no Class entry is not one of the JDK's: no site (the
        // JVM rejects it anyway; the clock redirects do not depend on its name).
        let Ok(this) = self.this_name() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for s in SITES.iter().filter(|s| s.class.as_bytes() == this) {
            if let Some(i) = self.any_method_ref(s.tag(), s.owner, s.name, s.desc)? {
                out.push((s, i));
            }
        }
        if timed_waits_hooked(this) {
            for (i, e) in self.entries.iter().enumerate() {
                if e.tag != METHODREF {
                    continue;
                }
                let nat = self.entry(self.ref_at(*e, 1)?, NAME_AND_TYPE)?;
                let name = self.utf8(self.ref_at(nat, 0)?)?;
                let desc = self.utf8(self.ref_at(nat, 1)?)?;
                if let Some(s) = MONITOR_SITES
                    .iter()
                    .find(|s| s.name.as_bytes() == name && s.desc.as_bytes() == desc)
                {
                    out.push((s, i as u16));
                }
            }
        }
        Ok(out)
    }

    /// Offsets (into `bytes`) of the `class_index` fields of Methodrefs naming a target
    /// (no clock, [`CLOCK_TARGETS`], in a class of [`LIVE_CLOCKS`]: its sleeps and seeds are
    /// still hooked).
    fn target_refs(&self) -> Result<Vec<usize>, ParseError> {
        let mut out = Vec::new();
        let targets = if self.this_name().is_ok_and(live_clocks) {
            &TARGETS[CLOCK_TARGETS..]
        } else {
            TARGETS
        };
        for e in &self.entries {
            if e.tag != METHODREF {
                continue;
            }
            let class = self.entry(self.ref_at(*e, 0)?, CLASS)?;
            let nat = self.entry(self.ref_at(*e, 1)?, NAME_AND_TYPE)?;
            let class_name = self.utf8(self.ref_at(class, 0)?)?;
            // Cheap reject first: almost no Methodref names one of the target classes.
            if !targets.iter().any(|t| t.0.as_bytes() == class_name) {
                continue;
            }
            let name = self.utf8(self.ref_at(nat, 0)?)?;
            let desc = self.utf8(self.ref_at(nat, 1)?)?;
            if targets.iter().any(|t| {
                t.0.as_bytes() == class_name && t.1.as_bytes() == name && t.2.as_bytes() == desc
            }) {
                out.push(e.off + 1);
            }
        }
        Ok(out)
    }
}

/// Methods whose clock reads only feed the JVM's own statistics (`jdk.internal.perf`
/// counters, read by tools such as jstat, never by the program): their calls need no hook.
/// Without this list `ClassLoader` (JDK 17 and 25), which the JVM loads before VMInit, is
/// retransformed at every start for them, and every `loadClass` of a custom class loader is
/// two events that replay must match although no program value depends on them.
/// A class that reads a clock anywhere else is still rewritten as a whole.
pub const STATISTICS_ONLY: &[(&str, &str, &str)] = &[
    (
        "java/lang/ClassLoader",
        "loadClass",
        "(Ljava/lang/String;Z)Ljava/lang/Class;",
    ),
    (
        "jdk/internal/module/ModuleBootstrap$Counters",
        "start",
        "()V",
    ),
    (
        "jdk/internal/module/ModuleBootstrap$Counters",
        "add",
        "(Ljava/lang/String;)V",
    ),
    (
        "jdk/internal/module/ModuleBootstrap$Counters",
        "publish",
        "(Ljava/lang/String;)V",
    ),
    (
        "jdk/internal/perf/PerfCounter",
        "addElapsedTimeFrom",
        "(J)V",
    ),
];

/// Where a class file calls the target methods (see [`target_calls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calls {
    /// Nowhere, or only in [`STATISTICS_ONLY`] methods: nothing to hook.
    None,
    /// Only from `<clinit>` (besides statistics): once the class is initialized, its clock
    /// calls can never run again (`java.util.ImmutableCollections` seeds its SALT so).
    ClinitOnly,
    /// Elsewhere, by a MethodHandle constant (a lambda or bootstrap argument, callable at any
    /// time), or the pool names a target but no use was found (nothing to conclude from).
    Anywhere,
}

/// Where a class file calls the target methods.
///
/// The code of each method is searched for the bytes of `invokestatic #target` anywhere, not
/// instruction by instruction: an operand that happens to look like one only moves the
/// answer towards `Anywhere`, which is always safe.
pub fn target_calls(class: &[u8]) -> Result<Calls, ParseError> {
    if class.len() < 10 {
        return Err(ParseError::Truncated(class.len()));
    }
    if class[0..4] != [0xCA, 0xFE, 0xBA, 0xBE] {
        return Err(ParseError::BadMagic);
    }
    let pool = Pool::parse(class, 10, u16_at(class, 8)?)?;
    if !pool.sites()?.is_empty() {
        return Ok(Calls::Anywhere);
    }
    let refs = pool.target_refs()?;
    let targets: Vec<u16> = (1..pool.entries.len() as u16)
        .filter(|&i| refs.contains(&(pool.entries[i as usize].off + 1)))
        .collect();
    if targets.is_empty() {
        return Ok(Calls::None);
    }
    for e in pool.entries.iter().filter(|e| e.tag == METHOD_HANDLE) {
        if targets.contains(&u16_at(class, e.off + 2)?) {
            return Ok(Calls::Anywhere);
        }
    }
    // access, this, super; interfaces; fields; methods (class file format, JVMS 4.1).
    let this = pool.entry(u16_at(class, pool.end + 2)?, CLASS)?;
    let this = pool.utf8(pool.ref_at(this, 0)?)?;
    let mut p = pool.end + 6;
    p += 2 + 2 * u16_at(class, p)? as usize;
    let (mut in_clinit, mut in_stats, mut elsewhere) = (false, false, false);
    for part in 0..2 {
        let count = u16_at(class, p)?;
        p += 2;
        for _ in 0..count {
            let name = pool.utf8(u16_at(class, p + 2)?)?;
            let desc = pool.utf8(u16_at(class, p + 4)?)?;
            let attributes = u16_at(class, p + 6)?;
            p += 8;
            for _ in 0..attributes {
                let len = u32_at(class, p + 2)? as usize;
                let body = class
                    .get(p + 6..p + 6 + len)
                    .ok_or(ParseError::Truncated(p))?;
                if part == 1 && pool.utf8(u16_at(class, p)?)? == b"Code" {
                    let code_len = u32_at(body, 4)? as usize;
                    let code = body.get(8..8 + code_len).ok_or(ParseError::Truncated(p))?;
                    let calls = code.windows(3).any(|w| {
                        w[0] == INVOKESTATIC && targets.contains(&u16::from_be_bytes([w[1], w[2]]))
                    });
                    if calls {
                        if name == b"<clinit>" {
                            in_clinit = true;
                        } else if STATISTICS_ONLY.iter().any(|s| {
                            s.0.as_bytes() == this
                                && s.1.as_bytes() == name
                                && s.2.as_bytes() == desc
                        }) {
                            in_stats = true;
                        } else {
                            elsewhere = true;
                        }
                    }
                }
                p += 6 + len;
            }
        }
    }
    // The class's own attributes follow: a file cut before them is not a class file.
    u16_at(class, p)?;
    Ok(if elsewhere {
        Calls::Anywhere
    } else if in_clinit {
        Calls::ClinitOnly
    } else if in_stats {
        Calls::None
    } else {
        Calls::Anywhere
    })
}

/// Whether every use of a target method in a class file is a call from `<clinit>` (or a
/// statistics-only method), with at least one in `<clinit>`.
pub fn targets_only_in_clinit(class: &[u8]) -> Result<bool, ParseError> {
    Ok(target_calls(class)? == Calls::ClinitOnly)
}

/// Whether a constant pool (as JVMTI `GetConstantPool` returns it: `count` and the entries'
/// bytes) references a target method; used to pick loaded classes to retransform.
pub fn pool_references_targets(count: u16, pool: &[u8]) -> Result<bool, ParseError> {
    let p = Pool::parse(pool, 0, count)?;
    if !p.target_refs()?.is_empty() {
        return Ok(true);
    }
    // The pool alone does not name its class: any pool naming a site's call may be one.
    for s in SITES {
        if p.any_method_ref(s.tag(), s.owner, s.name, s.desc)?
            .is_some()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The length of the instruction at `pc` of `code` (JVMS 6.5).
fn insn_len(code: &[u8], pc: usize) -> Result<usize, ParseError> {
    let op = *code.get(pc).ok_or(ParseError::Truncated(pc))?;
    Ok(match op {
        0x10 | 0x12 | 0x15..=0x19 | 0x36..=0x3a | 0xa9 | 0xbc => 2,
        0x11
        | 0x13
        | 0x14
        | 0x84
        | 0x99..=0xa8
        | 0xb2..=0xb8
        | 0xbb
        | 0xbd
        | 0xc0
        | 0xc1
        | 0xc6
        | 0xc7 => 3,
        0xc5 => 4,
        0xb9 | 0xba | 0xc8 | 0xc9 => 5,
        0xc4 => {
            if *code.get(pc + 1).ok_or(ParseError::Truncated(pc))? == 0x84 {
                6
            } else {
                4
            }
        }
        0xaa | 0xab => {
            let base = pc + 1 + (4 - (pc + 1) % 4) % 4;
            let n = if op == 0xaa {
                let low = u32_at(code, base + 4)? as i32 as i64;
                let high = u32_at(code, base + 8)? as i32 as i64;
                if high < low {
                    return Err(ParseError::Truncated(pc));
                }
                12 + 4 * (high - low + 1) as usize
            } else {
                8 + 8 * u32_at(code, base + 4)? as usize
            };
            base + n - pc
        }
        0x00..=0x0f
        | 0x1a..=0x35
        | 0x3b..=0x83
        | 0x85..=0x98
        | 0xac..=0xb1
        | 0xbe
        | 0xbf
        | 0xc2
        | 0xc3 => 1,
        _ => return Err(ParseError::Truncated(pc)),
    })
}

/// Offsets (into `class`) of the `op #index` instructions (`invokevirtual` or
/// `invokeinterface`) of every method's code.
fn calls_of(class: &[u8], pool: &Pool, op: u8, index: u16) -> Result<Vec<usize>, ParseError> {
    let mut out = Vec::new();
    let mut p = pool.end + 6;
    p += 2 + 2 * u16_at(class, p)? as usize;
    for part in 0..2 {
        let count = u16_at(class, p)?;
        p += 2;
        for _ in 0..count {
            let attributes = u16_at(class, p + 6)?;
            p += 8;
            for _ in 0..attributes {
                let len = u32_at(class, p + 2)? as usize;
                if part == 1 && pool.utf8(u16_at(class, p)?)? == b"Code" {
                    let start = p + 6 + 8;
                    let code_len = u32_at(class, p + 6 + 4)? as usize;
                    let code = class
                        .get(start..start + code_len)
                        .ok_or(ParseError::Truncated(p))?;
                    let mut pc = 0;
                    while pc < code.len() {
                        if code[pc] == op && u16_at(code, pc + 1)? == index {
                            out.push(start + pc);
                        }
                        pc += insn_len(code, pc)?;
                    }
                }
                p += 6 + len;
            }
        }
    }
    u16_at(class, p)?;
    Ok(out)
}

/// Rewrites a class file so that calls of the target methods go to `hook_class` (an
/// internal name like `java/lang/ReplayHooks`). `Ok(None)`: nothing to change, or the pool
/// is too full to append two entries.
pub fn rewrite(class: &[u8], hook_class: &str) -> Result<Option<Vec<u8>>, ParseError> {
    if class.len() < 10 {
        return Err(ParseError::Truncated(class.len()));
    }
    if class[0..4] != [0xCA, 0xFE, 0xBA, 0xBE] {
        return Err(ParseError::BadMagic);
    }
    let count = u16_at(class, 8)?;
    let pool = Pool::parse(class, 10, count)?;
    let refs = pool.target_refs()?;
    let sites = pool.sites()?;
    // (offset of an invokevirtual or invokeinterface, the index of its hook's Methodref)
    let mut calls = Vec::new();
    for (i, (site, index)) in sites.iter().enumerate() {
        for at in calls_of(class, &pool, site.op(), *index)? {
            calls.push((at, count + 2 + 4 * i as u16 + 3));
        }
    }
    if refs.is_empty() && calls.is_empty() {
        return Ok(None);
    }
    let Some(new_count) = count.checked_add(2 + 4 * sites.len() as u16) else {
        return Ok(None);
    };
    let utf8_index = count;
    let class_index = count + 1;
    let name = hook_class.as_bytes();
    let mut out = Vec::with_capacity(class.len() + name.len() + 6);
    out.extend_from_slice(&class[..pool.end]);
    out[8..10].copy_from_slice(&new_count.to_be_bytes());
    for at in refs {
        out[at..at + 2].copy_from_slice(&class_index.to_be_bytes());
    }
    let utf8 = |out: &mut Vec<u8>, s: &str| {
        out.push(UTF8);
        out.extend_from_slice(&(s.len() as u16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    utf8(&mut out, hook_class);
    out.push(CLASS);
    out.extend_from_slice(&utf8_index.to_be_bytes());
    for (i, (site, _)) in sites.iter().enumerate() {
        let base = count + 2 + 4 * i as u16;
        utf8(&mut out, site.hook);
        utf8(&mut out, site.hook_desc);
        out.push(NAME_AND_TYPE);
        out.extend_from_slice(&base.to_be_bytes());
        out.extend_from_slice(&(base + 1).to_be_bytes());
        out.push(METHODREF);
        out.extend_from_slice(&class_index.to_be_bytes());
        out.extend_from_slice(&(base + 2).to_be_bytes());
    }
    let shift = out.len() - pool.end;
    out.extend_from_slice(&class[pool.end..]);
    for (at, index) in calls {
        if out[at + shift] == INVOKEINTERFACE {
            // The count and zero bytes become two nops.
            out[at + shift + 3..at + shift + 5].copy_from_slice(&[0, 0]);
        }
        out[at + shift] = INVOKESTATIC;
        out[at + shift + 1..at + shift + 3].copy_from_slice(&index.to_be_bytes());
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_clock_classes_are_the_listed_ones_their_nested_classes_and_packages() {
        for live in [
            "java/lang/Thread",
            "java/lang/ProcessImpl$1",
            "java/util/concurrent/locks/AbstractQueuedSynchronizer",
            "java/lang/ref/ReferenceQueue",
            "java/lang/ClassLoader",
            "jdk/internal/loader/BuiltinClassLoader",
            "java/util/zip/ZipFile$Source",
        ] {
            assert!(live_clocks(live.as_bytes()), "{live}");
        }
        for redirected in [
            "java/lang/ThreadLocal",
            "java/lang/System",
            "java/util/Timer",
        ] {
            assert!(!live_clocks(redirected.as_bytes()), "{redirected}");
        }
    }

    /// Builds class files entry by entry for the tests.
    #[derive(Default)]
    struct Cp {
        bytes: Vec<u8>,
        next: u16,
    }

    impl Cp {
        fn new() -> Cp {
            Cp {
                bytes: Vec::new(),
                next: 1,
            }
        }
        fn push(&mut self, tag: u8, body: &[u8], slots: u16) -> u16 {
            self.bytes.push(tag);
            self.bytes.extend_from_slice(body);
            let i = self.next;
            self.next += slots;
            i
        }
        fn utf8(&mut self, s: &str) -> u16 {
            let mut b = (s.len() as u16).to_be_bytes().to_vec();
            b.extend_from_slice(s.as_bytes());
            self.push(UTF8, &b, 1)
        }
        fn two(&mut self, tag: u8, a: u16, b: u16) -> u16 {
            let mut v = a.to_be_bytes().to_vec();
            v.extend_from_slice(&b.to_be_bytes());
            self.push(tag, &v, 1)
        }
        fn class(&mut self, name: &str) -> u16 {
            let n = self.utf8(name);
            self.push(CLASS, &n.to_be_bytes(), 1)
        }
        fn method(&mut self, class: u16, name: &str, desc: &str) -> u16 {
            let n = self.utf8(name);
            let d = self.utf8(desc);
            let nat = self.two(NAME_AND_TYPE, n, d);
            self.two(METHODREF, class, nat)
        }
        fn class_file(&self, tail: &[u8]) -> Vec<u8> {
            let mut v = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 61];
            v.extend_from_slice(&self.next.to_be_bytes());
            v.extend_from_slice(&self.bytes);
            v.extend_from_slice(tail);
            v
        }
    }

    const TAIL: &[u8] = &[0, 0x21, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0];

    fn sample() -> (Cp, u16, u16, u16, u16) {
        let mut cp = Cp::new();
        let sys = cp.class("java/lang/System");
        let nano = cp.method(sys, "nanoTime", "()J");
        cp.push(5, &[0; 8], 2); // a Long: two slots
        let millis = cp.method(sys, "currentTimeMillis", "()J");
        let other = cp.method(sys, "identityHashCode", "(Ljava/lang/Object;)I");
        let vm = cp.class("jdk/internal/misc/VM");
        cp.method(vm, "getNanoTimeAdjustment", "(J)J");
        cp.push(15, &[6, 0, nano as u8], 1); // MethodHandle to nanoTime
        (cp, sys, nano, millis, other)
    }

    fn reparse(b: &[u8]) -> (u16, Vec<Entry>) {
        let count = u16_at(b, 8).unwrap();
        let p = Pool::parse(b, 10, count).unwrap();
        (count, p.entries)
    }

    #[test]
    fn redirects_only_the_target_methodrefs() {
        let (cp, sys, nano, millis, other) = sample();
        let class = cp.class_file(TAIL);
        let out = rewrite(&class, "java/lang/ReplayHooks")
            .unwrap()
            .expect("changed");
        let (count, entries) = reparse(&out);
        assert_eq!(count, cp.next + 2);
        let hook = cp.next + 1;
        let class_of = |i: u16| u16_at(&out, entries[i as usize].off + 1).unwrap();
        assert_eq!(class_of(nano), hook);
        assert_eq!(class_of(millis), hook);
        assert_eq!(class_of(other), sys, "other System methods stay");
        let p = Pool::parse(&out, 10, count).unwrap();
        assert_eq!(
            p.utf8(u16_at(&out, entries[hook as usize].off + 1).unwrap())
                .unwrap(),
            b"java/lang/ReplayHooks"
        );
        assert!(out.ends_with(TAIL), "the rest of the class is unchanged");
        // Everything before the pool's end is the same except the patched indexes and count.
        assert_eq!(
            out.len(),
            class.len() + 3 + "java/lang/ReplayHooks".len() + 3
        );
        // The rewritten class references no target any more.
        assert!(p.target_refs().unwrap().is_empty());
    }

    #[test]
    fn class_without_targets_is_left_alone() {
        let mut cp = Cp::new();
        let sys = cp.class("java/lang/System");
        cp.method(sys, "nanoTime", "()I"); // other descriptor
        let other = cp.class("com/example/Clock");
        cp.method(other, "nanoTime", "()J"); // other class
        assert_eq!(rewrite(&cp.class_file(TAIL), "H").unwrap(), None);
    }

    #[test]
    fn pool_scan_matches_what_rewrite_changes() {
        let (cp, ..) = sample();
        assert!(pool_references_targets(cp.next, &cp.bytes).unwrap());
        let mut plain = Cp::new();
        plain.class("java/lang/Object");
        assert!(!pool_references_targets(plain.next, &plain.bytes).unwrap());
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        let (cp, ..) = sample();
        let class = cp.class_file(TAIL);
        // Every truncation.
        for n in 0..class.len() {
            let r = rewrite(&class[..n], "H");
            assert!(
                r.is_err() || n >= 10 + cp.bytes.len(),
                "truncated at {n}: {r:?}"
            );
        }
        // Every single-byte corruption, with a few values: must not panic.
        for i in 0..class.len() {
            for v in [0u8, 1, 5, 0x7f, 0xff] {
                let mut c = class.clone();
                c[i] = v;
                let _ = rewrite(&c, "H");
                let _ = target_calls(&c);
                let _ = pool_references_targets(cp.next, &c[10..]);
            }
        }
        assert_eq!(rewrite(b"not a class", "H"), Err(ParseError::BadMagic));
        let mut bad_tag = cp.class_file(TAIL);
        bad_tag[10] = 99;
        assert!(matches!(
            rewrite(&bad_tag, "H"),
            Err(ParseError::BadTag { index: 1, tag: 99 })
        ));
    }

    #[test]
    fn dangling_references_are_errors() {
        let mut cp = Cp::new();
        cp.two(METHODREF, 40, 41);
        assert_eq!(
            rewrite(&cp.class_file(TAIL), "H"),
            Err(ParseError::BadIndex { index: 40 })
        );
        let mut cp = Cp::new();
        cp.push(6, &[0; 8], 1); // a Double claiming one slot: its second slot runs past the end
        assert!(rewrite(&cp.class_file(TAIL), "H").is_err());
    }

    /// A class with one field (with an attribute) and the given (method name, code) pairs.
    fn with_methods(cp: &mut Cp, methods: &[(&str, Vec<u8>)]) -> Vec<u8> {
        with_methods_of(cp, "T", methods)
    }

    /// The same, for class `this`.
    fn with_methods_of(cp: &mut Cp, this: &str, methods: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let this = cp.class(this);
        let v = cp.utf8("()V");
        let code = cp.utf8("Code");
        let cv = cp.utf8("ConstantValue");
        let names: Vec<u16> = methods.iter().map(|(n, _)| cp.utf8(n)).collect();
        let u16s = |v: &[u16]| v.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
        // access, this, super, no interfaces; one field `x` with a ConstantValue attribute.
        let mut t = u16s(&[0x21, this, 0, 0, 1, 0x8, names[0], v, 1, cv]);
        t.extend_from_slice(&2u32.to_be_bytes());
        t.extend_from_slice(&[0, 1]);
        t.extend_from_slice(&(methods.len() as u16).to_be_bytes());
        for ((_, body), &n) in methods.iter().zip(&names) {
            t.extend(u16s(&[0x8, n, v, 1, code]));
            t.extend_from_slice(&(12 + body.len() as u32).to_be_bytes());
            t.extend(u16s(&[2, 0]));
            t.extend_from_slice(&(body.len() as u32).to_be_bytes());
            t.extend_from_slice(body);
            t.extend(u16s(&[0, 0])); // no exception table, no attributes
        }
        t.extend(u16s(&[0]));
        cp.class_file(&t)
    }

    fn call(m: u16) -> Vec<u8> {
        let [hi, lo] = m.to_be_bytes();
        vec![0xb8, hi, lo, 0x58, 0xb1] // invokestatic, pop2, return
    }

    #[test]
    fn clock_calls_in_clinit_only_are_told_apart_from_calls_elsewhere() {
        let mut cp = Cp::new();
        let sys = cp.class("java/lang/System");
        let nano = cp.method(sys, "nanoTime", "()J");
        let other = cp.method(sys, "identityHashCode", "(Ljava/lang/Object;)I");
        let base = cp.bytes.len();
        let only = with_methods(&mut cp, &[("<clinit>", call(nano)), ("f", call(other))]);
        assert_eq!(targets_only_in_clinit(&only), Ok(true));
        // The same call in another method, with or without the one in <clinit>.
        cp.bytes.truncate(base);
        cp.next = other + 1;
        let both = with_methods(&mut cp, &[("<clinit>", call(nano)), ("f", call(nano))]);
        assert_eq!(targets_only_in_clinit(&both), Ok(false));
        cp.bytes.truncate(base);
        cp.next = other + 1;
        let elsewhere = with_methods(&mut cp, &[("<clinit>", vec![0xb1]), ("run", call(nano))]);
        assert_eq!(targets_only_in_clinit(&elsewhere), Ok(false));
        // No call found: nothing to conclude.
        cp.bytes.truncate(base);
        cp.next = other + 1;
        let none = with_methods(&mut cp, &[("<clinit>", call(other))]);
        assert_eq!(targets_only_in_clinit(&none), Ok(false));
        // A MethodHandle to the target (a `System::nanoTime` lambda) may run any time.
        cp.bytes.truncate(base);
        cp.next = other + 1;
        cp.push(15, &[6, 0, nano as u8], 1);
        let handle = with_methods(&mut cp, &[("<clinit>", call(nano))]);
        assert_eq!(targets_only_in_clinit(&handle), Ok(false));
        // Every truncation is an error or a safe answer, never a panic.
        for n in 0..only.len() {
            assert_ne!(targets_only_in_clinit(&only[..n]), Ok(true), "at {n}");
        }
    }

    #[test]
    fn statistics_only_calls_need_no_hook_but_any_other_call_does() {
        let mut cp = Cp::new();
        let sys = cp.class("java/lang/System");
        let nano = cp.method(sys, "nanoTime", "()J");
        let base = cp.bytes.len();
        let counters = "jdk/internal/module/ModuleBootstrap$Counters";
        // `start()V` of Counters is a statistics method (with_methods' methods are `()V`).
        let stats = with_methods_of(&mut cp, counters, &[("start", call(nano))]);
        assert_eq!(target_calls(&stats), Ok(Calls::None));
        let reset = |cp: &mut Cp| {
            cp.bytes.truncate(base);
            cp.next = nano + 1;
        };
        // The same method name in another class is an ordinary call.
        reset(&mut cp);
        let other = with_methods_of(&mut cp, "a/Counters", &[("start", call(nano))]);
        assert_eq!(target_calls(&other), Ok(Calls::Anywhere));
        // A further call elsewhere in the same class must be hooked.
        reset(&mut cp);
        let more = with_methods_of(
            &mut cp,
            counters,
            &[("start", call(nano)), ("elapsed", call(nano))],
        );
        assert_eq!(target_calls(&more), Ok(Calls::Anywhere));
        // Statistics plus <clinit>: the <clinit> rule applies.
        reset(&mut cp);
        let both = with_methods_of(
            &mut cp,
            counters,
            &[("start", call(nano)), ("<clinit>", call(nano))],
        );
        assert_eq!(target_calls(&both), Ok(Calls::ClinitOnly));
        // No target at all.
        let mut plain = Cp::new();
        let obj = plain.class("java/lang/Object");
        let hash = plain.method(obj, "hashCode", "()I");
        let none = with_methods(&mut plain, &[("f", call(hash))]);
        assert_eq!(target_calls(&none), Ok(Calls::None));
        for n in 0..stats.len() {
            assert_ne!(target_calls(&stats[..n]), Ok(Calls::None), "at {n}");
        }
    }

    #[test]
    fn full_pool_is_left_alone() {
        let mut cp = Cp::new();
        let sys = cp.class("java/lang/System");
        cp.method(sys, "nanoTime", "()J");
        while cp.next < u16::MAX - 1 {
            cp.push(3, &[0; 4], 1);
        }
        assert_eq!(rewrite(&cp.class_file(TAIL), "H").unwrap(), None);
    }
}
