//! Streaming log reader: one chunk in memory at a time, every length and count bounded,
//! every failure an error naming its byte offset. It never panics on any input.

use crate::error::LogError;
use crate::event::Event;
use crate::format::batch::Chunk;
use crate::format::batch::RunCursor;
use crate::format::frame::{FrameHeader, FrameType, CODEC_ZSTD, FRAME_HEADER_LEN};
use crate::format::*;
use bytes::Bytes;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

/// How a log ended.
#[derive(Clone, Debug, PartialEq)]
pub enum End {
    /// The trailer was read and every checksum matched.
    Complete(TrailerInfo),
    /// The file stops without a trailer (the recorder was killed or crashed). Everything up
    /// to the last whole chunk was returned.
    Cut { offset: u64, why: String },
}

/// The string table of one log: kinds, call sites, thread names.
#[derive(Clone, Debug, Default)]
pub struct Strings {
    texts: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Strings {
    pub fn get(&self, id: u32) -> Option<&str> {
        if id == 0 {
            return None;
        }
        self.texts.get(id as usize - 1).map(|s| s.as_str())
    }

    /// The text of `id`, or a placeholder for an unknown id (never expected in a valid log).
    pub fn name(&self, id: u32) -> &str {
        self.get(id).unwrap_or("?")
    }

    pub fn id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    fn add(&mut self, id: u32, text: String, offset: u64) -> Result<(), LogError> {
        if id as usize != self.texts.len() + 1 {
            return Err(LogError::Corrupt {
                offset,
                why: format!(
                    "string id {id} out of order (expected {})",
                    self.texts.len() + 1
                ),
            });
        }
        self.ids.entry(text.clone()).or_insert(id);
        self.texts.push(text);
        Ok(())
    }
}

pub struct LogReader<R: Read = BufReader<File>> {
    src: R,
    offset: u64,
    crc: u32,
    header: HeaderInfo,
    strings: Strings,
    threads: BTreeMap<u32, u32>,
    chunks: u64,
    events: u64,
    max_seq: Option<u64>,
    end: Option<End>,
    failed: bool,
    /// Kept from one chunk to the next (its context is a few hundred KiB to set up).
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// Counts the bytes of the chunks this reader made that are still alive, if set.
    budget: Option<Arc<Budget>>,
}

/// The bytes of a reader's decompressed chunks still alive anywhere (a chunk stays alive
/// while any of its events or payloads does), for a read-ahead thread that must not run
/// further ahead than a number of bytes: chunk counts alone let a replay hold several of the
/// largest chunks at once (120 MiB on a log of four 40 MiB chunks).
#[derive(Default)]
pub struct Budget {
    state: Mutex<BudgetState>,
    cv: Condvar,
}

#[derive(Default)]
struct BudgetState {
    live: usize,
    /// A consumer waits for the next chunk: it is read whatever is alive (what the consumer
    /// still holds is what the log needs, not read-ahead).
    wanted: bool,
}

impl Budget {
    /// Bytes of live chunks.
    pub fn live(&self) -> usize {
        self.lock().live
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until fewer than `max` bytes are alive or a consumer wants the next chunk.
    pub fn wait_room(&self, max: usize) {
        let mut s = self.lock();
        while s.live >= max && !s.wanted {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// A consumer starts (true) or stops (false) waiting for the next chunk.
    pub fn want(&self, wanted: bool) {
        self.lock().wanted = wanted;
        self.cv.notify_all();
    }

    fn add(&self, n: usize) {
        self.lock().live += n;
    }

    fn sub(&self, n: usize) {
        let mut s = self.lock();
        s.live = s.live.saturating_sub(n);
        drop(s);
        self.cv.notify_all();
    }
}

/// A chunk's bytes counted in a [`Budget`] while alive.
struct Counted {
    buf: Aligned,
    budget: Arc<Budget>,
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        self.buf.as_ref()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.budget.sub(self.buf.len);
    }
}

impl LogReader<BufReader<File>> {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LogError> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|source| LogError::Open {
            path: path.display().to_string(),
            source,
        })?;
        LogReader::new(BufReader::with_capacity(1 << 16, f))
    }
}

/// A zeroed byte buffer on an 8-byte boundary: Cap'n Proto reads a message in place only
/// from aligned memory, and a chunk is read in place (its bytes payloads are slices of it).
struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    fn zeroed(len: usize) -> Self {
        Aligned {
            // calloc'd: pages are only touched as they are written.
            words: vec![0u64; len.div_ceil(8)],
            len,
        }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: `words` holds at least `len` initialised bytes; u8 has no alignment needs.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast(), self.len) }
    }
}

impl AsRef<[u8]> for Aligned {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: as in `as_mut`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast(), self.len) }
    }
}

/// Outcome of filling a buffer from the source.
enum Fill {
    Full,
    Partial(usize),
}

impl<R: Read> LogReader<R> {
    /// Reads and checks the magic line and the header.
    pub fn new(src: R) -> Result<Self, LogError> {
        let mut r = LogReader {
            src,
            offset: 0,
            crc: 0,
            header: HeaderInfo::default(),
            strings: Strings::default(),
            threads: BTreeMap::new(),
            chunks: 0,
            events: 0,
            max_seq: None,
            end: None,
            failed: false,
            zstd: None,
            budget: None,
        };
        let mut magic = [0u8; 13];
        match r.fill(&mut magic)? {
            Fill::Full => {}
            Fill::Partial(0) => return Err(LogError::Empty),
            Fill::Partial(n) => {
                if MAGIC.starts_with(&magic[..n]) {
                    return Err(LogError::Truncated {
                        offset: n as u64,
                        why: "file ends inside the magic line".into(),
                    });
                }
                return Err(LogError::NotALog);
            }
        }
        if magic != MAGIC {
            if magic.starts_with(MAGIC_PREFIX) {
                let gen = String::from_utf8_lossy(&magic[MAGIC_PREFIX.len()..])
                    .trim()
                    .to_string();
                return Err(LogError::Generation { found: gen });
            }
            return Err(LogError::NotALog);
        }
        let (fh, at, payload) = match r.frame()? {
            Some(f) => f,
            None => {
                return Err(LogError::Truncated {
                    offset: r.offset,
                    why: "file ends before the header".into(),
                })
            }
        };
        if fh.ty != FrameType::Header {
            return Err(LogError::Corrupt {
                offset: at,
                why: "expected the header frame".into(),
            });
        }
        let header = HeaderInfo::decode(&payload, at)?;
        if header.format_version < 1 {
            return Err(LogError::TooOld {
                found: header.format_version,
            });
        }
        if header.min_reader_version > FORMAT_VERSION {
            return Err(LogError::TooNew {
                needed: header.min_reader_version,
                ours: FORMAT_VERSION,
            });
        }
        r.header = header;
        Ok(r)
    }

    pub fn header(&self) -> &HeaderInfo {
        &self.header
    }

    pub fn strings(&self) -> &Strings {
        &self.strings
    }

    /// Logical threads seen so far: id → string id of the name (0 = unnamed).
    pub fn threads(&self) -> &BTreeMap<u32, u32> {
        &self.threads
    }

    pub fn thread_name(&self, id: u32) -> String {
        match self.threads.get(&id).and_then(|n| self.strings.get(*n)) {
            Some(n) => n.to_string(),
            None => format!("thread-{id}"),
        }
    }

    /// How the log ended; `None` until `next_batch` has returned `Ok(None)`.
    pub fn end(&self) -> Option<&End> {
        self.end.as_ref()
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn chunks_read(&self) -> u64 {
        self.chunks
    }

    pub fn events_read(&self) -> u64 {
        self.events
    }

    /// Counts the bytes of the chunks read from now on in `budget` while they are alive.
    pub fn set_budget(&mut self, budget: Arc<Budget>) {
        self.budget = Some(budget);
    }

    fn fill(&mut self, buf: &mut [u8]) -> Result<Fill, LogError> {
        let mut n = 0;
        while n < buf.len() {
            match self.src.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(LogError::Io {
                        offset: self.offset + n as u64,
                        source,
                    })
                }
            }
        }
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.offset += n as u64;
        Ok(if n == buf.len() {
            Fill::Full
        } else {
            Fill::Partial(n)
        })
    }

    /// Reads one whole frame. `Ok(None)` at a clean end of file (between frames);
    /// a frame cut short is a `Truncated` error.
    ///
    /// Memory is bounded before anything is allocated: the frame header's lengths are checked
    /// against the format's bounds (what the writer can produce), and a compressed payload is
    /// decompressed in one pass into a buffer of exactly its declared size, so a crafted frame
    /// (a "decompression bomb") can neither expand past it nor make zstd allocate a window.
    fn frame(&mut self) -> Result<Option<(FrameHeader, u64, Bytes)>, LogError> {
        let at = self.offset;
        let crc_before = self.crc;
        let mut h = [0u8; FRAME_HEADER_LEN];
        match self.fill(&mut h)? {
            Fill::Full => {}
            Fill::Partial(0) => return Ok(None),
            Fill::Partial(n) => {
                return Err(LogError::Truncated {
                    offset: at,
                    why: format!("frame header cut after {n} of {FRAME_HEADER_LEN} bytes"),
                })
            }
        }
        let fh = FrameHeader::decode(&h, at)?;
        if fh.ty == FrameType::Trailer {
            // The trailer's checksum covers everything before its own frame.
            self.crc = crc_before;
        }
        let mut stored = Aligned::zeroed(fh.stored_len as usize);
        let crc_keep = self.crc;
        if let Fill::Partial(n) = self.fill(stored.as_mut())? {
            return Err(LogError::Truncated {
                offset: at,
                why: format!(
                    "last frame is incomplete: {n} of {} payload bytes",
                    fh.stored_len
                ),
            });
        }
        if fh.ty == FrameType::Trailer {
            self.crc = crc_keep;
        }
        if crc32c::crc32c(stored.as_ref()) != fh.payload_crc {
            return Err(LogError::Corrupt {
                offset: at,
                why: "frame payload checksum mismatch".into(),
            });
        }
        let raw = if fh.codec == CODEC_ZSTD {
            let mut out = Aligned::zeroed(fh.raw_len as usize);
            let bad = |why: String| LogError::Corrupt { offset: at, why };
            let dec = match self.zstd.as_mut() {
                Some(d) => d,
                None => self.zstd.insert(
                    zstd::bulk::Decompressor::new()
                        .map_err(|e| bad(format!("cannot start zstd: {e}")))?,
                ),
            };
            // The output buffer is the bound: zstd fails rather than write past it.
            let got = dec
                .decompress_to_buffer(stored.as_ref(), out.as_mut())
                .map_err(|e| {
                    bad(format!(
                        "chunk does not decompress to its declared {} bytes: {e}",
                        fh.raw_len
                    ))
                })?;
            if got != fh.raw_len as usize {
                return Err(bad(format!(
                    "chunk expands to {got} bytes, header says {}",
                    fh.raw_len
                )));
            }
            out
        } else {
            stored
        };
        let raw = match &self.budget {
            Some(b) => {
                b.add(raw.len);
                Bytes::from_owner(Counted {
                    buf: raw,
                    budget: b.clone(),
                })
            }
            None => Bytes::from_owner(raw),
        };
        Ok(Some((fh, at, raw)))
    }

    /// The next chunk of events, or `Ok(None)` at the end of the log (see [`Self::end`]).
    /// After an error the reader stays failed and returns `Ok(None)`.
    pub fn next_batch(&mut self) -> Result<Option<DecodedBatch>, LogError> {
        let Some(chunk) = self.next_chunk()? else {
            return Ok(None);
        };
        match chunk.into_batch() {
            Ok(b) => {
                for run in &b.runs {
                    if let Some(last) = run.events.last() {
                        self.max_seq = Some(self.max_seq.map_or(last.seq, |m| m.max(last.seq)));
                    }
                }
                Ok(Some(b))
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// The next chunk with its events still encoded (decoded one at a time by its runs'
    /// cursors, which check them as [`Self::next_batch`] does), or `Ok(None)` at the end.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, LogError> {
        if self.end.is_some() || self.failed {
            return Ok(None);
        }
        let r = self.next_chunk_inner();
        match &r {
            Err(LogError::Truncated { offset, why }) => {
                self.end = Some(End::Cut {
                    offset: *offset,
                    why: why.clone(),
                });
                Ok(None)
            }
            Err(_) => {
                self.failed = true;
                r
            }
            Ok(_) => r,
        }
    }

    fn next_chunk_inner(&mut self) -> Result<Option<Chunk>, LogError> {
        let (fh, at, raw) = match self.frame()? {
            Some(f) => f,
            None => {
                let why = if self.chunks == 0 {
                    "no trailer: the recording stopped before its first chunk was written"
                        .to_string()
                } else {
                    format!("no trailer after chunk {}: the recorder did not close the log (killed or crashed?)", self.chunks)
                };
                return Err(LogError::Truncated {
                    offset: self.offset,
                    why,
                });
            }
        };
        match fh.ty {
            FrameType::Header => Err(LogError::Corrupt {
                offset: at,
                why: "second header frame".into(),
            }),
            FrameType::Trailer => {
                let t = TrailerInfo::decode(&raw, at)?;
                if t.file_crc32c != self.crc {
                    return Err(LogError::Corrupt {
                        offset: at,
                        why: "file checksum in the trailer does not match the file".into(),
                    });
                }
                if t.chunks != self.chunks || t.events != self.events {
                    return Err(LogError::Corrupt {
                        offset: at,
                        why: format!(
                            "trailer counts {} events in {} chunks, the file holds {} in {}",
                            t.events, t.chunks, self.events, self.chunks
                        ),
                    });
                }
                let mut probe = [0u8; 1];
                if let Fill::Full = self.fill(&mut probe)? {
                    return Err(LogError::Corrupt {
                        offset: self.offset - 1,
                        why: "data after the trailer".into(),
                    });
                }
                self.end = Some(End::Complete(t));
                Ok(None)
            }
            FrameType::Chunk => {
                // String ids the chunk's events may name: those known before it and its own.
                let known = self.strings.len() as u32;
                let c = Chunk::decode(raw, at, 0)?;
                for (id, text) in &c.strings {
                    self.strings.add(*id, text.clone(), at)?;
                }
                let nstr = self.strings.len() as u32;
                debug_assert!(nstr >= known);
                for (id, name) in &c.threads {
                    if *name > nstr {
                        return Err(LogError::Corrupt {
                            offset: at,
                            why: format!("thread {id} names unknown string {name}"),
                        });
                    }
                    self.threads.insert(*id, *name);
                }
                let mut c = c;
                for run in &mut c.runs {
                    if !self.threads.contains_key(&run.thread) {
                        return Err(LogError::Corrupt {
                            offset: at,
                            why: format!("events of undeclared thread {}", run.thread),
                        });
                    }
                    run.set_strings(nstr);
                    self.events += u64::from(run.len());
                }
                self.chunks += 1;
                Ok(Some(c))
            }
        }
    }

    /// Highest sequence number seen so far.
    pub fn max_seq(&self) -> Option<u64> {
        self.max_seq
    }
}

/// A problem with the sequence numbers themselves (the chunks holding them were intact).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeqProblem {
    /// `seq` appears a second time, in the chunk at file offset `chunk`.
    Duplicate { seq: u64, chunk: u64 },
    /// `seq` came, in the chunk at `chunk`, after the reader had given it up as missing:
    /// further from its place in the file than any log the recorder writes.
    Late { seq: u64, chunk: u64 },
    /// `seq` never appears although later numbers do (or the trailer counts it).
    Missing { seq: u64 },
}

/// A time mark: `(seq, mono_ns)`, by `mono_ns` after the start `seq` numbers were handed out.
pub type Mark = (u64, u64);

/// Events of a log in global sequence order, checked: every number once, none missing.
///
/// The file is only nearly ordered across threads (see the schema): each thread's runs are
/// in order, so this merges the runs of the chunks read so far on their next sequence number,
/// which is dense, so the next one to emit is always known. Chunks wait with their events
/// still encoded ([`RunCursor`]), so looking far ahead for a number costs the chunks' bytes,
/// not decoded events. A number that never arrives (lost when a recorder crashed) is given
/// up once the chunks waiting for it hold more than `HOLD` bytes, or at the end of the log;
/// `gaps` counts such numbers and `first_problem` says what was wrong first. The log's time
/// marks are kept for [`Self::time_of`].
pub struct Ordered<R: Read = BufReader<File>> {
    pub reader: LogReader<R>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// (sequence number of the slot's head, slot), least first.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The slot being emitted from (not in `heap`): most events follow their predecessor in
    /// the same run, so they are emitted without a trip through the heap.
    cur: Option<usize>,
    next: u64,
    done: bool,
    /// Bytes of the chunks whose runs wait in `slots`, and per chunk (by file offset) its
    /// size and how many of its runs wait.
    held: usize,
    chunks: HashMap<u64, (usize, u32)>,
    /// Ranges of numbers given up as missing (the first ones, to tell late from duplicate).
    skipped: Vec<(u64, u64)>,
    /// (seq, mono_ns): by `mono_ns` after the start, `seq` numbers had been handed out.
    marks: VecDeque<(u64, u64)>,
    error: Option<LogError>,
    /// Numbers skipped over because they never arrived.
    pub gaps: u64,
    pub first_problem: Option<SeqProblem>,
    /// Events returned so far.
    pub emitted: u64,
}

struct Slot {
    run: RunCursor,
    head: Event,
    chunk: u64,
}

/// Bytes of waiting chunks past which a missing number is given up. A chunk of clock
/// readings is ~100 KiB for 65 536 events, so this looks millions of events ahead; with the
/// chunk being decoded (at most `MAX_DECODED`), memory stays under 64 MiB on any input.
const HOLD: usize = 8 << 20;
/// Skipped ranges remembered (to call a number that comes later late, not duplicated).
const SKIPPED: usize = 4096;

impl<R: Read> Ordered<R> {
    pub fn new(reader: LogReader<R>) -> Self {
        Ordered {
            reader,
            slots: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            cur: None,
            next: 0,
            done: false,
            held: 0,
            chunks: HashMap::new(),
            skipped: Vec::new(),
            marks: VecDeque::new(),
            error: None,
            gaps: 0,
            first_problem: None,
            emitted: 0,
        }
    }

    /// The error that stopped reading, if any (events before it were all returned).
    pub fn take_error(&mut self) -> Option<LogError> {
        self.error.take()
    }

    pub fn error(&self) -> Option<&LogError> {
        self.error.as_ref()
    }

    /// The next number expected: one past the last event returned (or given up).
    pub fn next_seq(&self) -> u64 {
        self.next
    }

    fn problem(&mut self, p: SeqProblem) {
        if self.first_problem.is_none() {
            self.first_problem = Some(p);
        }
    }

    fn fail(&mut self, chunk: u64, why: String) {
        if self.error.is_none() {
            self.error = Some(LogError::Corrupt {
                offset: chunk,
                why: format!("thread run: {why}"),
            });
        }
        self.done = true;
    }

    /// Puts a run in a slot with its first event decoded; false if it has none left.
    fn admit(&mut self, mut run: RunCursor, chunk: u64) -> Option<usize> {
        match run.next_event() {
            Ok(Some(head)) => {
                let slot = Slot { run, head, chunk };
                let i = match self.free.pop() {
                    Some(i) => {
                        self.slots[i] = Some(slot);
                        i
                    }
                    None => {
                        self.slots.push(Some(slot));
                        self.slots.len() - 1
                    }
                };
                Some(i)
            }
            Ok(None) => {
                self.release(chunk);
                None
            }
            Err(why) => {
                self.release(chunk);
                self.fail(chunk, why);
                None
            }
        }
    }

    /// One run of the chunk at `chunk` is used up.
    fn release(&mut self, chunk: u64) {
        if let Some(c) = self.chunks.get_mut(&chunk) {
            c.1 -= 1;
            if c.1 == 0 {
                self.held -= c.0;
                self.chunks.remove(&chunk);
            }
        }
    }

    fn take_chunk(&mut self, c: Chunk) {
        for m in &c.marks {
            // Marks are written in time order by one flusher; ignore any that would go back.
            if self.marks.back().is_none_or(|l| m.0 >= l.0 && m.1 >= l.1) {
                self.marks.push_back(*m);
            }
        }
        if c.runs.is_empty() {
            return;
        }
        self.held += c.raw_len;
        self.chunks
            .insert(c.offset, (c.raw_len, c.runs.len() as u32));
        for run in c.runs {
            if let Some(i) = self.admit(run, c.offset) {
                let seq = self.slots[i].as_ref().map_or(0, |s| s.head.seq);
                self.heap.push(Reverse((seq, i)));
            }
        }
    }

    /// Takes the head of slot `i` and decodes its next event (or frees the slot).
    fn pop_head(&mut self, i: usize) -> (Event, u64) {
        let slot = self.slots[i].as_mut().expect("a live slot");
        let chunk = slot.chunk;
        let next = slot.run.next_event();
        let (head, more) = match next {
            Ok(Some(e)) => (std::mem::replace(&mut slot.head, e), true),
            Ok(None) => (self.slots[i].take().expect("a live slot").head, false),
            Err(why) => {
                let head = self.slots[i].take().expect("a live slot").head;
                self.fail(chunk, why);
                (head, false)
            }
        };
        if !more {
            self.free.push(i);
            if self.cur == Some(i) {
                self.cur = None;
            }
            self.release(chunk);
        }
        (head, chunk)
    }

    fn was_skipped(&self, seq: u64) -> bool {
        self.skipped.iter().any(|&(a, b)| seq >= a && seq < b)
    }

    /// Approximate nanoseconds since the recording started at which `seq` was numbered:
    /// linear between the marks around it. Exact order, approximate time. Call it with
    /// increasing numbers (marks no later event needs are dropped).
    pub fn time_of(&mut self, seq: u64) -> u64 {
        while self.marks.len() >= 2 && self.marks[1].0 <= seq {
            self.marks.pop_front();
        }
        let Some(&(s0, t0)) = self.marks.front() else {
            return 0;
        };
        if s0 > seq {
            return t0;
        }
        match self.marks.iter().find(|m| m.0 > seq) {
            Some(&(s1, t1)) => {
                t0 + ((t1 - t0) as u128 * (seq - s0) as u128 / (s1 - s0) as u128) as u64
            }
            // No mark after it (never true for a log the recorder wrote): the last mark.
            None => self.marks.back().map_or(t0, |m| m.1),
        }
    }

    /// The marks around `seq`: the last one at or before it (`seq` was numbered after that
    /// mark's time) and the first one after it (numbered before that time; `None` when the
    /// log has no later mark). `None` before the first mark. Like [`Self::time_of`], call it
    /// with increasing numbers; the two may not be mixed on one reader.
    pub fn window_of(&mut self, seq: u64) -> Option<(Mark, Option<Mark>)> {
        while self.marks.len() >= 2 && self.marks[1].0 <= seq {
            self.marks.pop_front();
        }
        let lo = *self.marks.front()?;
        if lo.0 > seq {
            return None;
        }
        Some((lo, self.marks.iter().find(|m| m.0 > seq).copied()))
    }
}

impl<R: Read> Iterator for Ordered<R> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            // The run that gave the last event usually gives the next one too.
            if let Some(i) = self.cur {
                let head = self.slots[i].as_ref().map_or(u64::MAX, |s| s.head.seq);
                if head == self.next {
                    let (e, _) = self.pop_head(i);
                    self.next = e.seq.saturating_add(1);
                    self.emitted += 1;
                    return Some(e);
                }
                self.cur = None;
                if head != u64::MAX {
                    self.heap.push(Reverse((head, i)));
                }
            }
            match self.heap.peek().copied() {
                Some(Reverse((seq, i))) if seq < self.next => {
                    self.heap.pop();
                    let (e, chunk) = self.pop_head(i);
                    let p = if self.was_skipped(e.seq) {
                        SeqProblem::Late { seq: e.seq, chunk }
                    } else {
                        SeqProblem::Duplicate { seq: e.seq, chunk }
                    };
                    self.problem(p);
                    if let Some(s) = &self.slots[i] {
                        self.heap.push(Reverse((s.head.seq, i)));
                    }
                    continue;
                }
                Some(Reverse((seq, i))) if seq == self.next => {
                    self.heap.pop();
                    self.cur = Some(i);
                    continue;
                }
                _ => {}
            }
            // The next number is not among the runs read: read on, or give it up.
            if !self.done && self.held <= HOLD {
                match self.reader.next_chunk() {
                    Ok(Some(c)) => self.take_chunk(c),
                    Ok(None) => self.done = true,
                    Err(e) => {
                        self.error = Some(e);
                        self.done = true;
                    }
                }
                continue;
            }
            match self.heap.peek().copied() {
                Some(Reverse((seq, _))) => {
                    self.problem(SeqProblem::Missing { seq: self.next });
                    if self.skipped.len() < SKIPPED {
                        self.skipped.push((self.next, seq));
                    }
                    self.gaps += seq - self.next;
                    self.next = seq;
                }
                None => {
                    // Numbers the trailer counts but no chunk held.
                    let counted = match self.reader.end() {
                        Some(End::Complete(t)) => t.events,
                        _ => 0,
                    };
                    if counted > self.next && self.error.is_none() {
                        self.problem(SeqProblem::Missing { seq: self.next });
                        self.gaps += counted - self.next;
                        self.next = counted;
                    }
                    return None;
                }
            }
        }
    }
}
