//! The recorder: one global sequence counter, per-thread chunks appended without a lock,
//! and a background flusher that writes them by size and by time.
//!
//! Hot path (`record`): one `fetch_add` on the sequence counter, a thread-local lookup, a
//! copy into the thread's current chunk and a release store of the chunk's length. The
//! flusher reads every chunk up to its published length, so events of a thread that
//! stopped appending still reach the disk within one flush interval; when a chunk fills,
//! the thread hands it to the flusher and takes a fresh one from a pool. The number of
//! chunks waiting for the flusher is bounded: a thread that would exceed it waits, so
//! memory stays bounded however long the recording runs.

use crate::event::Record;
use crate::format::{
    record_size, BatchBuilder, HeaderInfo, PayloadRef, RunBuilder, TrailerInfo, BATCH_BYTES,
    BATCH_EVENTS, MAX_PAYLOAD, THREAD_CHUNK_EVENTS,
};
use crate::writer::LogWriter;
use std::cell::{RefCell, UnsafeCell};
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const FIRST_EVENTS: usize = 256;
const MAX_EVENTS: usize = THREAD_CHUNK_EVENTS;
const FIRST_DATA: usize = 4096;
const MAX_DATA: usize = 256 << 10;
/// Full chunks allowed to wait for the flusher before appenders wait (memory bound).
const MAX_PENDING: usize = 64;

#[derive(Clone, Copy)]
struct RawEvent {
    seq: u64,
    digest: u64,
    value: u64,
    kind: u32,
    site: u32,
    errno: i32,
    data_off: u32,
    data_len: u32,
    /// Payload type; bit 7 = digest present; bit 6 = data present.
    tag: u8,
}

const T_DIGEST: u8 = 0x80;
const T_DATA: u8 = 0x40;

struct Chunk {
    events: Box<[UnsafeCell<MaybeUninit<RawEvent>>]>,
    data: Box<[UnsafeCell<MaybeUninit<u8>>]>,
    /// Events published by the owning thread (release); the flusher reads up to here.
    committed: AtomicUsize,
    /// Events already taken by the flusher; only the flusher touches it.
    taken: AtomicUsize,
    thread: AtomicU32,
    /// Structured payloads are rare and large; they travel beside the chunk.
    records: Mutex<Vec<(usize, Record)>>,
}

// SAFETY: the owning thread writes only slots at or beyond `committed`, and publishes them
// with a release store; the flusher reads only slots below an acquired `committed`.
unsafe impl Sync for Chunk {}
unsafe impl Send for Chunk {}

impl Chunk {
    fn new(events: usize, data: usize, thread: u32) -> Arc<Chunk> {
        Arc::new(Chunk {
            events: uninit_slice(events),
            data: uninit_slice(data),
            committed: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            thread: AtomicU32::new(thread),
            records: Mutex::new(Vec::new()),
        })
    }
}

/// An uninitialised slice without touching its memory (a chunk's arena is 256 KiB; filling
/// it element by element cost more than the appends it serves).
fn uninit_slice<T>(n: usize) -> Box<[UnsafeCell<MaybeUninit<T>>]> {
    let b = Box::<[UnsafeCell<MaybeUninit<T>>]>::new_uninit_slice(n);
    // SAFETY: every element is itself a `MaybeUninit`, for which uninitialised memory is valid.
    unsafe { b.assume_init() }
}

struct SlotInner {
    current: Arc<Chunk>,
    full: Vec<Arc<Chunk>>,
}

struct Slot {
    inner: Mutex<SlotInner>,
    dead: AtomicBool,
}

struct Local {
    gen: u64,
    thread: u32,
    slot: Arc<Slot>,
    chunk: Arc<Chunk>,
    len: usize,
    data_len: usize,
    /// Estimated size of the records in `chunk`: records live beside the data arena, so
    /// without this a chunk of 8192 large records (http bodies) outgrew a log frame.
    rec_bytes: usize,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.slot.dead.store(true, Ordering::Release);
    }
}

/// A thread's logical thread: its own, or shared with an [`Appender`]
/// ([`Recorder::shared_appender`]), which other OS threads may append through too.
enum Mine {
    Own(Local),
    Shared { gen: u64, local: Arc<Mutex<Local>> },
}

impl Mine {
    fn gen(&self) -> u64 {
        match self {
            Mine::Own(l) => l.gen,
            Mine::Shared { gen, .. } => *gen,
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Option<Mine>> = const { RefCell::new(None) };
    /// Whether this is a flusher thread: its appends (a front end's drain) never wait for
    /// the flusher, which is itself.
    static IN_FLUSHER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static NEXT_GEN: AtomicU64 = AtomicU64::new(1);

#[derive(Default)]
struct Tables {
    strings: HashMap<String, u32>,
    next_string: u32,
    new_strings: Vec<(u32, String)>,
    next_thread: u32,
    new_threads: Vec<(u32, u32)>,
    names: HashMap<u32, u32>,
}

impl Tables {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        self.next_string += 1;
        let id = self.next_string;
        self.strings.insert(s.to_string(), id);
        self.new_strings.push((id, s.to_string()));
        id
    }
}

struct Signal {
    /// Full chunks waiting, plus requests.
    state: Mutex<SignalState>,
    flusher: Condvar,
    appenders: Condvar,
}

#[derive(Default)]
struct SignalState {
    pending: usize,
    closing: bool,
    flush_requests: u64,
    flush_done: u64,
}

/// The sequence counter and the stop flag, alone on their cache lines: every append does a
/// locked add on the counter, and a mutex word sharing its line (the flusher locks several)
/// turned each add into a cache miss.
#[repr(align(128))]
struct HotCounter {
    seq: AtomicU64,
    stopped: AtomicBool,
}

struct Inner {
    gen: u64,
    hot: HotCounter,
    tables: Mutex<Tables>,
    slots: Mutex<Vec<Arc<Slot>>>,
    pool: Mutex<Vec<Arc<Chunk>>>,
    signal: Signal,
    failure: Mutex<Option<String>>,
    start: Instant,
    path: PathBuf,
    flush_every: Duration,
    dropped: AtomicU64,
    /// The program's exit status for the trailer ([`Recorder::set_exit_status`]);
    /// `NO_EXIT` when not known.
    exit_status: AtomicI64,
    /// What the program wrote into files, for the trailer ([`Recorder::set_files`]).
    files: Mutex<Vec<crate::format::FileWritten>>,
    /// A front end's drain, run by the flusher before each round that writes everything
    /// published ([`Recorder::on_round`]).
    round_hook: Mutex<Option<RoundHook>>,
    /// Set by the first [`Appender::drained`]: a front end numbers buffered events when it
    /// drains them, and time marks are the drains', not the writes'. A mark
    /// taken at a write claims that what is numbered after it happened after it; an event
    /// published to a front end's buffer just after a drain is numbered after such a mark
    /// but happened before it, by as long as the flusher's round took (2.6 ms measured on a
    /// loaded machine, and `replay timeline` then left clock reads unanchored).
    drain_marks: AtomicBool,
    /// The latest drain's mark: (the next sequence number after it, the time just before
    /// it read what was published).
    drain_mark: Mutex<Option<(u64, u64)>>,
}

type RoundHook = Arc<dyn Fn() + Send + Sync>;

const NO_EXIT: i64 = i64::MIN;

/// Settings for [`Recorder::open`].
pub struct RecordConfig {
    pub path: PathBuf,
    pub header: HeaderInfo,
    pub sync: bool,
    pub flush: Duration,
    /// Name of logical thread 0, the thread that opens the recorder.
    pub main_thread: String,
    /// zstd level of the chunks, 0 for none (the `compress` option).
    pub compress: u8,
}

#[cfg(test)]
impl RecordConfig {
    /// The settings the unit tests record with: a test header, no sync, a short flush.
    pub(crate) fn for_test(path: PathBuf) -> RecordConfig {
        RecordConfig {
            path,
            header: HeaderInfo::for_this_process("test", "1", vec![]),
            sync: false,
            flush: Duration::from_millis(20),
            main_thread: "main".into(),
            compress: 1,
        }
    }
}

type FlusherHandle = std::thread::JoinHandle<Result<TrailerInfo, String>>;

#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
    flusher: Arc<Mutex<Option<FlusherHandle>>>,
}

impl Recorder {
    /// Creates the log (mode 0600), writes its header and starts the flusher. The calling
    /// thread becomes logical thread 0.
    pub fn open(cfg: RecordConfig) -> std::io::Result<Recorder> {
        let writer = LogWriter::create_with(&cfg.path, &cfg.header, cfg.sync, cfg.compress)?;
        let inner = Arc::new(Inner {
            gen: NEXT_GEN.fetch_add(1, Ordering::Relaxed),
            hot: HotCounter {
                seq: AtomicU64::new(0),
                stopped: AtomicBool::new(false),
            },
            tables: Mutex::new(Tables::default()),
            slots: Mutex::new(Vec::new()),
            pool: Mutex::new(Vec::new()),
            signal: Signal {
                state: Mutex::new(SignalState::default()),
                flusher: Condvar::new(),
                appenders: Condvar::new(),
            },
            failure: Mutex::new(None),
            start: Instant::now(),
            path: cfg.path.clone(),
            flush_every: cfg.flush,
            dropped: AtomicU64::new(0),
            exit_status: AtomicI64::new(NO_EXIT),
            files: Mutex::new(Vec::new()),
            round_hook: Mutex::new(None),
            drain_marks: AtomicBool::new(false),
            drain_mark: Mutex::new(None),
        });
        let rec = Recorder {
            inner: inner.clone(),
            flusher: Arc::new(Mutex::new(None)),
        };
        rec.register(Some(&cfg.main_thread));
        let h = std::thread::Builder::new()
            .name("replay-flusher".into())
            .spawn(move || flusher_main(inner, writer))?;
        *rec.flusher.lock().unwrap() = Some(h);
        Ok(rec)
    }

    /// The global sequence counter. Front ends that buffer on their own side take numbers
    /// from it (`fetch_add(1)`) when each event happens, then hand the batch to
    /// [`Recorder::record_at`], so batching never reorders.
    pub fn seq_counter(&self) -> &AtomicU64 {
        &self.inner.hot.seq
    }

    /// Id of `text` in the log's string table (kinds, sites, names). Takes a lock: front ends
    /// intern once per hook or call site and keep the id.
    pub fn intern(&self, text: &str) -> u32 {
        self.inner.tables.lock().unwrap().intern(text)
    }

    /// Records one event now; returns its sequence number.
    #[inline]
    pub fn record(
        &self,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        payload: PayloadRef<'_>,
    ) -> u64 {
        let seq = self.inner.hot.seq.fetch_add(1, Ordering::Relaxed);
        self.record_at(seq, kind, site, digest, payload);
        seq
    }

    /// Records an event whose sequence number was taken earlier from [`Self::seq_counter`]
    /// by this same thread (numbers of one thread must be recorded in increasing order).
    #[inline]
    pub fn record_at(
        &self,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        payload: PayloadRef<'_>,
    ) {
        if self.inner.hot.stopped.load(Ordering::Relaxed) {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // try_with: a C thread's own TLS destructors may still make calls after ours ran;
        // such an event is dropped (and counted), never a panic across the FFI boundary.
        let r = self.with_local(|l| self.append(l, seq, kind, site, digest, payload));
        if r.is_err() {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The append itself, into `local`'s chunk (the stop check is the caller's).
    #[inline]
    fn append(
        &self,
        local: &mut Local,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        payload: PayloadRef<'_>,
    ) {
        let (tag, value, errno, data) = match payload {
            PayloadRef::None => (0u8, 0u64, 0, None),
            PayloadRef::Int(v) => (1, v as u64, 0, None),
            PayloadRef::Uint(v) => (2, v, 0, None),
            PayloadRef::Float(v) => (3, v.to_bits(), 0, None),
            PayloadRef::Bytes(d) => (4, 0, 0, Some(d)),
            PayloadRef::Ret { ret, errno, data } => (5, ret as u64, errno, data),
            PayloadRef::Record(_) => (6, 0, 0, None),
        };
        let data = match data {
            Some(d) if d.len() > MAX_PAYLOAD => {
                eprintln!(
                    "replay: an event of {} bytes exceeds the {} byte payload bound; its bytes are cut",
                    d.len(),
                    MAX_PAYLOAD
                );
                Some(&d[..MAX_PAYLOAD])
            }
            d => d,
        };
        let rlen = match payload {
            PayloadRef::Record(r) => record_size(r),
            _ => 0,
        };
        let dlen = data.map_or(0, |d| d.len());
        if local.len == local.chunk.events.len()
            || local.data_len + dlen > local.chunk.data.len()
            || (local.len > 0 && local.rec_bytes + rlen > MAX_DATA)
        {
            self.swap(local, dlen);
        }
        local.rec_bytes += rlen;
        let c = &local.chunk;
        let i = local.len;
        if let Some(d) = data {
            // SAFETY: [data_len, data_len + dlen) is within the arena (checked above) and
            // not yet published, so no other thread reads it.
            unsafe {
                let dst = c.data.as_ptr().add(local.data_len) as *mut u8;
                std::ptr::copy_nonoverlapping(d.as_ptr(), dst, dlen);
            }
        }
        if let PayloadRef::Record(r) = payload {
            c.records.lock().unwrap().push((i, r.clone()));
        }
        let ev = RawEvent {
            seq,
            digest: digest.unwrap_or(0),
            value,
            kind,
            site,
            errno,
            data_off: local.data_len as u32,
            data_len: dlen as u32,
            tag: tag
                | if digest.is_some() { T_DIGEST } else { 0 }
                | if data.is_some() { T_DATA } else { 0 },
        };
        // SAFETY: slot i is below the chunk's capacity and above `committed`.
        unsafe { (*c.events[i].get()).write(ev) };
        local.len = i + 1;
        local.data_len += dlen;
        c.committed.store(i + 1, Ordering::Release);
    }

    /// Records a `Record` event the caller hands over: the same event as [`Self::record`]
    /// with `PayloadRef::Record(&record)`, without copying the record (its byte fields can
    /// be large: a front end that builds the record for this call only saves a copy).
    pub fn record_owned(&self, kind: u32, site: u32, digest: Option<u64>, record: Record) -> u64 {
        let seq = self.inner.hot.seq.fetch_add(1, Ordering::Relaxed);
        self.record_owned_at(seq, kind, site, digest, record);
        seq
    }

    /// [`Self::record_owned`] with a sequence number taken earlier from
    /// [`Self::seq_counter`] by this same thread, as [`Self::record_at`] (a front end that
    /// buffers its events hands them over in one batch with numbers in their order).
    pub fn record_owned_at(
        &self,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        record: Record,
    ) {
        if self.inner.hot.stopped.load(Ordering::Relaxed) {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let r = self.with_local(|l| self.append_owned(l, seq, kind, site, digest, record));
        if r.is_err() {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn append_owned(
        &self,
        local: &mut Local,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        record: Record,
    ) {
        let rlen = record_size(&record);
        if local.len == local.chunk.events.len()
            || (local.len > 0 && local.rec_bytes + rlen > MAX_DATA)
        {
            self.swap(local, 0);
        }
        local.rec_bytes += rlen;
        let c = &local.chunk;
        let i = local.len;
        c.records.lock().unwrap().push((i, record));
        let ev = RawEvent {
            seq,
            digest: digest.unwrap_or(0),
            value: 0,
            kind,
            site,
            errno: 0,
            data_off: local.data_len as u32,
            data_len: 0,
            tag: 6 | if digest.is_some() { T_DIGEST } else { 0 },
        };
        // SAFETY: slot i is below the chunk's capacity and above `committed`.
        unsafe { (*c.events[i].get()).write(ev) };
        local.len = i + 1;
        c.committed.store(i + 1, Ordering::Release);
    }

    /// Records many `Int` events (site 0, no digest, no data) whose sequence numbers were
    /// taken earlier from [`Self::seq_counter`] by this same thread, in increasing order: the
    /// same events as one [`Self::record_at`] each, but with one thread-local lookup and one
    /// publication per chunk instead of one per event (a JVM thread hands over 1024 buffered
    /// clock reads at a time). Each item is `(seq, kind, value)`.
    pub fn record_batch(&self, events: impl IntoIterator<Item = (u64, u32, i64)>) {
        let mut events = events.into_iter().peekable();
        if events.peek().is_none() {
            return;
        }
        if self.inner.hot.stopped.load(Ordering::Relaxed) {
            self.inner
                .dropped
                .fetch_add(events.count() as u64, Ordering::Relaxed);
            return;
        }
        let r = self.with_local(|local| self.append_ints(local, &mut events));
        if r.is_err() {
            self.inner
                .dropped
                .fetch_add(events.count() as u64, Ordering::Relaxed);
        }
    }

    /// The batch append of [`Self::record_batch`] into `local`'s chunk (the stop check is
    /// the caller's).
    fn append_ints(&self, local: &mut Local, events: &mut impl Iterator<Item = (u64, u32, i64)>) {
        for (seq, kind, value) in events {
            if local.len == local.chunk.events.len() {
                // Publish what this chunk holds before swap hands it to the flusher.
                local.chunk.committed.store(local.len, Ordering::Release);
                self.swap(local, 0);
            }
            let i = local.len;
            let ev = RawEvent {
                seq,
                digest: 0,
                value: value as u64,
                kind,
                site: 0,
                errno: 0,
                data_off: local.data_len as u32,
                data_len: 0,
                tag: 1,
            };
            // SAFETY: slot i is below the chunk's capacity and above `committed`.
            unsafe { (*local.chunk.events[i].get()).write(ev) };
            local.len = i + 1;
        }
        local.chunk.committed.store(local.len, Ordering::Release);
    }

    /// Runs `f` on the calling thread's logical thread, made at its first use (`Err`: the
    /// thread's locals are being destroyed). A thread shared with an [`Appender`] takes its
    /// mutex for the call.
    #[inline]
    fn with_local<R>(
        &self,
        f: impl FnOnce(&mut Local) -> R,
    ) -> Result<R, std::thread::AccessError> {
        LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            if l.as_ref().is_none_or(|x| x.gen() != self.inner.gen) {
                *l = Some(Mine::Own(self.new_local(None)));
            }
            match l.as_mut() {
                Some(Mine::Own(x)) => f(x),
                Some(Mine::Shared { local, .. }) => {
                    f(&mut local.lock().unwrap_or_else(|p| p.into_inner()))
                }
                None => unreachable!("set above"),
            }
        })
    }

    fn new_local(&self, name: Option<&str>) -> Local {
        let mut t = self.inner.tables.lock().unwrap();
        let id = t.next_thread;
        t.next_thread += 1;
        let name_id = name.map_or(0, |n| t.intern(n));
        t.new_threads.push((id, name_id));
        t.names.insert(id, name_id);
        drop(t);
        let chunk = Chunk::new(FIRST_EVENTS, FIRST_DATA, id);
        let slot = Arc::new(Slot {
            inner: Mutex::new(SlotInner {
                current: chunk.clone(),
                full: Vec::new(),
            }),
            dead: AtomicBool::new(false),
        });
        self.inner.slots.lock().unwrap().push(slot.clone());
        Local {
            gen: self.inner.gen,
            thread: id,
            slot,
            chunk,
            len: 0,
            data_len: 0,
            rec_bytes: 0,
        }
    }

    fn register(&self, name: Option<&str>) {
        let _ = LOCAL.try_with(|l| *l.borrow_mut() = Some(Mine::Own(self.new_local(name))));
    }

    /// Moves the calling thread's logical thread into an [`Appender`], which records as
    /// that thread from whichever OS thread holds it. A front end that buffers a thread's
    /// events on its own side uses it to get them to the log without that thread's
    /// cooperation (drained by [`Recorder::on_round`] on the flusher thread). The calling
    /// thread's own later appends (`record`) would make a new logical thread: such a front
    /// end records all of that thread's events through the appender.
    pub fn appender(&self) -> Appender {
        let taken = LOCAL
            .try_with(|l| l.borrow_mut().take())
            .ok()
            .flatten()
            .filter(|x| x.gen() == self.inner.gen);
        let local = match taken {
            Some(Mine::Own(l)) => Arc::new(Mutex::new(l)),
            Some(Mine::Shared { local, .. }) => local,
            None => Arc::new(Mutex::new(self.new_local(None))),
        };
        Appender {
            rec: self.clone(),
            local,
        }
    }

    /// An [`Appender`] of a new logical thread named `name`, not the calling thread's: for
    /// records no program thread makes (a front end's side records, `SIDE_KINDS`).
    pub fn named_appender(&self, name: &str) -> Appender {
        Appender {
            rec: self.clone(),
            local: Arc::new(Mutex::new(self.new_local(Some(name)))),
        }
    }

    /// An [`Appender`] that shares the calling thread's logical thread with the thread
    /// itself: the thread's own appends (`record`, ...) go on to that logical thread too,
    /// one append at a time with the appender's (each of the thread's appends takes an
    /// uncontended mutex). For a front end with many threads that buffer on their own side
    /// and also record directly: another thread (the flusher's [`Recorder::on_round`])
    /// drains a thread's buffer as that thread, and numbers stay in order within the
    /// logical thread if the thread hands its buffer over before each direct record.
    pub fn shared_appender(&self) -> Appender {
        let shared = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let local = match l.take().filter(|x| x.gen() == self.inner.gen) {
                Some(Mine::Own(x)) => Arc::new(Mutex::new(x)),
                Some(Mine::Shared { local, .. }) => local,
                None => Arc::new(Mutex::new(self.new_local(None))),
            };
            *l = Some(Mine::Shared {
                gen: self.inner.gen,
                local: local.clone(),
            });
            local
        });
        Appender {
            rec: self.clone(),
            local: shared.unwrap_or_else(|_| Arc::new(Mutex::new(self.new_local(None)))),
        }
    }

    /// Runs `f` on the flusher thread before every round that writes all that was published
    /// (at least once per flush interval, at a flush request and at close): a front end's
    /// buffers that `f` drains through an [`Appender`] reach the disk in that same round.
    /// `f` must not wait for the thread whose buffers it drains (that thread may be waiting
    /// for the flusher): it skips a round instead. Replaces an earlier `f`.
    ///
    /// A front end whose drains number the events (rather than moving events numbered when
    /// they happened) reports each drain through [`Appender::drained`].
    pub fn on_round(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.inner.round_hook.lock().unwrap() = Some(Arc::new(f));
    }

    /// Gives the calling thread a stable name. Before its first event this makes it a new
    /// logical thread with that name; afterwards it renames the thread in the log.
    pub fn name_thread(&self, name: &str) {
        let _ = LOCAL.try_with(|l| {
            let mut l = l.borrow_mut();
            let thread = match l.as_ref() {
                Some(Mine::Own(x)) if x.gen == self.inner.gen => x.thread,
                Some(Mine::Shared { gen, local }) if *gen == self.inner.gen => {
                    local.lock().unwrap_or_else(|p| p.into_inner()).thread
                }
                _ => {
                    *l = Some(Mine::Own(self.new_local(Some(name))));
                    return;
                }
            };
            let mut t = self.inner.tables.lock().unwrap();
            let n = t.intern(name);
            t.new_threads.push((thread, n));
            t.names.insert(thread, n);
        });
    }

    /// Logical id of the calling thread (registering it if new).
    pub fn thread_id(&self) -> Option<u32> {
        self.with_local(|l| l.thread).ok()
    }

    #[cold]
    fn swap(&self, local: &mut Local, need: usize) {
        let old_cap = local.chunk.events.len();
        let events = if local.len == old_cap {
            (old_cap * 2).min(MAX_EVENTS)
        } else {
            old_cap
        };
        let data = (local.chunk.data.len() * 2)
            .clamp(FIRST_DATA, MAX_DATA)
            .max(need);
        let new = if events == MAX_EVENTS && data == MAX_DATA {
            self.inner.pool.lock().unwrap().pop()
        } else {
            None
        };
        let new = match new {
            Some(c) => {
                c.thread.store(local.thread, Ordering::Relaxed);
                c
            }
            None => Chunk::new(events, data, local.thread),
        };
        {
            let mut s = local.slot.inner.lock().unwrap();
            let old = std::mem::replace(&mut s.current, new.clone());
            s.full.push(old);
        }
        local.chunk = new;
        local.len = 0;
        local.data_len = 0;
        local.rec_bytes = 0;
        let sig = &self.inner.signal;
        let mut st = sig.state.lock().unwrap();
        st.pending += 1;
        sig.flusher.notify_one();
        if IN_FLUSHER.try_with(|f| f.get()).unwrap_or(false) {
            return; // the flusher draining a front end's buffer would wait for itself
        }
        // Back-pressure keeps memory bounded. The wait has a bound too: a flusher that is
        // stuck (a hung disk) must not hang the host program, so after it the append goes on.
        let deadline = Instant::now() + Duration::from_secs(5);
        while st.pending > MAX_PENDING && !self.inner.hot.stopped.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            st = sig.appenders.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// Writes everything recorded so far (by every thread) and returns when it is written.
    pub fn flush(&self) {
        let sig = &self.inner.signal;
        let mut st = sig.state.lock().unwrap();
        st.flush_requests += 1;
        let want = st.flush_requests;
        sig.flusher.notify_one();
        while st.flush_done < want && !self.inner.hot.stopped.load(Ordering::Relaxed) {
            st = sig
                .appenders
                .wait_timeout(st, Duration::from_millis(100))
                .unwrap()
                .0;
        }
    }

    /// Flushes, writes the trailer and closes the log. Later appends are dropped (and
    /// counted). Calling it again returns the first result.
    pub fn finish(&self) -> Result<TrailerInfo, String> {
        {
            let sig = &self.inner.signal;
            let mut st = sig.state.lock().unwrap();
            st.closing = true;
            sig.flusher.notify_one();
        }
        let h = self.flusher.lock().unwrap().take();
        match h {
            Some(h) => {
                let r = h
                    .join()
                    .map_err(|_| "the log flusher panicked".to_string())
                    .and_then(|r| r);
                if let Err(e) = &r {
                    *self.inner.failure.lock().unwrap() = Some(e.clone());
                }
                r
            }
            None => Err(self
                .inner
                .failure
                .lock()
                .unwrap()
                .clone()
                .unwrap_or_else(|| "log already closed".into())),
        }
    }

    /// The program's exit status, for the trailer: call before [`Self::finish`]. Replay
    /// compares its own status with it.
    pub fn set_exit_status(&self, status: i32) {
        self.inner
            .exit_status
            .store(i64::from(status), Ordering::Relaxed);
    }

    /// What the program wrote into files (sorted by path), for the trailer: call before
    /// [`Self::finish`]. Replay compares its own writes with it.
    pub fn set_files(&self, files: Vec<crate::format::FileWritten>) {
        *self.inner.files.lock().unwrap() = files;
    }

    /// The first write error, if writing failed (the recording then stopped).
    pub fn failure(&self) -> Option<String> {
        self.inner.failure.lock().unwrap().clone()
    }

    pub fn path(&self) -> &std::path::Path {
        &self.inner.path
    }

    /// Events dropped because the log was closed or writing failed.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }
}

/// Records as one logical thread from any OS thread, one at a time ([`Recorder::appender`]).
pub struct Appender {
    rec: Recorder,
    local: Arc<Mutex<Local>>,
}

impl Appender {
    /// Nanoseconds on the log's time marks' clock (monotonic, since the recording began):
    /// what a front end's drain reads just before it reads what was published, for
    /// [`Self::drained`].
    pub fn clock_ns(&self) -> u64 {
        self.rec.inner.start.elapsed().as_nanos() as u64
    }

    /// A front end that numbers its buffered events when it drains them (Node's; the JVM's
    /// events take their numbers when they happen) has numbered every event published
    /// before `read_at` ([`Self::clock_ns`], taken before it read the published count).
    /// The next time mark is this one: events numbered before now happened before
    /// `read_at`, events numbered after it were published after. From the first call on,
    /// the log's time marks are the drains' only: call it once before anything is
    /// published.
    pub fn drained(&self, read_at: u64) {
        self.rec.inner.drain_marks.store(true, Ordering::Relaxed);
        let seq = self.rec.inner.hot.seq.load(Ordering::Acquire);
        let mut m = self.rec.inner.drain_mark.lock().unwrap();
        if m.is_none_or(|l| seq >= l.0 && read_at >= l.1) {
            *m = Some((seq, read_at));
        }
    }

    /// The recorder's global sequence counter ([`Recorder::seq_counter`]).
    pub fn seq_counter(&self) -> &AtomicU64 {
        self.rec.seq_counter()
    }

    /// [`Recorder::record_at`] as this appender's thread. Numbers must increase across calls.
    pub fn record_at(
        &self,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        payload: PayloadRef<'_>,
    ) {
        if self.rec.inner.hot.stopped.load(Ordering::Relaxed) {
            self.rec.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut l = self.local.lock().unwrap_or_else(|p| p.into_inner());
        self.rec.append(&mut l, seq, kind, site, digest, payload);
    }

    /// [`Recorder::record_owned_at`] as this appender's thread.
    pub fn record_owned_at(
        &self,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        record: Record,
    ) {
        if self.rec.inner.hot.stopped.load(Ordering::Relaxed) {
            self.rec.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut l = self.local.lock().unwrap_or_else(|p| p.into_inner());
        self.rec
            .append_owned(&mut l, seq, kind, site, digest, record);
    }

    /// [`Recorder::record`] as this appender's thread: takes the next number now.
    pub fn record(&self, kind: u32, site: u32, digest: Option<u64>, payload: PayloadRef<'_>) {
        let seq = self.seq_counter().fetch_add(1, Ordering::Relaxed);
        self.record_at(seq, kind, site, digest, payload);
    }

    /// [`Self::record_owned_at`] taking the next number now (a side record, made when it
    /// happens).
    pub fn record_owned(&self, kind: u32, site: u32, digest: Option<u64>, record: Record) {
        let seq = self.seq_counter().fetch_add(1, Ordering::Relaxed);
        self.record_owned_at(seq, kind, site, digest, record);
    }

    /// The appender held for many appends (one lock for a batch, not one per event).
    pub fn hold(&self) -> Held<'_> {
        Held {
            rec: &self.rec,
            local: self.local.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// [`Self::hold`] unless another thread holds it now (a thread appending as itself, for
    /// a shared appender): for the flusher's drain, which must not wait for such a thread.
    pub fn try_hold(&self) -> Option<Held<'_>> {
        let local = match self.local.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(Held {
            rec: &self.rec,
            local,
        })
    }
}

/// An [`Appender`] held by one OS thread ([`Appender::hold`]).
pub struct Held<'a> {
    rec: &'a Recorder,
    local: std::sync::MutexGuard<'a, Local>,
}

impl Held<'_> {
    /// [`Appender::record`]: takes the next number now.
    #[inline]
    pub fn record(&mut self, kind: u32, site: u32, digest: Option<u64>, payload: PayloadRef<'_>) {
        if self.rec.inner.hot.stopped.load(Ordering::Relaxed) {
            self.rec.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let seq = self.rec.inner.hot.seq.fetch_add(1, Ordering::Relaxed);
        self.rec
            .append(&mut self.local, seq, kind, site, digest, payload);
    }

    /// [`Recorder::record_batch`] as the held appender's thread: `Int` events whose numbers
    /// were taken earlier, in increasing order (and above the thread's earlier ones).
    pub fn record_batch(&mut self, events: impl IntoIterator<Item = (u64, u32, i64)>) {
        let mut events = events.into_iter().peekable();
        if events.peek().is_none() {
            return;
        }
        if self.rec.inner.hot.stopped.load(Ordering::Relaxed) {
            let n = events.count() as u64;
            self.rec.inner.dropped.fetch_add(n, Ordering::Relaxed);
            return;
        }
        self.rec.append_ints(&mut self.local, &mut events);
    }

    /// [`Appender::record_owned_at`] with the next number.
    pub fn record_owned(&mut self, kind: u32, site: u32, digest: Option<u64>, record: Record) {
        if self.rec.inner.hot.stopped.load(Ordering::Relaxed) {
            self.rec.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let seq = self.rec.inner.hot.seq.fetch_add(1, Ordering::Relaxed);
        self.rec
            .append_owned(&mut self.local, seq, kind, site, digest, record);
    }
}

/// Takes everything published so far from every thread into batches and writes them.
struct Flusher {
    inner: Arc<Inner>,
    writer: LogWriter,
    batch: BatchBuilder,
    runs: HashMap<u32, usize>,
    spare: Vec<RunBuilder>,
    /// The last time mark written: marks only go forward.
    last_mark: Option<(u64, u64)>,
}

impl Flusher {
    fn take_chunk(&mut self, c: &Chunk) {
        let upto = c.committed.load(Ordering::Acquire);
        let from = c.taken.load(Ordering::Relaxed);
        if upto <= from {
            return;
        }
        let thread = c.thread.load(Ordering::Relaxed);
        let idx = match self.runs.get(&thread) {
            Some(&i) => i,
            None => {
                let mut rb = self.spare.pop().unwrap_or_else(|| RunBuilder::new(thread));
                rb.reset(thread);
                self.batch.runs.push(rb);
                self.runs.insert(thread, self.batch.runs.len() - 1);
                self.batch.runs.len() - 1
            }
        };
        let mut records = c.records.lock().unwrap();
        // Records are appended in event order, so a cursor finds each one (a search from the
        // start for every event was quadratic in the events of a chunk).
        let mut next_rec = records.partition_point(|(j, _)| *j < from);
        let run = &mut self.batch.runs[idx];
        for i in from..upto {
            // SAFETY: i < committed (acquired), so the slot and its data are published.
            let e = unsafe { (*c.events[i].get()).assume_init() };
            let data = if e.tag & T_DATA != 0 {
                // SAFETY: the data range was written before the event was published.
                Some(unsafe {
                    std::slice::from_raw_parts(
                        c.data.as_ptr().add(e.data_off as usize) as *const u8,
                        e.data_len as usize,
                    )
                })
            } else {
                None
            };
            let digest = (e.tag & T_DIGEST != 0).then_some(e.digest);
            let p = match e.tag & 0x0f {
                0 => PayloadRef::None,
                1 => PayloadRef::Int(e.value as i64),
                2 => PayloadRef::Uint(e.value),
                3 => PayloadRef::Float(f64::from_bits(e.value)),
                4 => PayloadRef::Bytes(data.unwrap_or(&[])),
                5 => PayloadRef::Ret {
                    ret: e.value as i64,
                    errno: e.errno,
                    data,
                },
                _ => {
                    // Moved out, not cloned: each event of a chunk is taken once (from
                    // `taken` on), and a recycled chunk's records are cleared anyway.
                    let rec = match records.get_mut(next_rec) {
                        Some((j, r)) if *j == i => {
                            next_rec += 1;
                            std::mem::take(r)
                        }
                        _ => Record::default(),
                    };
                    run.push_record(e.seq, e.kind, e.site, digest, rec);
                    continue;
                }
            };
            run.push(e.seq, e.kind, e.site, digest, p);
        }
        c.taken.store(upto, Ordering::Relaxed);
    }

    /// One round: collect, then write. Returns the number of full chunks it consumed.
    ///
    /// `live` also takes the published part of each thread's current chunk; rounds woken
    /// only because chunks filled leave current chunks alone, so the flusher does not read
    /// cache lines the appending threads are writing at that moment.
    fn round(&mut self, live: bool) -> Result<usize, String> {
        let slots: Vec<Arc<Slot>> = self.inner.slots.lock().unwrap().clone();
        let mut consumed = 0;
        let mut dead = Vec::new();
        for slot in &slots {
            // A dead thread appends nothing more; check before taking so nothing is missed.
            let is_dead = slot.dead.load(Ordering::Acquire);
            let (full, cur) = {
                let mut s = slot.inner.lock().unwrap();
                (std::mem::take(&mut s.full), s.current.clone())
            };
            for c in full {
                // A chunk holding a large payload goes in a batch of its own, so no frame
                // exceeds the format's bound (`MAX_RAW`), which keeps readers' memory bounded.
                if c.data.len() > MAX_DATA && !self.batch.is_empty() {
                    self.write()?;
                }
                self.take_chunk(&c);
                consumed += 1;
                self.recycle(c);
                self.write_if_big()?;
            }
            if live || is_dead {
                if cur.data.len() > MAX_DATA && !self.batch.is_empty() {
                    self.write()?;
                }
                self.take_chunk(&cur);
            }
            if is_dead {
                dead.push(slot.clone());
            }
            self.write_if_big()?;
        }
        if !dead.is_empty() {
            self.inner
                .slots
                .lock()
                .unwrap()
                .retain(|s| !dead.iter().any(|d| Arc::ptr_eq(s, d)));
        }
        self.write()?;
        Ok(consumed)
    }

    fn recycle(&self, mut c: Arc<Chunk>) {
        if c.events.len() != MAX_EVENTS || c.data.len() != MAX_DATA {
            return;
        }
        if let Some(m) = Arc::get_mut(&mut c) {
            *m.committed.get_mut() = 0;
            *m.taken.get_mut() = 0;
            m.records.get_mut().unwrap().clear();
            let mut pool = self.inner.pool.lock().unwrap();
            if pool.len() < 16 {
                pool.push(c);
            }
        }
    }

    fn write_if_big(&mut self) -> Result<(), String> {
        if self.batch.approx_bytes() >= BATCH_BYTES || self.batch.event_count() >= BATCH_EVENTS {
            self.write()?;
        }
        Ok(())
    }

    fn write(&mut self) -> Result<(), String> {
        // Table entries are taken after the events: an event collected above was published
        // after its strings and thread were entered, so they are in this batch or earlier.
        {
            let mut t = self.inner.tables.lock().unwrap();
            self.batch.strings.append(&mut t.new_strings);
            self.batch.threads.append(&mut t.new_threads);
        }
        if self.batch.is_empty() {
            return Ok(());
        }
        let closing = self.inner.hot.stopped.load(Ordering::Relaxed);
        let mark = if self.inner.drain_marks.load(Ordering::Relaxed) && !closing {
            // A front end numbers its buffered events when it drains them: the drain's own
            // mark ([`Appender::drained`]) is the one that holds.
            *self.inner.drain_mark.lock().unwrap()
        } else {
            let mono = self.inner.start.elapsed().as_nanos() as u64;
            let seq = self.inner.hot.seq.load(Ordering::Relaxed);
            Some((seq, mono))
        };
        if let Some(m) = mark {
            if self
                .last_mark
                .is_none_or(|l| m.0 > l.0 || (m.0 == l.0 && m.1 > l.1))
            {
                self.batch.marks.push(m);
                self.last_mark = Some(m);
            }
        }
        let r = self
            .writer
            .write_batch(&self.batch)
            .map_err(|e| format!("cannot write {}: {e}", self.inner.path.display()));
        // Builders go back to the spare list with their memory (a few per thread at most).
        let room = 64usize.saturating_sub(self.spare.len());
        self.spare.extend(self.batch.runs.drain(..).take(room));
        self.batch.runs.clear();
        self.batch.strings.clear();
        self.batch.threads.clear();
        self.batch.marks.clear();
        self.runs.clear();
        r
    }
}

fn flusher_main(inner: Arc<Inner>, writer: LogWriter) -> Result<TrailerInfo, String> {
    let mut f = Flusher {
        inner: inner.clone(),
        writer,
        batch: BatchBuilder::default(),
        runs: HashMap::new(),
        spare: Vec::new(),
        last_mark: Some((0, 0)),
    };
    f.batch.marks.push((0, 0));
    IN_FLUSHER.with(|x| x.set(true));
    let sig = &inner.signal;
    let fail = |e: String, inner: &Inner| {
        eprintln!("replay: {e}; recording stopped, the program runs on");
        *inner.failure.lock().unwrap() = Some(e.clone());
        inner.hot.stopped.store(true, Ordering::Relaxed);
        let _st = inner.signal.state.lock().unwrap();
        inner.signal.appenders.notify_all();
        e
    };
    let mut last_live = Instant::now();
    loop {
        // With a front end's drain, rounds come twice as often: an event waits up to a round
        // in the front end's buffer, then is written by the next, so it still reaches the
        // disk within one interval.
        let every = if inner.round_hook.lock().unwrap().is_some() {
            inner.flush_every / 2
        } else {
            inner.flush_every
        };
        let (closing, requests, requested) = {
            let mut st = sig.state.lock().unwrap();
            if st.pending == 0 && !st.closing && st.flush_requests == st.flush_done {
                let wait = every.saturating_sub(last_live.elapsed());
                st = sig.flusher.wait_timeout(st, wait).unwrap().0;
            }
            (
                st.closing,
                st.flush_requests,
                st.flush_requests != st.flush_done,
            )
        };
        // Everything published reaches the disk at least once per flush interval.
        let live = closing || requested || last_live.elapsed() >= every;
        if live {
            // Front-end buffers first, into this round (and before appends stop at close).
            let hook = inner.round_hook.lock().unwrap().clone();
            if let Some(hook) = hook {
                hook();
            }
        }
        if closing {
            // Stop appends first so that the final round sees everything there will be.
            inner.hot.stopped.store(true, Ordering::Relaxed);
        }
        if live {
            last_live = Instant::now();
        }
        let consumed = match f.round(live) {
            Ok(n) => n,
            Err(e) => return Err(fail(e, &inner)),
        };
        {
            let mut st = sig.state.lock().unwrap();
            st.pending = st.pending.saturating_sub(consumed);
            st.flush_done = st.flush_done.max(requests);
            sig.appenders.notify_all();
        }
        if closing {
            let threads = inner.tables.lock().unwrap().next_thread;
            let Flusher { writer, .. } = f;
            let exit = inner.exit_status.load(Ordering::Relaxed);
            let exit = (exit != NO_EXIT).then_some(exit as i32);
            let files = std::mem::take(&mut *inner.files.lock().unwrap());
            return writer.finish(threads, exit, files).map_err(|e| {
                fail(
                    format!("cannot close {}: {e}", inner.path.display()),
                    &inner,
                )
            });
        }
    }
}

#[cfg(test)]
mod incompressible_tests {
    use super::*;
    use crate::event::{Field, FieldValue, Payload};
    use crate::reader::{LogReader, Ordered};

    /// Bodies zstd cannot shrink (random bytes) are stored uncompressed: the log is about as
    /// large as the bodies, and every byte reads back; compressible ones still compress.
    #[test]
    fn random_bodies_are_stored_as_they_are_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = |n: usize| {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect::<Vec<u8>>()
        };
        let bodies: Vec<Vec<u8>> = (0..40).map(|_| random(65536)).collect();
        for (name, compressible) in [("random", false), ("same", true)] {
            let p = dir.path().join(format!("{name}.replay"));
            let r = Recorder::open(RecordConfig::for_test(p.clone())).unwrap();
            let k = r.intern("body");
            let body = |i: usize| {
                if compressible {
                    vec![b'x'; 65536]
                } else {
                    bodies[i].clone()
                }
            };
            for i in 0..bodies.len() {
                let rec = Record {
                    fields: vec![Field {
                        name: "b0".into(),
                        value: FieldValue::Bytes(body(i).into()),
                    }],
                };
                r.record_owned(k, 0, None, rec);
            }
            r.finish().unwrap();
            let size = std::fs::metadata(&p).unwrap().len();
            let raw = (bodies.len() * 65536) as u64;
            if compressible {
                assert!(size < raw / 20, "{name}: {size} bytes");
            } else {
                assert!(size > raw && size < raw + raw / 20, "{name}: {size} bytes");
            }
            let mut it = Ordered::new(LogReader::open(&p).unwrap());
            let mut n = 0;
            for e in it.by_ref() {
                let want = Record {
                    fields: vec![Field {
                        name: "b0".into(),
                        value: FieldValue::Bytes(body(n).into()),
                    }],
                };
                assert_eq!(e.payload, Payload::Record { record: want });
                n += 1;
            }
            assert!(it.error().is_none(), "{:?}", it.error());
            assert_eq!(n, bodies.len());
        }
    }
}

#[cfg(test)]
mod compress_tests {
    use super::*;
    use crate::event::{Field, FieldValue, Payload};
    use crate::reader::{LogReader, Ordered};

    /// The `compress` option: off stores chunks as they are (the log about as large as what
    /// was recorded), a level compresses; every setting reads back the same events.
    #[test]
    fn every_compress_setting_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let body = |i: usize| format!("{{\"id\":{i},\"name\":\"user {i}\"}}").repeat(200);
        let raw: usize = (0..300).map(|i| body(i).len()).sum();
        let mut sizes = Vec::new();
        for level in [0u8, 1, 19] {
            let p = dir.path().join(format!("c{level}.replay"));
            let mut cfg = RecordConfig::for_test(p.clone());
            cfg.compress = level;
            let r = Recorder::open(cfg).unwrap();
            let k = r.intern("body");
            let rec = |i: usize| Record {
                fields: vec![Field {
                    name: "b0".into(),
                    value: FieldValue::Bytes(body(i).into_bytes().into()),
                }],
            };
            for i in 0..300 {
                r.record_owned(k, 0, None, rec(i));
            }
            r.finish().unwrap();
            let mut it = Ordered::new(LogReader::open(&p).unwrap());
            let mut n = 0;
            for e in it.by_ref() {
                assert_eq!(
                    e.payload,
                    Payload::Record { record: rec(n) },
                    "level {level}"
                );
                n += 1;
            }
            assert!(it.error().is_none(), "{:?}", it.error());
            assert_eq!(n, 300);
            sizes.push(std::fs::metadata(&p).unwrap().len() as usize);
        }
        assert!(sizes[0] > raw, "off: {} bytes for {raw}", sizes[0]);
        assert!(sizes[1] < raw / 10, "level 1: {} bytes for {raw}", sizes[1]);
        assert!(
            sizes[2] <= sizes[1],
            "level 19 {} > level 1 {}",
            sizes[2],
            sizes[1]
        );
    }
}

#[cfg(test)]
mod owned_tests {
    use super::*;
    use crate::event::{Field, FieldValue, Payload};
    use crate::reader::{LogReader, Ordered};

    #[test]
    fn record_owned_logs_the_same_event_as_record() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("owned.replay");
        let r = Recorder::open(RecordConfig::for_test(p.clone())).unwrap();
        let k = r.intern("k");
        let rec = |n: u64| Record {
            fields: vec![
                Field {
                    name: "json".into(),
                    value: FieldValue::Text(format!("{{\"n\":{n}}}")),
                },
                Field {
                    name: "b0".into(),
                    value: FieldValue::Bytes(vec![n as u8; 70000].into()),
                },
            ],
        };
        // Interleaved with the borrowing form and with data events, over several chunks.
        for n in 0..300u64 {
            match n % 3 {
                0 => r.record_owned(k, 0, Some(n), rec(n)),
                1 => r.record(k, 0, None, PayloadRef::Record(&rec(n))),
                _ => r.record(k, 0, None, PayloadRef::Bytes(&[n as u8; 3])),
            };
        }
        r.finish().unwrap();
        let mut it = Ordered::new(LogReader::open(&p).unwrap());
        let mut n = 0u64;
        for e in it.by_ref() {
            assert_eq!(e.seq, n);
            match n % 3 {
                0 => {
                    assert_eq!(e.digest, Some(n));
                    assert_eq!(e.payload, Payload::Record { record: rec(n) });
                }
                1 => {
                    assert_eq!(e.digest, None);
                    assert_eq!(e.payload, Payload::Record { record: rec(n) });
                }
                _ => assert_eq!(
                    e.payload,
                    Payload::Bytes {
                        data: vec![n as u8; 3].into()
                    }
                ),
            }
            n += 1;
        }
        assert!(it.error().is_none(), "{:?}", it.error());
        assert_eq!(n, 300);
    }
}

#[cfg(test)]
mod appender_tests {
    use super::*;
    use crate::event::Payload;
    use crate::reader::{LogReader, Ordered};

    /// Events a front end buffers on its side reach the log through the flusher's round
    /// hook, as the thread that made the appender (logical thread 0), in sequence order,
    /// while that thread appends nothing itself; they are on disk before close.
    #[test]
    fn the_round_hook_drains_through_the_appender_as_the_opening_thread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.replay");
        let r = Recorder::open(RecordConfig::for_test(p.clone())).unwrap();
        let k = r.intern("clock");
        let app = Arc::new(r.appender());
        let buffered: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
        {
            let (app, buffered) = (app.clone(), buffered.clone());
            r.on_round(move || {
                for v in buffered.lock().unwrap().drain(..) {
                    app.record(k, 0, None, PayloadRef::Int(v));
                }
            });
        }
        buffered.lock().unwrap().extend([1, 2, 3]);
        // No flush request, no append by this thread: the flusher's rounds (20 ms here)
        // write them.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = 0;
        while Instant::now() < deadline && seen < 3 {
            std::thread::sleep(Duration::from_millis(30));
            seen = Ordered::new(LogReader::open(&p).unwrap()).count();
        }
        assert_eq!(seen, 3, "the buffered events did not reach the disk");
        buffered.lock().unwrap().push(4);
        r.finish().unwrap();
        let events: Vec<_> = Ordered::new(LogReader::open(&p).unwrap()).collect();
        let values: Vec<_> = events
            .iter()
            .map(|e| (e.seq, e.thread, e.payload.clone()))
            .collect();
        let want: Vec<_> = (0..4)
            .map(|i| (i as u64, 0u32, Payload::Int { value: i + 1 }))
            .collect();
        assert_eq!(values, want);
    }

    /// A front end that buffers events and numbers them when it drains: the log's time
    /// marks are its drains' ([`Appender::drained`]), so every event lies between the marks
    /// around its number, even when the flusher's round is slow (here the drain takes
    /// 3 ms after its read, as a loaded machine's flusher does): an event published then is
    /// numbered in the next round but happened before a mark taken at this round's write.
    #[test]
    fn buffered_events_lie_between_their_marks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.replay");
        let r = Recorder::open(RecordConfig::for_test(p.clone())).unwrap();
        let k = r.intern("clock");
        let app = Arc::new(r.appender());
        // Values are the mark clock's time at publication.
        let buffered: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
        {
            let (app, buffered) = (app.clone(), buffered.clone());
            app.drained(app.clock_ns());
            r.on_round(move || {
                let read_at = app.clock_ns();
                let taken: Vec<i64> = buffered.lock().unwrap().drain(..).collect();
                for v in taken {
                    app.record(k, 0, None, PayloadRef::Int(v));
                }
                app.drained(read_at);
                std::thread::sleep(Duration::from_millis(3));
            });
        }
        let until = Instant::now() + Duration::from_millis(400);
        while Instant::now() < until {
            buffered.lock().unwrap().push(app.clock_ns() as i64);
            std::thread::sleep(Duration::from_micros(200));
        }
        r.finish().unwrap();
        let mut it = Ordered::new(LogReader::open(&p).unwrap());
        let (mut n, mut bounded) = (0, 0);
        while let Some(e) = it.next() {
            let Payload::Int { value } = e.payload else {
                panic!("{e:?}")
            };
            let ((_, lo), hi) = it.window_of(e.seq).expect("a mark precedes every event");
            assert!(
                lo as i64 <= value,
                "event #{} at {value} ns lies before its mark at {lo} ns",
                e.seq
            );
            if let Some((_, hi)) = hi {
                assert!(
                    value <= hi as i64,
                    "event #{} at {value} ns lies after its next mark at {hi} ns",
                    e.seq
                );
                bounded += 1;
            }
            n += 1;
        }
        assert!(n > 100, "{n} events");
        assert!(
            bounded * 10 > n * 9,
            "{bounded} of {n} events have a later mark"
        );
    }

    /// A shared appender and its thread record as one logical thread: the thread's direct
    /// records and the batches another OS thread records through the appender
    /// (`Held::record_batch`, numbers taken earlier by the thread) interleave in number
    /// order; `try_hold` gives way while the appender is held.
    #[test]
    fn a_shared_appender_and_its_thread_are_one_logical_thread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.replay");
        let r = Recorder::open(RecordConfig::for_test(p.clone())).unwrap();
        let (clock, file) = (r.intern("clock"), r.intern("file"));
        let r2 = r.clone();
        let worker = std::thread::spawn(move || {
            r2.name_thread("worker");
            let app = Arc::new(r2.shared_appender());
            let (tx, rx) = std::sync::mpsc::channel::<Vec<(u64, u32, i64)>>();
            let (done_tx, done) = std::sync::mpsc::channel::<()>();
            let drainer = {
                let app = app.clone();
                std::thread::spawn(move || {
                    for batch in rx {
                        app.hold().record_batch(batch);
                        done_tx.send(()).unwrap();
                    }
                })
            };
            for round in 0..10i64 {
                // Buffered events: numbers taken now, recorded by the other OS thread.
                let batch: Vec<_> = (0..9)
                    .map(|i| {
                        (
                            r2.seq_counter().fetch_add(1, Ordering::Relaxed),
                            clock,
                            round * 9 + i,
                        )
                    })
                    .collect();
                tx.send(batch).unwrap();
                done.recv().unwrap();
                // Then a direct record of the thread itself.
                r2.record(file, 0, None, PayloadRef::Int(-round));
            }
            drop(tx);
            drainer.join().unwrap();
            let held = app.hold();
            assert!(
                app.try_hold().is_none(),
                "held: the flusher's drain skips it"
            );
            drop(held);
            assert!(app.try_hold().is_some());
        });
        worker.join().unwrap();
        r.finish().unwrap();
        let events: Vec<_> = Ordered::new(LogReader::open(&p).unwrap()).collect();
        assert_eq!(events.len(), 100);
        let threads: std::collections::BTreeSet<u32> = events.iter().map(|e| e.thread).collect();
        assert_eq!(threads.len(), 1, "one logical thread: {threads:?}");
        for (n, e) in events.iter().enumerate() {
            assert_eq!(e.seq, n as u64);
            let want = if n % 10 == 9 { file } else { clock };
            assert_eq!(e.kind, want, "event {n}");
        }
    }
}
