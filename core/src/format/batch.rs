//! Encoding and decoding of a `Batch`: the events of one chunk, column by column.

use crate::error::LogError;
use crate::event::*;
use crate::replay_capnp::{batch, field, record, run};
use crate::varint::{self, Cursor};
use bytes::Bytes;

/// A borrowed payload, as the recorder hands it to the encoder without copying.
#[derive(Clone, Copy, Debug)]
pub enum PayloadRef<'a> {
    None,
    Int(i64),
    Uint(u64),
    Float(f64),
    Bytes(&'a [u8]),
    Ret {
        ret: i64,
        errno: i32,
        data: Option<&'a [u8]>,
    },
    Record(&'a Record),
}

impl<'a> PayloadRef<'a> {
    pub fn from_payload(p: &'a Payload) -> Self {
        match p {
            Payload::None => PayloadRef::None,
            Payload::Int { value } => PayloadRef::Int(*value),
            Payload::Uint { value } => PayloadRef::Uint(*value),
            Payload::Float { value } => PayloadRef::Float(*value),
            Payload::Bytes { data } => PayloadRef::Bytes(data),
            Payload::Ret { ret, errno, data } => PayloadRef::Ret {
                ret: *ret,
                errno: *errno,
                data: data.as_deref(),
            },
            Payload::Record { record } => PayloadRef::Record(record),
        }
    }
}

/// Previous integer value per kind within one run: the base of the delta encoding. Few
/// kinds interleave in one thread, so a short list beats a hash map.
#[derive(Default)]
struct Deltas {
    last: Vec<(u32, u64)>,
    hint: usize,
}

impl Deltas {
    #[inline]
    fn slot(&mut self, kind: u32) -> &mut u64 {
        if let Some((k, _)) = self.last.get(self.hint) {
            if *k == kind {
                return &mut self.last[self.hint].1;
            }
        }
        let i = match self.last.iter().position(|(k, _)| *k == kind) {
            Some(i) => i,
            None => {
                self.last.push((kind, 0));
                self.last.len() - 1
            }
        };
        self.hint = i;
        &mut self.last[i].1
    }
}

/// The previous bytes part per kind, the base of the `blobDeltas` encoding (see the schema).
#[derive(Default)]
struct BlobPrev {
    last: Vec<(u32, Vec<u8>)>,
}

impl BlobPrev {
    fn slot(&mut self, kind: u32) -> &mut Vec<u8> {
        let i = match self.last.iter().position(|(k, _)| *k == kind) {
            Some(i) => i,
            None => {
                self.last.push((kind, Vec::new()));
                self.last.len() - 1
            }
        };
        &mut self.last[i].1
    }
}

/// Whether a bytes part of this length may be delta-encoded against the previous one.
fn delta_eligible(len: usize) -> bool {
    len > 0 && len % 8 == 0 && len <= 64
}

/// Column builder for the events of one thread.
pub struct RunBuilder {
    pub thread: u32,
    count: u32,
    first_seq: u64,
    last_seq: u64,
    seq_gaps: Vec<u8>,
    kinds: Vec<u8>,
    flags: Vec<u8>,
    sites: Vec<u8>,
    digests: Vec<u8>,
    ints: Vec<u8>,
    errnos: Vec<u8>,
    lengths: Vec<u8>,
    blobs: Vec<u8>,
    records: Vec<Record>,
    /// Encoded size of `records`, estimated: a batch of large records (64 KB http bodies)
    /// must reach the byte bound like a batch of blobs, or its frame outgrows the format.
    record_bytes: usize,
    deltas: Deltas,
    blob_prev: BlobPrev,
}

/// Approximate encoded size of a record: its bytes and text plus a word or two per field.
pub fn record_size(r: &Record) -> usize {
    r.fields
        .iter()
        .map(|f| {
            24 + f.name.len()
                + match &f.value {
                    FieldValue::Text(t) => t.len(),
                    FieldValue::Bytes(b) => b.len(),
                    FieldValue::Record(r) => record_size(r),
                    _ => 8,
                }
        })
        .sum::<usize>()
        + 16
}

impl RunBuilder {
    pub fn new(thread: u32) -> Self {
        RunBuilder {
            thread,
            count: 0,
            first_seq: 0,
            last_seq: 0,
            seq_gaps: Vec::new(),
            kinds: Vec::new(),
            flags: Vec::new(),
            sites: Vec::new(),
            digests: Vec::new(),
            ints: Vec::new(),
            errnos: Vec::new(),
            lengths: Vec::new(),
            blobs: Vec::new(),
            records: Vec::new(),
            record_bytes: 0,
            deltas: Deltas::default(),
            blob_prev: BlobPrev::default(),
        }
    }

    /// Empties the builder for another thread, keeping its columns' memory: the flusher
    /// reuses builders, so a long recording does not fault in fresh buffers for every batch.
    pub fn reset(&mut self, thread: u32) {
        self.thread = thread;
        self.count = 0;
        self.first_seq = 0;
        self.last_seq = 0;
        for col in [
            &mut self.seq_gaps,
            &mut self.kinds,
            &mut self.flags,
            &mut self.sites,
            &mut self.digests,
            &mut self.ints,
            &mut self.errnos,
            &mut self.lengths,
            &mut self.blobs,
        ] {
            col.clear();
        }
        self.records.clear();
        self.record_bytes = 0;
        self.deltas = Deltas::default();
        self.blob_prev.last.clear();
    }

    pub fn len(&self) -> u32 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Approximate encoded size, used to cut batches before they grow past the bounds.
    pub fn approx_bytes(&self) -> usize {
        self.seq_gaps.len()
            + self.kinds.len()
            + self.flags.len()
            + self.sites.len()
            + self.digests.len()
            + self.ints.len()
            + self.errnos.len()
            + self.lengths.len()
            + self.blobs.len()
            + self.record_bytes
    }

    /// Appends one event. Sequence numbers must increase within a run.
    #[inline]
    pub fn push(&mut self, seq: u64, kind: u32, site: u32, digest: Option<u64>, p: PayloadRef<'_>) {
        let (ty, int, errno, data) = match p {
            PayloadRef::None => (PayloadType::None, None, 0, None),
            PayloadRef::Int(v) => (PayloadType::Int, Some(v as u64), 0, None),
            PayloadRef::Uint(v) => (PayloadType::Uint, Some(v), 0, None),
            PayloadRef::Float(v) => (PayloadType::Float, Some(v.to_bits()), 0, None),
            PayloadRef::Bytes(d) => (PayloadType::Bytes, None, 0, Some(d)),
            PayloadRef::Ret { ret, errno, data } => {
                (PayloadType::Ret, Some(ret as u64), errno, data)
            }
            PayloadRef::Record(r) => {
                self.record_bytes += record_size(r);
                self.records.push(r.clone());
                (PayloadType::Record, None, 0, None)
            }
        };
        self.push_columns(seq, kind, site, digest, ty, int, errno, data);
    }

    /// Appends one `Record` event the caller hands over: the same event as [`Self::push`]
    /// with `PayloadRef::Record(&record)`, without copying the record (the recorder's
    /// flusher owns each record once; an http body copied here cost a memmove per event).
    pub fn push_record(
        &mut self,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        record: Record,
    ) {
        self.record_bytes += record_size(&record);
        self.records.push(record);
        self.push_columns(seq, kind, site, digest, PayloadType::Record, None, 0, None);
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn push_columns(
        &mut self,
        seq: u64,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        ty: PayloadType,
        int: Option<u64>,
        errno: i32,
        data: Option<&[u8]>,
    ) {
        if self.count == 0 {
            self.first_seq = seq;
        } else {
            debug_assert!(seq > self.last_seq);
            varint::put(&mut self.seq_gaps, seq - self.last_seq - 1);
        }
        self.last_seq = seq;
        self.count += 1;
        varint::put(&mut self.kinds, u64::from(kind));
        let mut flags = ty as u8;
        if site != 0 {
            flags |= FLAG_SITE;
            varint::put(&mut self.sites, u64::from(site));
        }
        if let Some(d) = digest {
            flags |= FLAG_DIGEST;
            self.digests.extend_from_slice(&d.to_le_bytes());
        }
        if let Some(v) = int {
            let prev = self.deltas.slot(kind);
            varint::put(&mut self.ints, varint::zigzag(v.wrapping_sub(*prev) as i64));
            *prev = v;
        }
        if errno != 0 {
            flags |= FLAG_ERRNO;
            varint::put(&mut self.errnos, varint::zigzag(i64::from(errno)));
        }
        if let Some(d) = data {
            flags |= FLAG_DATA;
            varint::put(&mut self.lengths, d.len() as u64);
            let prev = self.blob_prev.slot(kind);
            if delta_eligible(d.len()) {
                if prev.len() == d.len() {
                    for (n, o) in d.chunks_exact(8).zip(prev.chunks_exact(8)) {
                        let (n, o) = (
                            u64::from_le_bytes(n.try_into().unwrap()),
                            u64::from_le_bytes(o.try_into().unwrap()),
                        );
                        varint::put(&mut self.blobs, varint::zigzag(n.wrapping_sub(o) as i64));
                    }
                } else {
                    self.blobs.extend_from_slice(d);
                }
                prev.clear();
                prev.extend_from_slice(d);
            } else {
                prev.clear();
                self.blobs.extend_from_slice(d);
            }
        }
        self.flags.push(flags);
    }

    fn build(&self, mut r: run::Builder<'_>) {
        r.set_thread(self.thread);
        r.set_count(self.count);
        r.set_first_seq(self.first_seq);
        r.set_seq_gaps(&self.seq_gaps);
        r.set_kinds(&self.kinds);
        r.set_flags(&self.flags);
        r.set_sites(&self.sites);
        r.set_digests(&self.digests);
        r.set_ints(&self.ints);
        r.set_errnos(&self.errnos);
        r.set_lengths(&self.lengths);
        r.set_blobs(&self.blobs);
        r.set_blob_deltas(true);
        let mut recs = r.init_records(self.records.len() as u32);
        for (i, rec) in self.records.iter().enumerate() {
            build_record(rec, recs.reborrow().get(i as u32));
        }
    }
}

fn build_record(rec: &Record, b: record::Builder<'_>) {
    let mut fields = b.init_fields(rec.fields.len() as u32);
    for (i, f) in rec.fields.iter().enumerate() {
        let mut fb = fields.reborrow().get(i as u32);
        fb.set_name(f.name.as_str());
        let mut v = fb.init_value();
        match &f.value {
            FieldValue::Int(x) => v.set_int(*x),
            FieldValue::Uint(x) => v.set_uint(*x),
            FieldValue::Float(x) => v.set_float(*x),
            FieldValue::Text(t) => v.set_text(t.as_str()),
            FieldValue::Bytes(d) => v.set_bytes(d),
            FieldValue::Record(r) => build_record(r, v.init_record()),
        }
    }
}

/// Everything one chunk carries, before encoding.
#[derive(Default)]
pub struct BatchBuilder {
    pub strings: Vec<(u32, String)>,
    pub threads: Vec<(u32, u32)>,
    pub runs: Vec<RunBuilder>,
    pub marks: Vec<(u64, u64)>,
    /// The message's first segment, kept from one batch to the next (see [`Segment`]).
    scratch: std::sync::Mutex<Segment>,
}

/// A zeroed buffer that is the first segment of every message one builder encodes. A fresh
/// segment per batch (megabytes when a batch holds http bodies) cost the flusher a page fault
/// and a page clear per 4 KiB, more than the encoding itself; this one is re-zeroed only as
/// far as the last message used it.
///
/// Word 0 is not part of the segment: it is room for the stream's segment table, so that a
/// one-segment message is already the serialized message, in place ([`BatchBuilder::encode_with`]:
/// copying it out cost the flusher a pass over every recorded byte).
#[derive(Default)]
struct Segment {
    words: Vec<u64>,
    in_use: bool,
    more: capnp::message::HeapAllocator,
}

/// Words of the kept segment at most: larger batches take their first segment from the heap
/// for that message only, so one huge batch does not pin its memory for the whole recording.
const KEPT_WORDS: usize = (16 << 20) / 8;

impl Segment {
    fn reserve(&mut self, words: usize) {
        let want = words.min(KEPT_WORDS) + 1;
        if self.words.len() < want {
            self.words.resize(want, 0);
        }
    }

    /// Where the kept segment starts (after the table word).
    fn body(&mut self) -> *mut u8 {
        self.words[1..].as_mut_ptr() as *mut u8
    }
}

// SAFETY: the kept segment is handed out at most once at a time (`in_use`), is 8-byte
// aligned (a Vec<u64>) and zeroed whenever it is handed out: it starts zeroed and is zeroed
// back, as far as the message wrote it, when the message gives it back.
unsafe impl capnp::message::Allocator for Segment {
    fn allocate_segment(&mut self, minimum_size: u32) -> (std::ptr::NonNull<u8>, u32) {
        if !self.in_use && self.words.len() > 1 && (minimum_size as usize) < self.words.len() {
            self.in_use = true;
            let ptr = std::ptr::NonNull::new(self.body()).unwrap();
            return (ptr, self.words.len() as u32 - 1);
        }
        self.more.allocate_segment(minimum_size)
    }

    unsafe fn deallocate_segment(
        &mut self,
        ptr: std::ptr::NonNull<u8>,
        word_size: u32,
        words_used: u32,
    ) {
        if self.in_use && ptr.as_ptr() == self.body() {
            let used = (words_used as usize).min(self.words.len() - 1);
            self.words[1..1 + used].fill(0);
            self.in_use = false;
        } else {
            // SAFETY: not the kept segment, so `more` allocated it.
            unsafe { self.more.deallocate_segment(ptr, word_size, words_used) }
        }
    }
}

impl BatchBuilder {
    pub fn event_count(&self) -> u64 {
        self.runs.iter().map(|r| u64::from(r.count)).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty() && self.threads.is_empty() && self.runs.iter().all(|r| r.is_empty())
    }

    pub fn approx_bytes(&self) -> usize {
        self.runs.iter().map(|r| r.approx_bytes()).sum::<usize>()
            + self.strings.iter().map(|s| s.1.len() + 16).sum::<usize>()
    }

    /// Serializes to an unpacked Cap'n Proto message (the frame compresses it).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// [`Self::encode`] into `out` (emptied first), whose memory the caller reuses.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        self.encode_with(|m| {
            out.clear();
            out.extend_from_slice(m);
        })
    }

    /// Calls `f` with the serialized message ([`Self::encode`]'s bytes). A message in one
    /// segment (the usual case) is passed where it was built, not copied out.
    pub fn encode_with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        // One first segment big enough for the whole batch, kept for the next one: the
        // default (8 KiB, growing by halves) took a dozen fresh allocations per batch of
        // http bodies, each paid again in page faults.
        let mut seg = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        seg.reserve(self.approx_bytes() / 8 + 4096);
        let table = seg.words.as_mut_ptr();
        let body = seg.body() as *const u8;
        let mut msg = capnp::message::Builder::new(&mut *seg);
        {
            let mut b = msg.init_root::<batch::Builder>();
            let mut strings = b.reborrow().init_strings(self.strings.len() as u32);
            for (i, (id, text)) in self.strings.iter().enumerate() {
                let mut s = strings.reborrow().get(i as u32);
                s.set_id(*id);
                s.set_text(text.as_str());
            }
            let mut threads = b.reborrow().init_threads(self.threads.len() as u32);
            for (i, (id, name)) in self.threads.iter().enumerate() {
                let mut t = threads.reborrow().get(i as u32);
                t.set_id(*id);
                t.set_name(*name);
            }
            let nonempty: Vec<&RunBuilder> = self.runs.iter().filter(|r| !r.is_empty()).collect();
            let mut runs = b.reborrow().init_runs(nonempty.len() as u32);
            for (i, r) in nonempty.iter().enumerate() {
                r.build(runs.reborrow().get(i as u32));
            }
            let mut marks = b.init_time_marks(self.marks.len() as u32);
            for (i, (seq, ns)) in self.marks.iter().enumerate() {
                let mut m = marks.reborrow().get(i as u32);
                m.set_seq(*seq);
                m.set_mono_ns(*ns);
            }
        }
        let segments = msg.get_segments_for_output();
        if segments.len() == 1 && segments[0].as_ptr() == body {
            let len = segments[0].len();
            // The stream framing of one segment: segment count minus one, then its size in
            // words (both u32 LE), in the word before the segment.
            let mut head = [0u8; 8];
            head[4..].copy_from_slice(&((len / 8) as u32).to_le_bytes());
            // SAFETY: `table` is word 0 of the kept buffer, which the allocator never hands
            // out, and the segment follows it; the message only reads the buffer from here on,
            // and it is released after `f` returns.
            let whole = unsafe {
                table.write(u64::from_le_bytes(head));
                std::slice::from_raw_parts(table as *const u8, 8 + len)
            };
            return f(whole);
        }
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = capnp::serialize::write_message(&mut out, &msg);
        f(&out)
    }
}

/// A decoded chunk.
#[derive(Debug, Default)]
pub struct DecodedBatch {
    pub strings: Vec<(u32, String)>,
    pub threads: Vec<(u32, u32)>,
    pub runs: Vec<DecodedRun>,
    pub marks: Vec<(u64, u64)>,
}

#[derive(Debug)]
pub struct DecodedRun {
    pub thread: u32,
    pub events: Vec<Event>,
}

/// A chunk whose tables are decoded and whose events are not yet: each run is a
/// [`RunCursor`] that decodes one event at a time. A chunk held this way takes the room of
/// its encoded bytes (a clock reading is a byte or two), not of its decoded events (~90
/// bytes each), which is what lets an ordered reader look far ahead within bounded memory.
#[derive(Debug, Default)]
pub struct Chunk {
    /// File offset of the chunk's frame.
    pub offset: u64,
    /// Bytes of the decompressed chunk (kept alive by its runs and payloads).
    pub raw_len: usize,
    pub strings: Vec<(u32, String)>,
    pub threads: Vec<(u32, u32)>,
    pub runs: Vec<RunCursor>,
    pub marks: Vec<(u64, u64)>,
}

/// Reads a Cap'n Proto message from untrusted bytes with bounded traversal and nesting.
pub(crate) fn read_message(
    bytes: &[u8],
) -> capnp::Result<capnp::message::Reader<capnp::serialize::OwnedSegments>> {
    let mut slice = bytes;
    capnp::serialize::read_message(&mut slice, reader_options(bytes.len()))
}

impl DecodedBatch {
    /// Decodes a batch that was found at file offset `offset`, every event at once. The
    /// message is read where it lies (no copy), and bytes payloads are slices of `raw`.
    pub fn decode(raw: impl Into<Bytes>, offset: u64) -> Result<Self, LogError> {
        Chunk::decode(raw.into(), offset, u32::MAX)?.into_batch()
    }
}

impl Chunk {
    /// Decodes the tables of a chunk found at file offset `offset` and prepares its runs.
    /// Events naming a string id above `strings` are errors (`u32::MAX`: not checked).
    pub fn decode(raw: Bytes, offset: u64, strings: u32) -> Result<Self, LogError> {
        let raw = aligned(raw);
        let bad = |why: String| LogError::Corrupt { offset, why };
        let cap = |e: capnp::Error| bad(format!("unreadable chunk: {e}"));
        let segments =
            capnp::serialize::BufferSegments::new(raw.clone(), reader_options(raw.len()))
                .map_err(cap)?;
        let msg = capnp::message::Reader::new(segments, reader_options(raw.len()));
        let b = msg.get_root::<batch::Reader>().map_err(cap)?;
        let mut out = Chunk {
            offset,
            raw_len: raw.len(),
            ..Default::default()
        };
        for s in b.get_strings().map_err(cap)? {
            let text = s
                .get_text()
                .map_err(cap)?
                .to_string()
                .map_err(|e| cap(e.into()))?;
            out.strings.push((s.get_id(), text));
        }
        for t in b.get_threads().map_err(cap)? {
            out.threads.push((t.get_id(), t.get_name()));
        }
        for m in b.get_time_marks().map_err(cap)? {
            out.marks.push((m.get_seq(), m.get_mono_ns()));
        }
        let runs = b.get_runs().map_err(cap)?;
        // Decoded events take far more room than encoded ones (a clock value is about one
        // byte in the chunk, an `Event` ~90): the count is bounded by what the writer puts in
        // one chunk before any is decoded, so a crafted chunk cannot multiply its size.
        let mut events = 0usize;
        for r in runs.iter() {
            events = events.saturating_add(r.get_count() as usize);
        }
        if events > super::MAX_CHUNK_EVENTS {
            return Err(bad(format!(
                "chunk holds {events} events, over the {} the recorder writes at most",
                super::MAX_CHUNK_EVENTS
            )));
        }
        // Fields are bounded likewise, and so that the whole decoded chunk stays within
        // `MAX_DECODED` with the chunk's own bytes, which its payloads keep alive.
        let room = super::MAX_DECODED
            .saturating_sub(raw.len())
            .saturating_sub(events * std::mem::size_of::<Event>());
        let mut fields = Fields {
            count: 0,
            max: super::MAX_CHUNK_FIELDS.min(room / (std::mem::size_of::<Field>() + 16)),
        };
        for r in runs {
            let run = RunCursor::new(r, &raw, &mut fields, strings)
                .map_err(|why| bad(format!("thread run: {why}")))?;
            out.runs.push(run);
        }
        Ok(out)
    }

    /// Events in this chunk.
    pub fn event_count(&self) -> u64 {
        self.runs.iter().map(|r| u64::from(r.count)).sum()
    }

    /// Decodes every event.
    pub fn into_batch(self) -> Result<DecodedBatch, LogError> {
        let offset = self.offset;
        let mut runs = Vec::with_capacity(self.runs.len());
        for r in self.runs {
            runs.push(r.collect_all().map_err(|why| LogError::Corrupt {
                offset,
                why: format!("thread run: {why}"),
            })?);
        }
        Ok(DecodedBatch {
            strings: self.strings,
            threads: self.threads,
            runs,
            marks: self.marks,
        })
    }
}

fn reader_options(len: usize) -> capnp::message::ReaderOptions {
    let mut opts = capnp::message::ReaderOptions::new();
    // Traversal is bounded by the message size itself (plus slack for far pointers), so a
    // crafted message cannot make the reader loop over the same words forever.
    opts.traversal_limit_in_words(Some(len / 8 * 4 + 1024));
    opts.nesting_limit(64);
    opts
}

/// `b` on an 8-byte boundary (Cap'n Proto reads in place only from aligned memory): as it
/// is when it already is (the log reader's buffers are), else copied once.
fn aligned(b: Bytes) -> Bytes {
    if b.as_ptr() as usize % 8 == 0 {
        return b;
    }
    let mut words = vec![0u64; b.len().div_ceil(8)];
    // SAFETY: `words` has room for at least `b.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), words.as_mut_ptr().cast(), b.len()) };
    let len = b.len();
    Bytes::from_owner(WordBytes(words, len))
}

struct WordBytes(Vec<u64>, usize);

impl AsRef<[u8]> for WordBytes {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the vector holds at least `self.1` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.1) }
    }
}

/// Record fields decoded so far in a chunk, and how many it may hold.
struct Fields {
    count: usize,
    max: usize,
}

/// One column of a run: a range of the chunk's bytes and how far it was read.
#[derive(Clone, Copy, Debug, Default)]
struct Col {
    pos: usize,
    end: usize,
}

impl Col {
    fn of(raw: &Bytes, s: &[u8]) -> Col {
        if s.is_empty() {
            return Col::default();
        }
        // The message is read in place, so every column lies within `raw`.
        let pos = s.as_ptr() as usize - raw.as_ptr() as usize;
        Col {
            pos,
            end: pos + s.len(),
        }
    }

    #[inline(always)]
    fn varint(&mut self, raw: &[u8]) -> Option<u64> {
        // Fast path: most columns hold one-byte varints.
        if self.pos < self.end {
            let b = raw[self.pos];
            if b < 0x80 {
                self.pos += 1;
                return Some(u64::from(b));
            }
        }
        let mut c = Cursor::new(raw.get(self.pos..self.end)?);
        let v = c.varint()?;
        self.pos = self.end - c.remaining();
        Some(v)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Option<(usize, usize)> {
        let end = self.pos.checked_add(n)?;
        if end > self.end {
            return None;
        }
        let start = self.pos;
        self.pos = end;
        Some((start, end))
    }

    fn remaining(&self) -> usize {
        self.end - self.pos
    }
}

/// The events of one thread's run in a chunk, decoded one at a time (in increasing sequence
/// order). Holds the chunk's bytes; bytes payloads are slices of them.
#[derive(Debug)]
pub struct RunCursor {
    pub thread: u32,
    count: u32,
    done: u32,
    seq: u64,
    strings: u32,
    raw: Bytes,
    flags: Col,
    gaps: Col,
    kinds: Col,
    sites: Col,
    digests: Col,
    ints: Col,
    errnos: Col,
    lengths: Col,
    blobs: Col,
    records: std::vec::IntoIter<Record>,
    blob_deltas: bool,
    deltas: Deltas,
    blob_prev: BlobPrev,
}

impl std::fmt::Debug for Deltas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deltas")
    }
}

impl std::fmt::Debug for BlobPrev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BlobPrev")
    }
}

/// Where a delta-encoded bytes part goes: its own small buffer (one event at a time), or
/// the run's shared buffer (all at once: one allocation per run, sliced afterwards).
enum Rebuilt<'a> {
    Own,
    Shared(&'a mut Vec<u8>),
}

impl RunCursor {
    fn new(
        r: run::Reader<'_>,
        raw: &Bytes,
        fields: &mut Fields,
        strings: u32,
    ) -> Result<RunCursor, String> {
        let e = |e: capnp::Error| e.to_string();
        let count = r.get_count();
        let flags = r.get_flags().map_err(e)?;
        if count == 0 {
            return Err("empty run".into());
        }
        if flags.len() != count as usize {
            return Err(format!("{} flags for {count} events", flags.len()));
        }
        let records = r.get_records().map_err(e)?;
        if records.len() > count {
            return Err("columns hold more entries than the events use".into());
        }
        let mut recs = Vec::with_capacity(records.len() as usize);
        for rec in records {
            recs.push(decode_record(rec, 0, raw, fields)?);
        }
        Ok(RunCursor {
            thread: r.get_thread(),
            count,
            done: 0,
            seq: r.get_first_seq(),
            strings,
            raw: raw.clone(),
            flags: Col::of(raw, flags),
            gaps: Col::of(raw, r.get_seq_gaps().map_err(e)?),
            kinds: Col::of(raw, r.get_kinds().map_err(e)?),
            sites: Col::of(raw, r.get_sites().map_err(e)?),
            digests: Col::of(raw, r.get_digests().map_err(e)?),
            ints: Col::of(raw, r.get_ints().map_err(e)?),
            errnos: Col::of(raw, r.get_errnos().map_err(e)?),
            lengths: Col::of(raw, r.get_lengths().map_err(e)?),
            blobs: Col::of(raw, r.get_blobs().map_err(e)?),
            records: recs.into_iter(),
            blob_deltas: r.get_blob_deltas(),
            deltas: Deltas::default(),
            blob_prev: BlobPrev::default(),
        })
    }

    /// Events naming a string id above `n` are errors.
    pub(crate) fn set_strings(&mut self, n: u32) {
        self.strings = n;
    }

    /// Events in the run.
    pub fn len(&self) -> u32 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Events not yet decoded.
    pub fn remaining(&self) -> u32 {
        self.count - self.done
    }

    /// Bytes of the chunk this run keeps alive.
    pub fn chunk_bytes(&self) -> usize {
        self.raw.len()
    }

    /// The next event, `Ok(None)` after the last (once its columns are checked to be used
    /// up exactly). An error leaves the cursor at its end.
    pub fn next_event(&mut self) -> Result<Option<Event>, String> {
        match self.step(&mut Rebuilt::Own) {
            Ok(Some((e, _))) => Ok(Some(e)),
            Ok(None) => Ok(None),
            Err(e) => {
                self.done = self.count;
                Err(e)
            }
        }
    }

    /// Every remaining event at once.
    pub fn collect_all(mut self) -> Result<DecodedRun, String> {
        let mut events = Vec::with_capacity(self.remaining() as usize);
        let mut rebuilt = Vec::new();
        let mut patch: Vec<(usize, usize, usize)> = Vec::new();
        while let Some((e, part)) = self.step(&mut Rebuilt::Shared(&mut rebuilt))? {
            if let Some((start, len)) = part {
                patch.push((events.len(), start, len));
            }
            // Written into reserved capacity: `Vec::push` on this large type was not inlined
            // and cost a sixth of the reader's time.
            if events.len() < events.capacity() {
                let len = events.len();
                events.spare_capacity_mut()[0].write(e);
                // SAFETY: the slot at `len` was just initialised and is within capacity.
                unsafe { events.set_len(len + 1) };
            } else {
                events.push(e);
            }
        }
        if !patch.is_empty() {
            let rebuilt = Bytes::from(rebuilt);
            for (i, start, len) in patch {
                if let Payload::Bytes { data }
                | Payload::Ret {
                    data: Some(data), ..
                } = &mut events[i].payload
                {
                    *data = rebuilt.slice(start..start + len);
                }
            }
        }
        Ok(DecodedRun {
            thread: self.thread,
            events,
        })
    }

    /// Decodes one event. A delta-encoded bytes part rebuilt into a shared buffer comes with
    /// its (start, length) there, and an empty placeholder in the event.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn step(
        &mut self,
        rebuilt: &mut Rebuilt<'_>,
    ) -> Result<Option<(Event, Option<(usize, usize)>)>, String> {
        let short = |col: &str| format!("column {col} ended early");
        if self.done == self.count {
            if self.done > 0 {
                self.finish()?;
            }
            return Ok(None);
        }
        let raw: &[u8] = &self.raw;
        let fl = raw[self.flags.pos];
        self.flags.pos += 1;
        if self.done > 0 {
            let gap = self.gaps.varint(raw).ok_or_else(|| short("seqGaps"))?;
            self.seq = self
                .seq
                .checked_add(gap)
                .and_then(|s| s.checked_add(1))
                .ok_or("sequence number overflows")?;
        }
        self.done += 1;
        let seq = self.seq;
        let kind = self.kinds.varint(raw).ok_or_else(|| short("kinds"))?;
        let kind = u32::try_from(kind).map_err(|_| "kind id out of range")?;
        let site = if fl & FLAG_SITE != 0 {
            u32::try_from(self.sites.varint(raw).ok_or_else(|| short("sites"))?)
                .map_err(|_| "site id out of range")?
        } else {
            0
        };
        if self.strings != u32::MAX && (kind == 0 || kind > self.strings || site > self.strings) {
            return Err(format!("event #{seq} names an unknown string"));
        }
        let digest = if fl & FLAG_DIGEST != 0 {
            let (a, b) = self.digests.take(8).ok_or_else(|| short("digests"))?;
            Some(u64::from_le_bytes(raw[a..b].try_into().unwrap()))
        } else {
            None
        };
        let ty = PayloadType::from_u8(fl & FLAG_TYPE_MASK)
            .ok_or_else(|| format!("unknown payload type {}", fl & FLAG_TYPE_MASK))?;
        let ints = &mut self.ints;
        let deltas = &mut self.deltas;
        let mut int = || -> Result<u64, String> {
            let d = varint::unzigzag(ints.varint(raw).ok_or_else(|| short("ints"))?);
            let prev = deltas.slot(kind);
            *prev = prev.wrapping_add(d as u64);
            Ok(*prev)
        };
        let errno = if fl & FLAG_ERRNO != 0 {
            let v = varint::unzigzag(self.errnos.varint(raw).ok_or_else(|| short("errnos"))?);
            i32::try_from(v).map_err(|_| "errno out of range")?
        } else {
            0
        };
        let mut part_at = None;
        let data = if fl & FLAG_DATA != 0 {
            let len = self.lengths.varint(raw).ok_or_else(|| short("lengths"))?;
            let len = usize::try_from(len).map_err(|_| "length out of range")?;
            let prev = self.blob_prev.slot(kind);
            let part = if self.blob_deltas && delta_eligible(len) && prev.len() == len {
                let mut one = [0u8; 64];
                for (i, o) in prev.chunks_exact(8).enumerate() {
                    let d = varint::unzigzag(self.blobs.varint(raw).ok_or_else(|| short("blobs"))?);
                    let o = u64::from_le_bytes(o.try_into().unwrap());
                    one[i * 8..i * 8 + 8].copy_from_slice(&o.wrapping_add(d as u64).to_le_bytes());
                }
                prev.copy_from_slice(&one[..len]);
                match rebuilt {
                    Rebuilt::Own => Bytes::copy_from_slice(&one[..len]),
                    Rebuilt::Shared(buf) => {
                        part_at = Some((buf.len(), len));
                        buf.extend_from_slice(&one[..len]);
                        Bytes::new()
                    }
                }
            } else {
                let (a, b) = self.blobs.take(len).ok_or_else(|| short("blobs"))?;
                prev.clear();
                if self.blob_deltas && delta_eligible(len) {
                    prev.extend_from_slice(&raw[a..b]);
                }
                self.raw.slice(a..b)
            };
            Some(part)
        } else {
            None
        };
        let payload = match ty {
            PayloadType::None => Payload::None,
            PayloadType::Int => Payload::Int {
                value: int()? as i64,
            },
            PayloadType::Uint => Payload::Uint { value: int()? },
            PayloadType::Float => Payload::Float {
                value: f64::from_bits(int()?),
            },
            PayloadType::Bytes => Payload::Bytes {
                data: data.ok_or("bytes event without bytes")?,
            },
            PayloadType::Ret => Payload::Ret {
                ret: int()? as i64,
                errno,
                data,
            },
            PayloadType::Record => Payload::Record {
                record: self.records.next().ok_or_else(|| short("records"))?,
            },
        };
        let e = Event {
            seq,
            thread: self.thread,
            kind,
            site,
            digest,
            payload,
        };
        Ok(Some((e, part_at)))
    }

    /// After the last event: every column must be used up exactly.
    fn finish(&mut self) -> Result<(), String> {
        let leftover = self.gaps.remaining()
            + self.kinds.remaining()
            + self.sites.remaining()
            + self.digests.remaining()
            + self.ints.remaining()
            + self.errnos.remaining()
            + self.lengths.remaining()
            + self.blobs.remaining();
        if leftover != 0 || self.records.len() != 0 {
            return Err("columns hold more entries than the events use".into());
        }
        Ok(())
    }
}

fn decode_record(
    r: record::Reader<'_>,
    depth: u32,
    raw: &Bytes,
    count: &mut Fields,
) -> Result<Record, String> {
    if depth >= super::MAX_RECORD_DEPTH {
        return Err("records nested too deep".into());
    }
    let e = |e: capnp::Error| e.to_string();
    let mut fields = Vec::new();
    let list = r.get_fields().map_err(e)?;
    // Like events, decoded fields outweigh encoded ones: bounded per chunk.
    count.count += list.len() as usize;
    if count.count > count.max {
        return Err(format!(
            "records hold over {} fields, more than the recorder writes in one chunk",
            count.max
        ));
    }
    for f in list {
        let name = f
            .get_name()
            .map_err(e)?
            .to_string()
            .map_err(|x| x.to_string())?;
        let value = match f.get_value().which().map_err(|x| x.to_string())? {
            field::value::Int(x) => FieldValue::Int(x),
            field::value::Uint(x) => FieldValue::Uint(x),
            field::value::Float(x) => FieldValue::Float(x),
            field::value::Text(t) => {
                FieldValue::Text(t.map_err(e)?.to_string().map_err(|x| x.to_string())?)
            }
            field::value::Bytes(d) => FieldValue::Bytes(raw.slice_ref(d.map_err(e)?)),
            field::value::Record(r) => {
                FieldValue::Record(decode_record(r.map_err(e)?, depth + 1, raw, count)?)
            }
        };
        fields.push(Field { name, value });
    }
    Ok(Record { fields })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One builder encodes many batches through its kept first segment: a batch after a
    /// larger one must not see the larger one's bytes (the segment is re-zeroed as far as it
    /// was used), and owned and borrowed records encode alike.
    #[test]
    fn batches_encoded_one_after_another_decode_alike() {
        let rec = |n: usize, fill: u8| Record {
            fields: vec![
                Field {
                    name: "json".into(),
                    value: FieldValue::Text(format!("{{\"n\":{n}}}")),
                },
                Field {
                    name: "b0".into(),
                    value: FieldValue::Bytes(vec![fill; n].into()),
                },
            ],
        };
        let mut batch = BatchBuilder::default();
        let mut out = Vec::new();
        for (round, count) in [(0u8, 40usize), (1, 3), (2, 25), (3, 1)] {
            let mut rb = RunBuilder::new(1);
            for i in 0..count {
                let r = rec(1000 * (count - i), round * 16 + i as u8);
                if i % 2 == 0 {
                    rb.push_record(i as u64, 7, 0, Some(i as u64), r);
                } else {
                    rb.push(i as u64, 7, 0, None, PayloadRef::Record(&r));
                }
            }
            batch.runs = vec![rb];
            batch.encode_into(&mut out);
            assert_eq!(out, batch.encode(), "round {round}");
            assert_eq!(out, canonical(&out), "round {round}");
            let back = DecodedBatch::decode(Bytes::copy_from_slice(&out), 0).unwrap();
            let events = &back.runs[0].events;
            assert_eq!(events.len(), count);
            for (i, e) in events.iter().enumerate() {
                let want = rec(1000 * (count - i), round * 16 + i as u8);
                assert_eq!(
                    e.payload,
                    Payload::Record { record: want },
                    "round {round} event {i}"
                );
                assert_eq!(e.digest, (i % 2 == 0).then_some(i as u64));
            }
        }
    }

    /// The message as capnp's own stream writer frames it (the in-place framing of
    /// `encode_with` must be byte for byte the same).
    fn canonical(msg: &[u8]) -> Vec<u8> {
        let segments = capnp::serialize::read_message(&mut &msg[..], Default::default())
            .unwrap()
            .into_segments();
        let mut out = Vec::new();
        capnp::serialize::write_message_segments(&mut out, &segments).unwrap();
        out
    }

    /// A batch whose size estimate is short (thread entries are not counted) outgrows the
    /// kept segment: the message then spans segments and is framed by capnp's writer; the
    /// next, small batch is framed in place again, alike.
    #[test]
    fn a_batch_larger_than_its_estimate_encodes_in_several_segments() {
        let mut batch = BatchBuilder {
            threads: (0..50_000).map(|i| (i, i + 1)).collect(),
            ..Default::default()
        };
        let mut rb = RunBuilder::new(1);
        rb.push(0, 7, 0, None, PayloadRef::Int(5));
        batch.runs = vec![rb];
        let segments = batch.encode_with(|m| {
            let r = capnp::serialize::read_message(&mut &m[..], Default::default()).unwrap();
            r.into_segments().len()
        });
        assert!(
            segments > 1,
            "the estimate was enough: the test does not test"
        );
        let out = batch.encode();
        assert_eq!(out, canonical(&out));
        let back = DecodedBatch::decode(Bytes::copy_from_slice(&out), 0).unwrap();
        assert_eq!(back.threads, batch.threads);
        batch.threads.clear();
        let small = batch.encode();
        assert_eq!(small, canonical(&small));
        assert_eq!(
            DecodedBatch::decode(Bytes::copy_from_slice(&small), 0)
                .unwrap()
                .runs[0]
                .events
                .len(),
            1
        );
    }

    #[test]
    fn delta_encoded_bytes_round_trip_and_shrink_a_timespec_stream() {
        // Two kinds interleaved, lengths that change, an ineligible part in between.
        let mut parts: Vec<(u32, Vec<u8>)> = Vec::new();
        for i in 0..2000u64 {
            let ts = [
                (i / 100).to_le_bytes(),
                (i * 37 % 1_000_000_000).to_le_bytes(),
            ]
            .concat();
            parts.push((1, ts));
            let len = [8usize, 16, 7, 16, 64, 72][i as usize % 6];
            parts.push((2, (0..len).map(|j| (i as usize * 7 + j) as u8).collect()));
        }
        let mut rb = RunBuilder::new(0);
        for (i, (k, d)) in parts.iter().enumerate() {
            rb.push(
                i as u64,
                *k,
                0,
                None,
                PayloadRef::Ret {
                    ret: 0,
                    errno: 0,
                    data: Some(d),
                },
            );
        }
        let raw: usize = parts.iter().map(|(_, d)| d.len()).sum();
        assert!(
            rb.blobs.len() < raw * 3 / 4,
            "blobs {} of {raw} raw bytes",
            rb.blobs.len()
        );
        let batch = BatchBuilder {
            strings: vec![(1, "a".into()), (2, "b".into())],
            threads: vec![(0, 0)],
            runs: vec![rb],
            marks: vec![],
            ..Default::default()
        };
        let back = DecodedBatch::decode(Bytes::copy_from_slice(&batch.encode()), 0).unwrap();
        for (e, (_, d)) in back.runs[0].events.iter().zip(&parts) {
            assert_eq!(
                e.payload,
                Payload::Ret {
                    ret: 0,
                    errno: 0,
                    data: Some(d.clone().into())
                }
            );
        }
    }

    #[test]
    fn every_payload_kind_round_trips() {
        let rec = Record {
            fields: vec![
                Field {
                    name: "method".into(),
                    value: FieldValue::Text("GET".into()),
                },
                Field {
                    name: "status".into(),
                    value: FieldValue::Int(200),
                },
                Field {
                    name: "body".into(),
                    value: FieldValue::Bytes(vec![0, 1, 2].into()),
                },
                Field {
                    name: "inner".into(),
                    value: FieldValue::Record(Record {
                        fields: vec![Field {
                            name: "x".into(),
                            value: FieldValue::Float(1.5),
                        }],
                    }),
                },
            ],
        };
        let payloads = vec![
            Payload::None,
            Payload::Int { value: -5 },
            Payload::Int { value: i64::MIN },
            Payload::Uint { value: u64::MAX },
            Payload::Float { value: 0.25 },
            Payload::Bytes {
                data: b"hello".to_vec().into(),
            },
            Payload::Ret {
                ret: -1,
                errno: 2,
                data: None,
            },
            Payload::Ret {
                ret: 16,
                errno: 0,
                data: Some(vec![9u8; 16].into()),
            },
            Payload::Record { record: rec },
        ];
        let mut rb = RunBuilder::new(3);
        for (i, p) in payloads.iter().enumerate() {
            rb.push(
                10 + 2 * i as u64,
                1 + (i as u32 % 2),
                i as u32 % 3,
                (i % 2 == 0).then_some(i as u64 * 77),
                PayloadRef::from_payload(p),
            );
        }
        let batch = BatchBuilder {
            strings: vec![(1, "a".into()), (2, "b".into())],
            threads: vec![(3, 0)],
            runs: vec![rb],
            marks: vec![(5, 99)],
            ..Default::default()
        };
        let bytes = batch.encode();
        let back = DecodedBatch::decode(Bytes::copy_from_slice(&bytes), 0).unwrap();
        assert_eq!(back.strings.len(), 2);
        assert_eq!(back.threads, vec![(3, 0)]);
        assert_eq!(back.marks, vec![(5, 99)]);
        let evs = &back.runs[0].events;
        assert_eq!(evs.len(), payloads.len());
        for (i, (e, p)) in evs.iter().zip(&payloads).enumerate() {
            assert_eq!(e.seq, 10 + 2 * i as u64);
            assert_eq!(e.thread, 3);
            assert_eq!(e.kind, 1 + (i as u32 % 2));
            assert_eq!(e.site, i as u32 % 3);
            assert_eq!(e.digest, (i % 2 == 0).then_some(i as u64 * 77));
            assert_eq!(&e.payload, p);
        }
    }
}
