//! Replay: per-thread cursors over a recorded log, strict or relaxed ordering, and
//! verification of every replayed call against its thread's next recorded event.
//!
//! The log is decoded (read, checked, decompressed, parsed) ahead by a background thread into
//! a small bounded channel, so the program's threads do not pay for it; the decoded chunks
//! are taken lazily, one at a time, by whichever thread runs out of events first, which maps
//! their strings to live ids and hands their events to per-thread queues. In strict mode a
//! thread takes its next event only when the global cursor (the number of events consumed so
//! far, since sequence numbers are dense) reaches that event's number, so the recorded
//! interleaving of the intercepted calls happens again. Waiting spins briefly, then parks; if
//! the cursor makes no progress for `timeout` while a thread waits, that is a divergence
//! (never a hang).

use crate::error::LogError;
use crate::event::Event;
use crate::format::{DecodedBatch, HeaderInfo};
use crate::options::Order;
use crate::reader::{Budget, End, LogReader};
use crate::report::{Actual, Divergence, DivergenceKind, ThreadState};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

const NONE: u64 = u64::MAX;

/// Decoded chunks the read-ahead thread may hold ready: enough to hide a chunk's decoding
/// behind the replay of the one before, few enough that memory stays bounded for big logs.
const READ_AHEAD: usize = 4;
/// ... and bytes: the thread reads no further chunk while the chunks alive (read ahead, or
/// still held by the replay) take this many, unless the replay waits for the next one. With
/// the largest chunk a log may hold (`format::MAX_RAW`) this keeps a replay under 64 MiB.
const READ_AHEAD_BYTES: usize = 16 << 20;

/// How long the cursor must stand still before a waiting thread asks whether the event it
/// waits for was lost to a cut log (checking costs a look at every thread's queue).
const CUT_CHECK: Duration = Duration::from_millis(100);

/// What the read-ahead thread hands over: the outcome of one `LogReader::next_batch`.
enum Msg {
    Batch(DecodedBatch),
    End(Option<End>),
    Error(String),
}

impl Msg {
    fn read(reader: &mut LogReader) -> Msg {
        match reader.next_batch() {
            Ok(Some(b)) => Msg::Batch(b),
            Ok(None) => Msg::End(reader.end().cloned()),
            Err(e) => Msg::Error(e.to_string()),
        }
    }
}

/// Where the next chunk comes from while there is more to read.
enum Feed {
    Ahead(Receiver<Msg>, Arc<Budget>),
    /// Read on the calling thread: only if the read-ahead thread could not be started.
    Inline(Box<LogReader>),
}

impl Feed {
    /// Starts the read-ahead thread. It owns the reader and blocks only on sending to the
    /// bounded channel; it ends after the last message or when the receiver is dropped (with
    /// the replayer). It is detached, so it never holds the process open.
    /// `budget` counts the reader's chunks (set on it before its first chunk was read).
    fn start(reader: LogReader, budget: Arc<Budget>) -> Feed {
        // The reader goes through a slot so that it can be taken back if the spawn fails.
        let slot = Arc::new(Mutex::new(Some(reader)));
        let (tx, rx) = sync_channel(READ_AHEAD);
        let theirs = slot.clone();
        let room = budget.clone();
        let spawned = std::thread::Builder::new()
            .name("replay-reader".into())
            .spawn(move || {
                let Some(mut reader) = theirs.lock().ok().and_then(|mut s| s.take()) else {
                    return;
                };
                drop(theirs);
                loop {
                    room.wait_room(READ_AHEAD_BYTES);
                    let msg = Msg::read(&mut reader);
                    let last = !matches!(msg, Msg::Batch(_));
                    if tx.send(msg).is_err() || last {
                        return;
                    }
                }
            });
        match spawned {
            Ok(_) => Feed::Ahead(rx, budget),
            Err(_) => match slot.lock().ok().and_then(|mut s| s.take()) {
                Some(reader) => Feed::Inline(Box::new(reader)),
                // Not expected (a failed spawn drops the closure unrun); if the thread did take
                // the reader, the channel carries what it reads, or its failure.
                None => Feed::Ahead(rx, budget),
            },
        }
    }

    /// The next message, waiting for the read-ahead thread if it has not decoded it yet.
    fn next(&mut self) -> Msg {
        match self {
            // A closed channel before the last message: the thread panicked.
            Feed::Ahead(rx, budget) => {
                let msg = rx.try_recv().or_else(|_| {
                    // Nothing ready: the thread may be waiting for room, which this wait
                    // for the next chunk overrides.
                    budget.want(true);
                    let m = rx.recv();
                    budget.want(false);
                    m
                });
                msg.unwrap_or_else(|_| Msg::Error("the log reader thread failed".into()))
            }
            Feed::Inline(reader) => Msg::read(reader),
        }
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        // A read-ahead thread waiting for room (chunks of this replay still alive elsewhere)
        // goes on, finds the channel closed and ends.
        if let Feed::Ahead(_, budget) = self {
            budget.want(true);
        }
    }
}

struct Queue {
    batches: Mutex<VecDeque<Vec<Event>>>,
    /// Events handed to this thread's queue so far / consumed by it.
    handed: AtomicU64,
    consumed: AtomicU64,
    /// Sequence number this thread is waiting for (strict mode), or NONE.
    waiting_for: AtomicU64,
    /// Kind (live string id) of the call that waits.
    waiting_kind: AtomicU64,
    claimed: AtomicBool,
    /// Where the bound thread's unused events begin, published by that thread for
    /// [`Replayer::finish`] (which runs on another thread, or after this one ended and took
    /// its thread-locals with it): the sequence number of the next event of the batch it holds
    /// (NONE when it holds none: the rest is in `batches`), and the earliest event in its
    /// per-kind stashes (NONE when empty).
    front: AtomicU64,
    stash_front: AtomicU64,
}

impl Queue {
    fn new() -> Arc<Queue> {
        Arc::new(Queue {
            batches: Mutex::new(VecDeque::new()),
            handed: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            waiting_for: AtomicU64::new(NONE),
            waiting_kind: AtomicU64::new(0),
            claimed: AtomicBool::new(false),
            front: AtomicU64::new(NONE),
            stash_front: AtomicU64::new(NONE),
        })
    }
}

struct Source {
    /// `Some` while there is more of the log to read.
    reader: Option<Feed>,
    end: Option<End>,
    error: Option<String>,
    total: u64,
    /// Events of [`ReplayConfig::unordered`] kinds among `total`.
    diverted: u64,
    /// recorded string id → live id
    map: Vec<u32>,
    /// recorded thread id → name (text), in id order
    names: Vec<(u32, Option<String>)>,
}

/// Live string table: texts the program asked for plus every text of the log.
#[derive(Default)]
struct Live {
    ids: HashMap<String, u32>,
    texts: Vec<String>,
}

impl Live {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        self.texts.push(s.to_string());
        let id = self.texts.len() as u32;
        self.ids.insert(s.to_string(), id);
        id
    }
}

struct Inner {
    gen: u64,
    path: PathBuf,
    source: Mutex<Source>,
    queues: RwLock<HashMap<u32, Arc<Queue>>>,
    live: RwLock<Live>,
    cursor: AtomicU64,
    strict: bool,
    timeout: Duration,
    park: Mutex<()>,
    wake: Condvar,
    parked: AtomicU64,
    /// Set by the session when the policy made replay go live.
    gone_live: AtomicBool,
    phantoms: AtomicU64,
    header: HeaderInfo,
    /// Live ids of [`ReplayConfig::unordered`] kinds.
    unordered_kinds: Vec<u32>,
    unordered: Mutex<Unordered>,
    /// The lowest sequence number of an unordered event the strict cursor has not passed
    /// yet (`NONE`: none known): one load per consumed event tells whether to look.
    next_unordered: AtomicU64,
    /// Unordered kinds named `output.*`: the cursor passes one of their events only once its
    /// thread started on it ([`Replayer::unordered_started`]), while `gate` is on.
    gated_kinds: Vec<u32>,
    gate: AtomicBool,
    /// Some unordered kind has events of more than one thread ([`Unordered::writers`]).
    many_writers: AtomicBool,
}

/// Events taken out of the threads' turns ([`ReplayConfig::unordered`]), served per
/// (logical thread, kind) by [`Replayer::next_unordered`].
#[derive(Default)]
struct Unordered {
    /// Per (logical thread, kind). FxHash: looked up on every write a program makes.
    queues: rustc_hash::FxHashMap<(u32, u32), VecDeque<Event>>,
    /// Strict order only: their sequence numbers the cursor has yet to pass over (a
    /// min-heap: threads' runs come in any order).
    ahead: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    /// Per kind: the events no thread has started on yet, sequence number → recorded thread,
    /// for [`Replayer::unordered_start`]'s check of the order across threads.
    unstarted: rustc_hash::FxHashMap<u32, std::collections::BTreeMap<u64, u32>>,
    /// Per kind: the first thread seen with events of it, and whether another was seen
    /// since. Only then is `unstarted` kept: one thread's events are in order by themselves.
    writers: rustc_hash::FxHashMap<u32, (u32, bool)>,
    /// Strict order: events of gated kinds no thread has started on yet.
    unstarted_gated: std::collections::BTreeSet<u64>,
}

struct Local {
    gen: u64,
    thread: u32,
    queue: Option<Arc<Queue>>,
    batch: Vec<Event>,
    pos: usize,
    name: String,
}

impl Local {
    /// The event at the cursor, taken rather than cloned: the slot is never read again
    /// (the caller moves `pos` past it by consuming it).
    fn take(&mut self) -> Event {
        let empty = Event {
            seq: 0,
            thread: 0,
            kind: 0,
            site: 0,
            digest: None,
            payload: crate::event::Payload::None,
        };
        std::mem::replace(&mut self.batch[self.pos], empty)
    }

    /// Moves past the event at the cursor and publishes the next one as the queue's front.
    fn advance(&mut self) {
        self.pos += 1;
        self.publish_front();
    }

    /// Publishes the event at the cursor as the queue's front, for [`Replayer::finish`].
    fn publish_front(&self) {
        if let Some(q) = &self.queue {
            let next = self.batch.get(self.pos).map_or(NONE, |e| e.seq);
            q.front.store(next, Ordering::Relaxed);
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
    /// Events [`Replayer::next_of`] read past while looking for another kind, per
    /// (replayer generation, live kind id), in recorded order.
    static STASH: RefCell<HashMap<(u64, u32), VecDeque<Event>>> = RefCell::new(HashMap::new());
    /// Events of each kind [`Replayer::next_of`] served on this thread, for its reports.
    static SERVED: RefCell<HashMap<(u64, u32), u64>> = RefCell::new(HashMap::new());
}

static NEXT_GEN: AtomicU64 = AtomicU64::new(1);

#[derive(Clone)]
pub struct Replayer {
    inner: Arc<Inner>,
}

/// Settings for [`Replayer::open`].
pub struct ReplayConfig {
    pub path: PathBuf,
    pub order: Order,
    pub timeout: Duration,
    /// Kinds whose events are not part of the threads' turns: taken out of the thread
    /// queues as the log is read, passed over by the strict cursor, and served in recorded
    /// order per logical thread and kind by [`Replayer::next_unordered`] (the program's
    /// output: a write under a lock the program holds must not wait for a turn, or two
    /// threads printing could deadlock on the stream's lock).
    pub unordered: Vec<String>,
}

impl Replayer {
    /// Opens the log (checking its magic, version and header) and binds the calling thread
    /// to logical thread 0.
    pub fn open(cfg: ReplayConfig) -> Result<Replayer, LogError> {
        let mut reader = LogReader::open(&cfg.path)?;
        let budget = Arc::new(Budget::default());
        reader.set_budget(budget.clone());
        // The first chunk is read here so that a log unreadable from its start fails at
        // start-up; the rest is read ahead on the reader thread.
        let first = Msg::read(&mut reader);
        let header = reader.header().clone();
        let mut live = Live::default();
        let unordered_kinds = cfg.unordered.iter().map(|k| live.intern(k)).collect();
        let gated_kinds = cfg
            .unordered
            .iter()
            .filter(|k| k.starts_with("output."))
            .map(|k| live.intern(k))
            .collect();
        let inner = Arc::new(Inner {
            gen: NEXT_GEN.fetch_add(1, Ordering::Relaxed),
            path: cfg.path,
            source: Mutex::new(Source {
                reader: None,
                end: None,
                error: None,
                total: 0,
                diverted: 0,
                map: vec![0],
                names: Vec::new(),
            }),
            queues: RwLock::new(HashMap::new()),
            live: RwLock::new(live),
            cursor: AtomicU64::new(0),
            strict: cfg.order == Order::Strict,
            timeout: cfg.timeout,
            park: Mutex::new(()),
            wake: Condvar::new(),
            parked: AtomicU64::new(0),
            gone_live: AtomicBool::new(false),
            phantoms: AtomicU64::new(0),
            header,
            unordered_kinds,
            gated_kinds,
            gate: AtomicBool::new(true),
            unordered: Mutex::new(Unordered::default()),
            next_unordered: AtomicU64::new(NONE),
            many_writers: AtomicBool::new(false),
        });
        let r = Replayer { inner };
        {
            let mut src = r.inner.source.lock().unwrap();
            if r.take(&mut src, first) {
                src.reader = Some(Feed::start(reader, budget));
            }
            if let Some(e) = &src.error {
                if src.total == 0 {
                    return Err(LogError::Corrupt {
                        offset: 0,
                        why: e.clone(),
                    });
                }
            }
        }
        let main = r.bind(Some(0), "main");
        LOCAL.with(|l| *l.borrow_mut() = Some(main));
        Ok(r)
    }

    /// Strict order: the first sequence number not consumed yet; `None` in relaxed order.
    pub fn cursor(&self) -> Option<u64> {
        self.inner
            .strict
            .then(|| self.inner.cursor.load(Ordering::Acquire))
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The recorded log's header (runtime, program, argv, the recorder's options).
    pub fn header(&self) -> &HeaderInfo {
        &self.inner.header
    }

    /// Whether events of kind `k` are out of the threads' turns ([`ReplayConfig::unordered`]).
    fn is_unordered(&self, k: u32) -> bool {
        !self.inner.unordered_kinds.is_empty() && self.inner.unordered_kinds.contains(&k)
    }

    /// Id of `text` in the live string table, the ids that [`Self::next`] compares.
    pub fn intern(&self, text: &str) -> u32 {
        if let Some(&i) = self.inner.live.read().unwrap().ids.get(text) {
            return i;
        }
        self.inner.live.write().unwrap().intern(text)
    }

    pub fn text(&self, id: u32) -> String {
        let live = self.inner.live.read().unwrap();
        if id == 0 {
            return String::new();
        }
        live.texts
            .get(id as usize - 1)
            .cloned()
            .unwrap_or_else(|| "?".into())
    }

    /// Takes one more chunk into the queues. Caller holds the source lock. Waiting here for
    /// the read-ahead thread is like waiting for the file was: that thread takes no lock of
    /// the replayer, so it always gets on.
    fn read_more(&self, src: &mut Source) -> bool {
        let Some(feed) = src.reader.as_mut() else {
            return false;
        };
        let msg = feed.next();
        self.take(src, msg)
    }

    /// Hands a decoded chunk to the queues, or records how the log ended; false at the end.
    fn take(&self, src: &mut Source, msg: Msg) -> bool {
        match msg {
            Msg::Batch(b) => {
                {
                    let mut live = self.inner.live.write().unwrap();
                    for (id, text) in &b.strings {
                        let l = live.intern(text);
                        if *id as usize == src.map.len() {
                            src.map.push(l);
                        }
                    }
                }
                let lookup = |map: &Vec<u32>, id: u32| map.get(id as usize).copied().unwrap_or(0);
                for (id, name) in &b.threads {
                    let text = if *name == 0 {
                        None
                    } else {
                        Some(self.text(lookup(&src.map, *name)))
                    };
                    match src.names.iter_mut().find(|(i, _)| i == id) {
                        Some(e) => e.1 = text,
                        None => src.names.push((*id, text)),
                    }
                    self.inner
                        .queues
                        .write()
                        .unwrap()
                        .entry(*id)
                        .or_insert_with(Queue::new);
                }
                let queues = self.inner.queues.read().unwrap();
                let mut diverted = false;
                for mut run in b.runs {
                    for e in &mut run.events {
                        e.kind = lookup(&src.map, e.kind);
                        e.site = lookup(&src.map, e.site);
                    }
                    src.total += run.events.len() as u64;
                    if run.events.iter().any(|e| self.is_unordered(e.kind)) {
                        self.divert(src, run.thread, &mut run.events);
                        diverted = true;
                    }
                    if let Some(q) = queues.get(&run.thread) {
                        q.handed
                            .fetch_add(run.events.len() as u64, Ordering::Relaxed);
                        q.batches.lock().unwrap().push_back(run.events);
                    }
                }
                drop(queues);
                if diverted {
                    // The cursor may stand at one of them already.
                    self.pass_unordered();
                }
                true
            }
            Msg::End(end) => {
                src.end = end;
                src.reader = None;
                false
            }
            Msg::Error(e) => {
                eprintln!(
                    "replay: {}: {e}; replay continues with the events before it",
                    self.inner.path.display()
                );
                src.error = Some(e);
                src.reader = None;
                false
            }
        }
    }

    /// Moves a run's unordered events ([`ReplayConfig::unordered`]) to their queues.
    fn divert(&self, src: &mut Source, thread: u32, events: &mut Vec<Event>) {
        let mut u = self.inner.unordered.lock().unwrap();
        if self.inner.strict && self.inner.gate.load(Ordering::Acquire) {
            let gated: Vec<u64> = events
                .iter()
                .filter(|e| self.inner.gated_kinds.contains(&e.kind))
                .map(|e| e.seq)
                .collect();
            u.unstarted_gated.extend(gated);
        }
        if self.inner.strict {
            u.ahead.extend(
                events
                    .iter()
                    .filter(|e| self.is_unordered(e.kind))
                    .map(|e| std::cmp::Reverse(e.seq)),
            );
        }
        for e in events.iter().filter(|e| self.is_unordered(e.kind)) {
            let (first, mut many) = *u.writers.entry(e.kind).or_insert((thread, false));
            if !many && first != thread {
                many = true;
                u.writers.insert(e.kind, (first, true));
                self.inner.many_writers.store(true, Ordering::Release);
                // The first writer's events taken in before, which its thread has not taken
                // yet (those it has are started or about to be: a difference among them can
                // only go unseen, not be invented).
                let earlier: Vec<u64> = u
                    .queues
                    .get(&(first, e.kind))
                    .map(|q| q.iter().map(|x| x.seq).collect())
                    .unwrap_or_default();
                let waiting = u.unstarted.entry(e.kind).or_default();
                for s in earlier {
                    waiting.insert(s, first);
                }
            }
            if many {
                u.unstarted.entry(e.kind).or_default().insert(e.seq, thread);
            }
        }
        // A thread that only writes: the whole run is one kind's, moved once.
        let k = events[0].kind;
        if events.iter().all(|e| e.kind == k) {
            src.diverted += events.len() as u64;
            u.queues
                .entry((thread, k))
                .or_default()
                .extend(events.drain(..));
            let first = u.ahead.peek().map_or(NONE, |r| r.0);
            self.inner.next_unordered.store(first, Ordering::Release);
            return;
        }
        let mut rest = Vec::new();
        // A run is mostly one kind: its queue is looked up once per stretch of a kind.
        let mut stretch: Vec<Event> = Vec::new();
        let flush = |u: &mut Unordered, stretch: &mut Vec<Event>| {
            if let Some(k) = stretch.first().map(|e| e.kind) {
                u.queues
                    .entry((thread, k))
                    .or_default()
                    .extend(stretch.drain(..));
            }
        };
        for e in events.drain(..) {
            if !self.is_unordered(e.kind) {
                rest.push(e);
                continue;
            }
            src.diverted += 1;
            if stretch.first().is_some_and(|f| f.kind != e.kind) {
                flush(&mut u, &mut stretch);
            }
            stretch.push(e);
        }
        flush(&mut u, &mut stretch);
        let first = u.ahead.peek().map_or(NONE, |r| r.0);
        self.inner.next_unordered.store(first, Ordering::Release);
        *events = rest;
    }

    /// The calling thread's binding for this replay, made at its first call.
    fn bound<'a>(&self, l: &'a mut Option<Local>) -> &'a mut Local {
        if l.as_ref().is_none_or(|x| x.gen != self.inner.gen) {
            return l.insert(self.bind(None, ""));
        }
        l.as_mut().expect("a binding of this replay")
    }

    /// Binds the calling thread to a recorded logical thread: by name when it has one,
    /// else the next unnamed recorded thread in order of first appearance.
    fn bind(&self, want: Option<u32>, name: &str) -> Local {
        let named = !name.is_empty();
        let mut src = self.inner.source.lock().unwrap();
        let found = loop {
            let pick = src.names.iter().find(|(id, n)| {
                let q = self.inner.queues.read().unwrap().get(id).cloned();
                let free = q.is_some_and(|q| !q.claimed.load(Ordering::Relaxed));
                free && match want {
                    Some(w) => *id == w,
                    None if named => n.as_deref() == Some(name),
                    None => n.is_none(),
                }
            });
            if let Some((id, _)) = pick {
                break Some(*id);
            }
            if !self.read_more(&mut src) {
                // No thread of that exact name: one whose name differs only in numbers and
                // identity hashes (Jetty's `qtp931919113-14-acceptor-0@259f9b6a-...` is named
                // by hash codes and a pool counter that change from run to run), the first
                // free one in order of appearance.
                break match want {
                    None if named => {
                        let shape = name_shape(name);
                        src.names
                            .iter()
                            .find(|(id, n)| {
                                let q = self.inner.queues.read().unwrap().get(id).cloned();
                                q.is_some_and(|q| !q.claimed.load(Ordering::Relaxed))
                                    && n.as_deref().is_some_and(|n| name_shape(n) == shape)
                            })
                            .map(|(id, _)| *id)
                    }
                    _ => None,
                };
            }
        };
        drop(src);
        match found {
            Some(id) => {
                let q = self.inner.queues.read().unwrap().get(&id).cloned().unwrap();
                q.claimed.store(true, Ordering::Relaxed);
                let name = if named {
                    name.to_string()
                } else {
                    format!("thread-{id}")
                };
                Local {
                    gen: self.inner.gen,
                    thread: id,
                    queue: Some(q),
                    batch: Vec::new(),
                    pos: 0,
                    name,
                }
            }
            None => {
                // A thread the recording never had: its first call is a divergence.
                let n = self.inner.phantoms.fetch_add(1, Ordering::Relaxed);
                let name = if named {
                    name.to_string()
                } else {
                    format!("new thread #{}", n + 1)
                };
                Local {
                    gen: self.inner.gen,
                    thread: u32::MAX - n as u32,
                    queue: None,
                    batch: Vec::new(),
                    pos: 0,
                    name,
                }
            }
        }
    }

    /// Names the calling thread; before its first call this picks the recorded thread of
    /// that name. Names should be unique; repeated names are matched in order of naming.
    pub fn name_thread(&self, name: &str) {
        let _ = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let fresh = l.as_ref().is_none_or(|x| x.gen != self.inner.gen);
            if fresh {
                *l = Some(self.bind(None, name));
            }
        });
    }

    /// Marks replay as gone live (after a divergence under the `warn-live` policy): waiting
    /// threads stop waiting and every later call runs live.
    pub fn go_live(&self) {
        self.inner.gone_live.store(true, Ordering::Relaxed);
        let _g = self.inner.park.lock().unwrap();
        self.inner.wake.notify_all();
    }

    pub fn is_live(&self) -> bool {
        self.inner.gone_live.load(Ordering::Relaxed)
    }

    /// The calling thread's next recorded event, checked against the call the program makes
    /// now (`kind`, `site` and `digest` are live string ids and the input digest). In strict
    /// mode this waits for the thread's turn.
    pub fn next(
        &self,
        kind: u32,
        site: u32,
        digest: Option<u64>,
    ) -> Result<Event, Box<Divergence>> {
        let r = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let local = self.bound(&mut l);
            let actual = Actual {
                kind,
                site,
                digest,
                context: None,
            };
            let Some(seq) = self.peek(local).map(|e| e.seq) else {
                let q = local.queue.clone();
                return Err(self.divergence(
                    DivergenceKind::Exhausted {
                        recorded: q.map_or(0, |q| q.handed.load(Ordering::Relaxed)),
                        of_kind: false,
                    },
                    local,
                    None,
                    actual,
                ));
            };
            if self.inner.strict {
                self.wait_turn(local, seq, kind)?;
            }
            let ev = local.take();
            let ok =
                ev.kind == kind && (ev.digest.is_none() || digest.is_none() || ev.digest == digest);
            // The event is consumed whether or not it matches, so that warn-continue goes on
            // with the following events.
            self.consume(local, ev.seq);
            local.publish_front();
            if ok {
                Ok(ev)
            } else {
                let seq = ev.seq;
                Err(self
                    .divergence(DivergenceKind::Mismatch, local, Some(ev), actual)
                    .with_seq(seq))
            }
        });
        // A call from a thread whose thread-locals are already destroyed (exit of a thread)
        // cannot be matched to the recording: report it as a call with no events left.
        r.unwrap_or_else(|_| Err(self.exiting(kind, site, digest)))
    }

    /// The report for a call from a thread whose thread-locals are already destroyed.
    fn exiting(&self, kind: u32, site: u32, digest: Option<u64>) -> Box<Divergence> {
        let tmp = Local {
            gen: 0,
            thread: u32::MAX,
            queue: None,
            batch: Vec::new(),
            pos: 0,
            name: "exiting thread".into(),
        };
        self.divergence(
            DivergenceKind::Exhausted {
                recorded: 0,
                of_kind: false,
            },
            &tmp,
            None,
            Actual {
                kind,
                site,
                digest,
                context: None,
            },
        )
    }

    /// Batch replay for front ends that buffer on their own side (a `long[]` in Java, a
    /// typed array in JS): takes the thread's next event as [`Self::next`] does (waiting for
    /// its turn and verifying it), then every following event of this thread whose sequence
    /// number follows without a gap, is of the same `kind` and carries no input digest, up to
    /// `max` events in all. No other thread's event lies between them, so taking them early
    /// never waits and never reorders intercepted calls across threads; other threads may go
    /// on with their later events while this thread uses its buffer. The front end checks
    /// each buffered event against the call it serves and reports a difference with
    /// [`Self::mismatch`].
    pub fn next_run(
        &self,
        kind: u32,
        max: usize,
        out: &mut Vec<Event>,
    ) -> Result<(), Box<Divergence>> {
        out.push(self.next(kind, 0, None)?);
        let _ = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let Some(local) = l.as_mut().filter(|x| x.gen == self.inner.gen) else {
                return;
            };
            while out.len() < max {
                let last = out.last().map_or(0, |e| e.seq);
                match self.peek(local) {
                    Some(e) if e.seq == last + 1 && e.kind == kind && e.digest.is_none() => {}
                    _ => break,
                }
                let ev = local.take();
                self.consume(local, ev.seq);
                out.push(ev);
            }
            // Once per run, not per event: a run feeds the JVM's JIT-hot clock loops, where
            // each event costs a few nanoseconds.
            local.publish_front();
        });
        Ok(())
    }

    /// Per-kind replay for single-threaded event-loop front ends (Node): the calling thread's
    /// earliest unconsumed event of `kind`, verified against `digest` as [`Self::next`] does,
    /// even when events of other kinds come first on its tape (those stay for their own
    /// kind's calls). Each kind is a strictly ordered stream of its own, while the order
    /// between kinds is not enforced: on an event loop it depends on timer and I/O timing
    /// that replay does not control (a runtime's own clock reads between two responses, say),
    /// and enforcing it would turn that timing into false divergences. This never waits for
    /// other threads' turns. Events left in the per-kind stashes count as unused at
    /// [`Self::finish`].
    pub fn next_of(
        &self,
        kind: u32,
        site: u32,
        digest: Option<u64>,
    ) -> Result<Event, Box<Divergence>> {
        let gen = self.inner.gen;
        let actual = Actual {
            kind,
            site,
            digest,
            context: None,
        };
        let stashed = STASH
            .try_with(|s| {
                s.borrow_mut()
                    .get_mut(&(gen, kind))
                    .and_then(|q| q.pop_front())
            })
            .ok()
            .flatten();
        let r = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let local = self.bound(&mut l);
            let ev = match stashed {
                Some(ev) => ev,
                None => loop {
                    let Some(k) = self.peek(local).map(|e| e.kind) else {
                        // The count in the report is this kind's: the other kinds' events
                        // may well be left.
                        let recorded = SERVED
                            .try_with(|s| s.borrow().get(&(gen, kind)).copied())
                            .ok()
                            .flatten()
                            .unwrap_or(0);
                        self.publish_stash(local);
                        return Err(self.divergence(
                            DivergenceKind::Exhausted {
                                recorded,
                                of_kind: true,
                            },
                            local,
                            None,
                            actual,
                        ));
                    };
                    let ev = local.take();
                    local.advance();
                    if k == kind {
                        break ev;
                    }
                    let _ = STASH
                        .try_with(|s| s.borrow_mut().entry((gen, k)).or_default().push_back(ev));
                },
            };
            self.publish_stash(local);
            if let Some(q) = &local.queue {
                q.consumed
                    .store(q.consumed.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            }
            let _ = SERVED.try_with(|s| *s.borrow_mut().entry((gen, kind)).or_default() += 1);
            if self.inner.strict {
                let c = self.inner.cursor.fetch_max(ev.seq + 1, Ordering::SeqCst);
                self.cursor_moved(c.max(ev.seq + 1));
            }
            if ev.digest.is_none() || digest.is_none() || ev.digest == digest {
                Ok(ev)
            } else {
                let seq = ev.seq;
                Err(self
                    .divergence(DivergenceKind::Mismatch, local, Some(ev), actual)
                    .with_seq(seq))
            }
        });
        r.unwrap_or_else(|_| Err(self.exiting(kind, site, digest)))
    }

    /// Whether the calling thread's recording holds another event of `kind` (per-kind front
    /// ends; [`Self::next_of`] then takes it), reading ahead as `next_of` does. A front end
    /// asks before it takes a completion for an operation still pending: a recording ends
    /// with operations in flight (the program exited first), and the replayed program waiting
    /// for one of them is no divergence unless it goes on waiting.
    pub fn has_more_of(&self, kind: u32) -> bool {
        let gen = self.inner.gen;
        let stashed = STASH
            .try_with(|s| s.borrow().get(&(gen, kind)).is_some_and(|q| !q.is_empty()))
            .unwrap_or(false);
        if stashed {
            return true;
        }
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                let local = self.bound(&mut l);
                let found = loop {
                    let Some(k) = self.peek(local).map(|e| e.kind) else {
                        break false;
                    };
                    if k == kind {
                        break true;
                    }
                    // Read past, as next_of would: the kind's own stash serves it later.
                    let ev = local.take();
                    local.advance();
                    let _ = STASH
                        .try_with(|s| s.borrow_mut().entry((gen, k)).or_default().push_back(ev));
                };
                self.publish_stash(local);
                found
            })
            .unwrap_or(false)
    }

    /// Whether the calling thread's next recorded event (in its order, unordered kinds
    /// aside) is of `kind`, without taking it or waiting for its turn: for a call that is an
    /// event only when it turned out one way (a JVM pool worker's take interrupted by a
    /// shutdown is none, and whether the worker takes at all then races).
    pub fn next_is(&self, kind: u32) -> bool {
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                let local = self.bound(&mut l);
                self.peek(local).is_some_and(|e| e.kind == kind)
            })
            .unwrap_or(false)
    }

    /// Whether the calling thread's next recorded event is of `kind` and, in strict order,
    /// whether it is that event's turn (the cursor is at it), without taking it or waiting:
    /// `Some(true)` its turn, `Some(false)` not yet, `None` the next event is of another kind
    /// or there is none. For a front end that must not wait for its turn while it holds a
    /// lock the threads before it need (it releases the lock and asks again).
    pub fn next_turn(&self, kind: u32) -> Option<bool> {
        let cursor = self.cursor();
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                let local = self.bound(&mut l);
                let e = self.peek(local).filter(|e| e.kind == kind)?;
                Some(cursor.is_none_or(|c| c >= e.seq))
            })
            .ok()
            .flatten()
    }

    /// [`Self::has_more_of`] for front ends that replay in the thread's order: whether the
    /// calling thread has any recorded event left.
    pub fn has_more(&self) -> bool {
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                let local = self.bound(&mut l);
                self.peek(local).is_some()
            })
            .unwrap_or(false)
    }

    /// Batch form of [`Self::next_of`] for front ends that serve a kind's events from a
    /// buffer of their own (a typed array in JS): takes the next event of `kind` as
    /// [`Self::next_of`] does (so a call with none left is reported at that call), then up to
    /// `max` events of `kind` in all that carry no input digest, in recorded order. Events of
    /// other kinds read past go to their kinds' stashes, at most `max` of them per call, so a
    /// log with few events of `kind` is not read ahead without bound. Everything taken counts
    /// as served; what the front end does not use must go back with [`Self::unread_of`] before
    /// [`Self::finish`], so that it counts as left over.
    pub fn next_of_run(
        &self,
        kind: u32,
        max: usize,
        out: &mut Vec<Event>,
    ) -> Result<(), Box<Divergence>> {
        out.push(self.next_of(kind, 0, None)?);
        let gen = self.inner.gen;
        let before = out.len();
        // The stash first: it holds this kind's earliest events. If it is not emptied, the
        // tape's events of the kind come after it and must wait.
        let drained = STASH
            .try_with(|s| {
                let mut s = s.borrow_mut();
                let Some(q) = s.get_mut(&(gen, kind)) else {
                    return true;
                };
                while out.len() < max && q.front().is_some_and(|e| e.digest.is_none()) {
                    out.extend(q.pop_front());
                }
                q.is_empty()
            })
            .unwrap_or(false);
        let _ = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let Some(local) = l.as_mut().filter(|x| x.gen == gen) else {
                return;
            };
            let mut skipped = 0;
            while drained && out.len() < max && skipped < max {
                let Some((k, plain)) = self.peek(local).map(|e| (e.kind, e.digest.is_none()))
                else {
                    break;
                };
                if k == kind && !plain {
                    break;
                }
                let ev = local.take();
                local.advance();
                if k == kind {
                    out.push(ev);
                } else {
                    skipped += 1;
                    let _ = STASH
                        .try_with(|s| s.borrow_mut().entry((gen, k)).or_default().push_back(ev));
                }
            }
            self.publish_stash(local);
            let n = (out.len() - before) as u64;
            if n == 0 {
                return;
            }
            if let Some(q) = &local.queue {
                q.consumed
                    .store(q.consumed.load(Ordering::Relaxed) + n, Ordering::Relaxed);
            }
            let _ = SERVED.try_with(|s| *s.borrow_mut().entry((gen, kind)).or_default() += n);
            if self.inner.strict {
                let last = out.last().map_or(0, |e| e.seq);
                let c = self.inner.cursor.fetch_max(last + 1, Ordering::SeqCst);
                self.cursor_moved(c.max(last + 1));
            }
        });
        Ok(())
    }

    /// Gives back events of `kind` that [`Self::next_of_run`] handed out on this thread and
    /// the front end did not use (`events`: the unused tail of a run, in recorded order).
    /// They become the kind's next events again and count as not served, so
    /// [`Self::finish`] reports them as left over (and a later call of the kind gets them).
    pub fn unread_of(&self, kind: u32, events: Vec<Event>) {
        let n = events.len() as u64;
        if n == 0 {
            return;
        }
        let gen = self.inner.gen;
        let _ = STASH.try_with(|s| {
            let mut s = s.borrow_mut();
            let q = s.entry((gen, kind)).or_default();
            for e in events.into_iter().rev() {
                q.push_front(e);
            }
        });
        let _ = SERVED.try_with(|s| {
            if let Some(c) = s.borrow_mut().get_mut(&(gen, kind)) {
                *c = c.saturating_sub(n);
            }
        });
        let _ = LOCAL.try_with(|l| {
            let l = l.borrow();
            let Some(local) = l.as_ref().filter(|x| x.gen == gen) else {
                return;
            };
            if let Some(q) = &local.queue {
                let c = q.consumed.load(Ordering::Relaxed);
                q.consumed.store(c.saturating_sub(n), Ordering::Relaxed);
            }
            self.publish_stash(local);
        });
    }

    /// Publishes the earliest event [`Self::next_of`] stashed on this thread (and no call
    /// took) as the queue's `stash_front`: the stash is a thread-local, gone when the thread
    /// ends, and [`Self::finish`] may run on another thread.
    fn publish_stash(&self, local: &Local) {
        let Some(q) = &local.queue else {
            return;
        };
        let gen = self.inner.gen;
        let first = STASH
            .try_with(|s| {
                s.borrow()
                    .iter()
                    .filter(|((g, _), _)| *g == gen)
                    .filter_map(|(_, q)| q.front().map(|e| e.seq))
                    .min()
            })
            .ok()
            .flatten();
        q.stash_front
            .store(first.unwrap_or(NONE), Ordering::Relaxed);
    }

    /// A mismatch found by a front end between an event it took with [`Self::next_run`] and
    /// the call the program made instead (live string ids and digest), as a divergence report.
    pub fn mismatch(
        &self,
        expected: Event,
        kind: u32,
        site: u32,
        digest: Option<u64>,
    ) -> Box<Divergence> {
        let local = self.current_thread();
        let (thread, name) = local.unwrap_or((u32::MAX, "unknown thread".into()));
        let tmp = Local {
            gen: 0,
            thread,
            queue: None,
            batch: Vec::new(),
            pos: 0,
            name,
        };
        let seq = expected.seq;
        self.divergence(
            DivergenceKind::Mismatch,
            &tmp,
            Some(expected),
            Actual {
                kind,
                site,
                digest,
                context: None,
            },
        )
        .with_seq(seq)
    }

    /// Logical id and name of the calling thread, if it is bound to this replayer.
    fn current_thread(&self) -> Option<(u32, String)> {
        LOCAL
            .try_with(|l| {
                l.borrow()
                    .as_ref()
                    .filter(|x| x.gen == self.inner.gen)
                    .map(|x| (x.thread, x.name.clone()))
            })
            .ok()
            .flatten()
    }

    /// Moves every event of unordered kind `kind` ([`ReplayConfig::unordered`]) taken in so
    /// far for the calling thread to `out`, in recorded order, without waiting for a turn;
    /// returns the thread's logical id. Reads on in the log while there are none; none at all
    /// is [`DivergenceKind::Exhausted`] (or [`DivergenceKind::Cut`]). Taking them all at once
    /// lets the caller serve the thread's writes without a lock.
    /// Takes the events of unordered kind `kind` (a live kind id) that the reader has read
    /// so far, of every recorded thread, in sequence order: for a front end that acts on them
    /// itself, not a thread of the program (the JVM's recorded signals).
    pub fn take_unordered_of_all(&self, kind: u32) -> Vec<Event> {
        let mut u = self.inner.unordered.lock().unwrap();
        let mut out: Vec<Event> = u
            .queues
            .iter_mut()
            .filter(|((_, k), _)| *k == kind)
            .flat_map(|(_, q)| q.drain(..))
            .collect();
        out.sort_by_key(|e| e.seq);
        out
    }

    /// Whether the reader has read events of unordered kind `kind` that nobody took yet.
    pub fn has_unordered_of_all(&self, kind: u32) -> bool {
        let u = self.inner.unordered.lock().unwrap();
        u.queues
            .iter()
            .any(|((_, k), q)| *k == kind && !q.is_empty())
    }

    pub fn take_unordered(
        &self,
        kind: u32,
        out: &mut VecDeque<Event>,
    ) -> Result<u32, Box<Divergence>> {
        let r = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let local = self.bound(&mut l);
            loop {
                {
                    let mut u = self.inner.unordered.lock().unwrap();
                    if let Some(q) = u.queues.get_mut(&(local.thread, kind)) {
                        if !q.is_empty() {
                            // Usually `out` is empty: a swap, not a move of every event.
                            if out.is_empty() {
                                std::mem::swap(out, q);
                            } else {
                                out.append(q);
                            }
                            return Ok(local.thread);
                        }
                    }
                }
                let mut src = self.inner.source.lock().unwrap();
                if !self.read_more(&mut src) {
                    break;
                }
            }
            // The caller counts what was served (the core: bytes of output).
            Err(self.divergence(
                DivergenceKind::Exhausted {
                    recorded: 0,
                    of_kind: true,
                },
                local,
                None,
                Actual {
                    kind,
                    site: 0,
                    digest: None,
                    context: None,
                },
            ))
        });
        r.unwrap_or_else(|_| Err(self.exiting(kind, 0, None)))
    }

    /// Strict order: moves the cursor past unordered events it stands at (no thread takes
    /// them in turn). Called when the cursor reaches the lowest of them, and after a chunk
    /// brought new ones.
    fn pass_unordered(&self) {
        if !self.inner.strict {
            return;
        }
        let mut moved = false;
        {
            let mut u = self.inner.unordered.lock().unwrap();
            loop {
                let c = self.inner.cursor.load(Ordering::Acquire);
                while u.ahead.peek().is_some_and(|r| r.0 < c) {
                    u.ahead.pop();
                }
                // No thread's turn is `c` (its event is out of the queues), so only this
                // moves the cursor from there. A write waits until its thread starts on it
                // (see `unordered_started`).
                if u.ahead.peek().map(|r| r.0) == Some(c)
                    && !u.unstarted_gated.contains(&c)
                    && self
                        .inner
                        .cursor
                        .compare_exchange(c, c + 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    u.ahead.pop();
                    moved = true;
                }
                let first = u.ahead.peek().map_or(NONE, |r| r.0);
                // A thread moving the cursor stores it, then loads `next_unordered`
                // (`cursor_moved`); this stores `next_unordered`, then loads the cursor. Unless
                // all four are SeqCst each side may see the other's old value (a store-load
                // reordering x86 makes too) and nobody moves the cursor past `first`: replay
                // stalled with "event #N was never replayed" (threads seeding `new Random()`).
                self.inner.next_unordered.store(first, Ordering::SeqCst);
                let c = self.inner.cursor.load(Ordering::SeqCst);
                if c == first && !u.unstarted_gated.contains(&first) {
                    continue;
                }
                break;
            }
        }
        if moved && self.inner.parked.load(Ordering::Acquire) > 0 {
            let _g = self.inner.park.lock().unwrap();
            self.inner.wake.notify_all();
        }
    }

    /// A thread starts on its unordered event `seq` of `kind` (a write it begins to match):
    /// if another thread's event of the kind came before it in the recording and was not
    /// started yet, their order differs from the recording's; returns that event's number
    /// and recorded thread. (An event the log holds later than one after it, written late
    /// by its recorder, can only hide a difference, never invent one.)
    pub fn unordered_start(&self, kind: u32, seq: u64) -> Option<(u64, u32)> {
        // The usual case, one thread writing: nothing to check, no lock.
        if !self.inner.many_writers.load(Ordering::Acquire) {
            return None;
        }
        let mut u = self.inner.unordered.lock().unwrap();
        let waiting = u.unstarted.get_mut(&kind)?;
        let first = waiting.first_key_value().map(|(s, t)| (*s, *t));
        waiting.remove(&seq);
        first.filter(|(s, _)| *s < seq)
    }

    /// A thread starts on its recorded event `seq` of a gated (`output.*`) kind: from now
    /// on the strict cursor may pass it. Threads' writes are compared out of their turns (a
    /// thread holding a stream's lock must never wait for a turn), but the cursor does not
    /// pass a write before it is started, so the threads whose turns come after it in the
    /// recording wait for it: with sleeps completed at their turns, a thread that woke would
    /// otherwise print before another thread's earlier line.
    pub fn unordered_started(&self, seq: u64) {
        if !self.inner.strict || !self.inner.gate.load(Ordering::Acquire) {
            return;
        }
        let removed = self
            .inner
            .unordered
            .lock()
            .unwrap()
            .unstarted_gated
            .remove(&seq);
        if removed {
            self.pass_unordered();
        }
    }

    /// The cursor no longer waits for writes to be started (output is not compared, or a
    /// stream's comparison failed and its writes are no longer matched to events).
    pub fn ungate(&self) {
        if !self.inner.gate.swap(false, Ordering::AcqRel) {
            return;
        }
        self.inner.unordered.lock().unwrap().unstarted_gated.clear();
        self.pass_unordered();
    }

    /// The earliest unordered event of one of `kinds` not served, as (sequence number,
    /// recorded thread, kind).
    pub fn unordered_left(&self, kinds: &[u32]) -> Option<(u64, u32, u32)> {
        let u = self.inner.unordered.lock().unwrap();
        u.queues
            .iter()
            .filter(|((_, k), _)| kinds.contains(k))
            .filter_map(|((t, k), q)| q.front().map(|e| (e.seq, *t, *k)))
            .min()
    }

    /// The calling thread's next recorded event of unordered kind `kind`
    /// ([`ReplayConfig::unordered`]), in the thread's own order of that kind, without waiting
    /// for a turn: for values a thread takes from something shared in an order that races
    /// (a seed generator), which it must get back whatever the other threads do meanwhile.
    /// Reads on in the log while there is none; none at all is a divergence.
    /// Whether the calling thread has a recorded event of unordered kind `kind` left
    /// ([`Self::next_unordered`] would serve it), reading ahead as that does.
    pub fn has_unordered(&self, kind: u32) -> bool {
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                let local = self.bound(&mut l);
                loop {
                    let u = self.inner.unordered.lock().unwrap();
                    if u.queues
                        .get(&(local.thread, kind))
                        .is_some_and(|q| !q.is_empty())
                    {
                        return true;
                    }
                    drop(u);
                    let mut src = self.inner.source.lock().unwrap();
                    if !self.read_more(&mut src) {
                        return false;
                    }
                }
            })
            .unwrap_or(false)
    }

    pub fn next_unordered(&self, kind: u32, site: u32) -> Result<Event, Box<Divergence>> {
        let r = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let local = self.bound(&mut l);
            loop {
                {
                    let mut u = self.inner.unordered.lock().unwrap();
                    let got = u
                        .queues
                        .get_mut(&(local.thread, kind))
                        .and_then(|q| q.pop_front());
                    if let Some(e) = got {
                        // No order across threads to check for these.
                        if let Some(w) = u.unstarted.get_mut(&kind) {
                            w.remove(&e.seq);
                        }
                        return Ok(e);
                    }
                }
                let mut src = self.inner.source.lock().unwrap();
                if !self.read_more(&mut src) {
                    break;
                }
            }
            Err(self.divergence(
                DivergenceKind::Exhausted {
                    recorded: 0,
                    of_kind: true,
                },
                local,
                None,
                Actual {
                    kind,
                    site,
                    digest: None,
                    context: None,
                },
            ))
        });
        r.unwrap_or_else(|_| Err(self.exiting(kind, site, None)))
    }

    /// Logical id and name of the calling thread, binding it to a recorded thread first if
    /// this is its first call (as [`Self::next`] would).
    pub fn caller(&self) -> (u32, String) {
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                let local = self.bound(&mut l);
                (local.thread, local.name.clone())
            })
            .unwrap_or((u32::MAX, "exiting thread".into()))
    }

    /// [`Self::caller`]'s id alone (no name to copy): once per write a program makes.
    pub fn caller_id(&self) -> u32 {
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                self.bound(&mut l).thread
            })
            .unwrap_or(u32::MAX)
    }

    /// The number of events read from the log so far (all of them after [`Self::finish`]).
    pub fn end_seq(&self) -> u64 {
        self.inner.source.lock().unwrap().total
    }

    /// Moves past the event at the cursor; the caller publishes the new front (once per call).
    fn consume(&self, local: &mut Local, seq: u64) {
        local.pos += 1;
        if let Some(q) = &local.queue {
            // Only the bound thread writes its counter: a plain store, not a locked add.
            q.consumed
                .store(q.consumed.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
        if self.inner.strict {
            // A swap, not a plain store: SeqCst (see `pass_unordered`).
            self.inner.cursor.swap(seq + 1, Ordering::SeqCst);
            self.cursor_moved(seq + 1);
        }
    }

    /// Strict order, after this thread moved the cursor to `c`: wakes parked threads, and
    /// moves past unordered events standing there.
    fn cursor_moved(&self, c: u64) {
        if self.inner.parked.load(Ordering::Acquire) > 0 {
            let _g = self.inner.park.lock().unwrap();
            self.inner.wake.notify_all();
        }
        if self.inner.next_unordered.load(Ordering::SeqCst) <= c {
            self.pass_unordered();
        }
    }

    /// The next event of this thread without consuming it (reads more of the log if needed).
    fn peek<'a>(&self, local: &'a mut Local) -> Option<&'a Event> {
        if local.pos < local.batch.len() {
            return local.batch.get(local.pos);
        }
        let q = local.queue.clone()?;
        loop {
            let popped = {
                let mut batches = q.batches.lock().unwrap();
                let b = batches.pop_front();
                // Under the lock: finish, reading both under it, sees the batch in one place.
                if let Some(b) = &b {
                    q.front
                        .store(b.first().map_or(NONE, |e| e.seq), Ordering::Relaxed);
                }
                b
            };
            if let Some(b) = popped {
                local.batch = b;
                local.pos = 0;
                if !local.batch.is_empty() {
                    return local.batch.first();
                }
                continue;
            }
            let mut src = self.inner.source.lock().unwrap();
            if !q.batches.lock().unwrap().is_empty() {
                continue;
            }
            if !self.read_more(&mut src) && q.batches.lock().unwrap().is_empty() {
                return None;
            }
        }
    }

    fn wait_turn(&self, local: &mut Local, seq: u64, kind: u32) -> Result<(), Box<Divergence>> {
        let inner = &self.inner;
        if inner.cursor.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let q = local.queue.clone().unwrap();
        q.waiting_for.store(seq, Ordering::Relaxed);
        q.waiting_kind.store(u64::from(kind), Ordering::Relaxed);
        let mut last = inner.cursor.load(Ordering::Acquire);
        let mut since = Instant::now();
        let mut spins = 0u32;
        let result = loop {
            let c = inner.cursor.load(Ordering::Acquire);
            if c >= seq {
                break Ok(());
            }
            if inner.gone_live.load(Ordering::Relaxed) {
                break Ok(());
            }
            if c != last {
                last = c;
                since = Instant::now();
                spins = 0;
            }
            spins += 1;
            if spins < 256 {
                std::hint::spin_loop();
                continue;
            }
            if spins < 320 {
                std::thread::yield_now();
                continue;
            }
            if since.elapsed() >= inner.timeout {
                let d = self.divergence(
                    DivergenceKind::Stalled {
                        cursor: c,
                        waited: inner.timeout,
                    },
                    local,
                    None,
                    Actual {
                        kind,
                        site: 0,
                        digest: None,
                        context: None,
                    },
                );
                break Err(d.with_seq(seq));
            }
            if since.elapsed() >= CUT_CHECK {
                if let Some((offset, why)) = self.lost(c) {
                    let d = self.divergence(
                        DivergenceKind::Cut { offset, why },
                        local,
                        None,
                        Actual {
                            kind,
                            site: 0,
                            digest: None,
                            context: None,
                        },
                    );
                    break Err(d.with_seq(c));
                }
            }
            inner.parked.fetch_add(1, Ordering::AcqRel);
            let g = inner.park.lock().unwrap();
            if inner.cursor.load(Ordering::Acquire) < seq
                && !inner.gone_live.load(Ordering::Relaxed)
            {
                let _ = inner
                    .wake
                    .wait_timeout(g, Duration::from_millis(5))
                    .unwrap();
            }
            inner.parked.fetch_sub(1, Ordering::AcqRel);
        };
        q.waiting_for.store(NONE, Ordering::Relaxed);
        result
    }

    /// Whether event `c`, which the cursor waits for, can never come because the log was cut
    /// before it was written: the whole log is read, it ends in a cut, and no thread holds an
    /// unconsumed event at or before `c`. While the log is not read to its end, reads one more
    /// chunk toward knowing.
    fn lost(&self, c: u64) -> Option<(u64, String)> {
        let (offset, why) = {
            let mut src = self.inner.source.lock().unwrap();
            if src.reader.is_some() {
                self.read_more(&mut src);
                return None;
            }
            match &src.end {
                Some(End::Cut { offset, why }) => (*offset, why.clone()),
                _ => return None,
            }
        };
        match self.first_left() {
            Some((s, _)) if s <= c => None,
            _ => Some((offset, why)),
        }
    }

    /// The event logical thread `thread` waits for its turn at (strict order), if it waits:
    /// a front end that sees a thread blocked on something the recorded order says comes
    /// later (a lock it holds) reports the divergence instead of waiting for the timeout.
    pub fn waiting_for(&self, thread: u32) -> Option<u64> {
        let queues = self.inner.queues.read().unwrap();
        let w = queues.get(&thread)?.waiting_for.load(Ordering::Relaxed);
        (w != NONE).then_some(w)
    }

    /// Every recorded thread and what it does now, as stall reports list them.
    pub fn thread_states(&self) -> Vec<ThreadState> {
        let src = self.inner.source.lock().unwrap();
        let queues = self.inner.queues.read().unwrap();
        let mut v: Vec<ThreadState> = src
            .names
            .iter()
            .map(|(id, name)| {
                let q = queues.get(id);
                ThreadState {
                    id: *id,
                    name: name.clone().unwrap_or_else(|| format!("thread-{id}")),
                    present: q.is_some_and(|q| q.claimed.load(Ordering::Relaxed)),
                    consumed: q.map_or(0, |q| q.consumed.load(Ordering::Relaxed)),
                    recorded_so_far: q.map_or(0, |q| q.handed.load(Ordering::Relaxed)),
                    waiting_for: q.and_then(|q| {
                        let w = q.waiting_for.load(Ordering::Relaxed);
                        (w != NONE)
                            .then(|| (w, self.text(q.waiting_kind.load(Ordering::Relaxed) as u32)))
                    }),
                }
            })
            .collect();
        v.sort_by_key(|t| t.id);
        v
    }

    fn divergence(
        &self,
        kind: DivergenceKind,
        local: &Local,
        expected: Option<Event>,
        actual: Actual,
    ) -> Box<Divergence> {
        let cursor = self.inner.cursor.load(Ordering::Acquire);
        // A thread past its last event in a log that was cut: the recording ends there; the
        // program did nothing wrong that replay can tell.
        let kind = match kind {
            DivergenceKind::Exhausted { .. } => match self.end() {
                Some(End::Cut { offset, why }) => DivergenceKind::Cut { offset, why },
                _ => kind,
            },
            k => k,
        };
        let mut d = Divergence {
            kind,
            seq: expected.as_ref().map(|e| e.seq).unwrap_or(cursor),
            thread: local.thread,
            thread_name: local.name.clone(),
            expected_kind: expected.as_ref().map(|e| self.text(e.kind)),
            expected_site: expected.as_ref().map(|e| self.text(e.site)),
            expected: expected.clone(),
            actual_kind: self.text(actual.kind),
            actual_site: self.text(actual.site),
            actual,
            threads: Vec::new(),
            log: self.inner.path.clone(),
            live: Vec::new(),
        };
        if matches!(
            d.kind,
            DivergenceKind::Stalled { .. } | DivergenceKind::Leftover { .. }
        ) {
            d.threads = self.thread_states();
        }
        Box::new(d)
    }

    /// The recorded events in order (unordered ones are the caller's to check:
    /// `unordered_left`) and how many of them were consumed, the rest of the log read first.
    fn counts(&self) -> (u64, u64) {
        {
            let mut src = self.inner.source.lock().unwrap();
            while self.read_more(&mut src) {}
        }
        let (total, diverted) = {
            let src = self.inner.source.lock().unwrap();
            (src.total, src.diverted)
        };
        let consumed: u64 = self
            .inner
            .queues
            .read()
            .unwrap()
            .values()
            .map(|q| q.consumed.load(Ordering::Relaxed))
            .sum();
        (total - diverted, consumed)
    }

    /// Recorded events not consumed yet ([`Self::counts`]).
    fn unconsumed(&self) -> u64 {
        let (total, consumed) = self.counts();
        total.saturating_sub(consumed)
    }

    /// At the program's end, before [`Self::finish`]: waits while other threads still take
    /// their recorded turns. The end came after every recorded event, but it is not an
    /// event: a thread the recording saw wake just before the program exited (HttpServer's
    /// timer thread, woken by `stop`, then `System.exit`) may not have had its turn yet when
    /// the replayed exit comes. Waits until the recording is used up, or nothing was
    /// consumed for a moment (the events left are then the exiting thread's own, or stuck),
    /// at most a few seconds.
    pub fn settle(&self) {
        if self.is_live() {
            return;
        }
        let started = Instant::now();
        let mut moved = Instant::now();
        let mut left = self.unconsumed();
        while left > 0
            && moved.elapsed() < Duration::from_millis(250)
            && started.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(2));
            let now = self.unconsumed();
            if now != left {
                left = now;
                moved = Instant::now();
            }
        }
    }

    /// Checks that the recording was used up. Reads the rest of the log to count what is
    /// left, and names the earliest event left unused and its thread: wherever it waits (a
    /// thread's batch or queue, a per-kind stash of [`Self::next_of`], events given back by
    /// [`Self::unread_of`]), in either order, and after the thread that held it ended.
    pub fn finish(&self) -> Result<(), Box<Divergence>> {
        if self.is_live() {
            return Ok(());
        }
        let (total, consumed) = self.counts();
        if consumed >= total {
            return Ok(());
        }
        let cursor = self.inner.cursor.load(Ordering::Acquire);
        let (thread, name, seq) = match self.first_left() {
            Some((seq, id)) => (id, self.recorded_name(id), seq),
            // Only events of threads the log never declared can be unaccounted for: name the
            // cursor (strict: the first unconsumed event) and the calling thread.
            None => {
                let (t, n) = self.current_thread().unwrap_or((0, "main".into()));
                (t, n, cursor)
            }
        };
        let tmp = Local {
            gen: 0,
            thread,
            queue: None,
            batch: Vec::new(),
            pos: 0,
            name,
        };
        let d = self.divergence(
            DivergenceKind::Leftover {
                left: total - consumed,
                total,
            },
            &tmp,
            None,
            Actual {
                kind: 0,
                site: 0,
                digest: None,
                context: None,
            },
        );
        Err(d.with_seq(seq))
    }

    /// The earliest unconsumed event of any thread, as (sequence number, recorded thread):
    /// the minimum of what each queue's thread published (its batch's next event, its stash's
    /// first) and of the batches still in the queue. Each thread's own events are in order
    /// there, so the minimum is the first one left.
    fn first_left(&self) -> Option<(u64, u32)> {
        let queues = self.inner.queues.read().unwrap();
        queues
            .iter()
            .filter_map(|(id, q)| {
                let batches = q.batches.lock().unwrap();
                let queued = batches
                    .iter()
                    .find_map(|b| b.first())
                    .map_or(NONE, |e| e.seq);
                let first = q
                    .front
                    .load(Ordering::Relaxed)
                    .min(q.stash_front.load(Ordering::Relaxed))
                    .min(queued);
                (first != NONE).then_some((first, *id))
            })
            .min()
    }

    /// The recorded name of logical thread `id`, as the reports name threads.
    /// The recorded name of logical thread `id` (`thread-N` when it had none).
    pub fn recorded_thread_name(&self, id: u32) -> String {
        self.recorded_name(id)
    }

    /// Takes the next unordered event of `kind` recorded by logical thread `thread`, for a
    /// report of what a thread left unwritten (any thread's, unlike [`Self::next_unordered`]).
    pub fn next_unordered_of(&self, thread: u32, kind: u32) -> Option<Event> {
        let mut u = self.inner.unordered.lock().unwrap();
        u.queues.get_mut(&(thread, kind))?.pop_front()
    }

    fn recorded_name(&self, id: u32) -> String {
        let src = self.inner.source.lock().unwrap();
        src.names
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, n)| n.clone())
            .unwrap_or_else(|| format!("thread-{id}"))
    }

    /// How the log ended, once it has been read to its end.
    pub fn end(&self) -> Option<End> {
        self.inner.source.lock().unwrap().end.clone()
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;
    use crate::format::PayloadRef;
    use crate::recorder::{RecordConfig, Recorder};
    use crate::report::DivergenceKind;

    fn val(e: &Event) -> u64 {
        match e.payload {
            crate::event::Payload::Uint { value } => value,
            ref p => panic!("{p:?}"),
        }
    }

    /// Recorded on one thread: a0 b0 a1 b1 a2 c(digest) a3 a4.
    fn log(dir: &Path) -> PathBuf {
        let p = dir.join("run.replay");
        let r = Recorder::open(RecordConfig::for_test(p.clone())).unwrap();
        let (a, b, c) = (r.intern("a"), r.intern("b"), r.intern("c"));
        for i in 0..2u64 {
            r.record(a, 0, None, PayloadRef::Uint(i));
            r.record(b, 0, None, PayloadRef::Uint(10 + i));
        }
        r.record(a, 0, None, PayloadRef::Uint(2));
        r.record(c, 0, Some(5), PayloadRef::Uint(20));
        r.record(a, 0, None, PayloadRef::Uint(3));
        r.record(a, 0, None, PayloadRef::Uint(4));
        r.finish().unwrap();
        p
    }

    fn open(p: &Path) -> Replayer {
        Replayer::open(ReplayConfig {
            path: p.to_path_buf(),
            order: Order::Strict,
            timeout: Duration::from_secs(2),
            unordered: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn next_of_run_takes_a_kind_in_order_past_other_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let rp = open(&log(dir.path()));
        let (a, b, c) = (rp.intern("a"), rp.intern("b"), rp.intern("c"));
        let mut run = Vec::new();
        rp.next_of_run(a, 3, &mut run).unwrap();
        assert_eq!(run.iter().map(val).collect::<Vec<_>>(), vec![0, 1, 2]);
        // b's events read past are still b's, in order.
        run.clear();
        rp.next_of_run(b, 10, &mut run).unwrap();
        assert_eq!(run.iter().map(val).collect::<Vec<_>>(), vec![10, 11]);
        run.clear();
        rp.next_of_run(a, 10, &mut run).unwrap();
        assert_eq!(run.iter().map(val).collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(val(&rp.next_of(c, 0, Some(5)).unwrap()), 20);
        // None left: the next call of the kind is reported at that call.
        run.clear();
        let d = rp.next_of_run(a, 10, &mut run).unwrap_err();
        assert!(
            matches!(d.kind, DivergenceKind::Exhausted { recorded: 5, .. }),
            "{}",
            d.render()
        );
        rp.finish().unwrap();
    }

    #[test]
    fn unread_events_are_served_again_or_left_over() {
        let dir = tempfile::tempdir().unwrap();
        let rp = open(&log(dir.path()));
        let (a, b, c) = (rp.intern("a"), rp.intern("b"), rp.intern("c"));
        let mut run = Vec::new();
        rp.next_of_run(a, 10, &mut run).unwrap();
        // Every a (b0, b1 and c read past into their stashes).
        assert_eq!(run.iter().map(val).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
        // Two used; three go back and come out again in order.
        rp.unread_of(a, run.split_off(2));
        assert_eq!(val(&rp.next_of(a, 0, None).unwrap()), 2);
        run.clear();
        rp.next_of_run(b, 10, &mut run).unwrap();
        rp.next_of(c, 0, Some(5)).unwrap();
        // a3 and a4 unused at the end: left over, naming the first of them.
        let d = rp.finish().unwrap_err();
        assert!(
            matches!(d.kind, DivergenceKind::Leftover { left: 2, total: 8 }),
            "{}",
            d.render()
        );
        assert_eq!(d.seq, 6);
    }

    #[test]
    fn a_reader_thread_that_panics_is_a_read_error_not_a_hang() {
        let (tx, rx) = sync_channel::<Msg>(READ_AHEAD);
        let t = std::thread::spawn(move || {
            let _tx = tx;
            panic!("decoder bug");
        });
        assert!(t.join().is_err());
        assert!(
            matches!(Feed::Ahead(rx, Default::default()).next(), Msg::Error(e) if e == "the log reader thread failed")
        );
    }

    #[test]
    fn next_of_run_reads_past_at_most_max_other_events() {
        let dir = tempfile::tempdir().unwrap();
        let rp = open(&log(dir.path()));
        let b = rp.intern("b");
        let mut run = Vec::new();
        // b0 is after a0; b1 after a1: with max 1 only b0 is taken (one a stashed).
        rp.next_of_run(b, 1, &mut run).unwrap();
        assert_eq!(run.iter().map(val).collect::<Vec<_>>(), vec![10]);
        run.clear();
        rp.next_of_run(b, 2, &mut run).unwrap();
        assert_eq!(run.iter().map(val).collect::<Vec<_>>(), vec![11]);
    }
}

/// A thread name with its numbers and identity hashes (`@` and hex digits) blanked: what stays
/// the same from run to run when a name holds hash codes or counters.
pub(crate) fn name_shape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut it = name.chars().peekable();
    while let Some(c) = it.next() {
        if c == '@' && it.peek().is_some_and(|d| d.is_ascii_hexdigit()) {
            while it.peek().is_some_and(|d| d.is_ascii_hexdigit()) {
                it.next();
            }
            out.push_str("@#");
        } else if c.is_ascii_digit() {
            while it.peek().is_some_and(|d| d.is_ascii_digit()) {
                it.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod shape_tests {
    use super::name_shape;

    #[test]
    fn thread_names_match_by_shape_across_hash_codes_and_counters() {
        assert_eq!(
            name_shape("qtp931919113-14-acceptor-0@259f9b6a-ServerConnector@14034aa{HTTP/1.1}"),
            name_shape("qtp1846412426-13-acceptor-0@7aec35a-ServerConnector@5b2133b1{HTTP/1.1}")
        );
        assert_eq!(name_shape("pool-1-thread-2"), "pool-#-thread-#");
        assert_ne!(name_shape("main"), name_shape("worker"));
    }
}
