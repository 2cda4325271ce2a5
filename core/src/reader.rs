//! Streaming log reader: one chunk in memory at a time, every length and count bounded,
//! every failure an error naming its byte offset. It never panics on any input.

use crate::error::LogError;
use crate::event::Event;
use crate::format::frame::{FrameHeader, FrameType, CODEC_ZSTD, FRAME_HEADER_LEN};
use crate::format::*;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

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
    fn frame(&mut self) -> Result<Option<(FrameHeader, u64, Vec<u8>)>, LogError> {
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
        let mut stored = vec![0u8; fh.stored_len as usize];
        let crc_keep = self.crc;
        if let Fill::Partial(n) = self.fill(&mut stored)? {
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
        if crc32c::crc32c(&stored) != fh.payload_crc {
            return Err(LogError::Corrupt {
                offset: at,
                why: "frame payload checksum mismatch".into(),
            });
        }
        let raw = if fh.codec == CODEC_ZSTD {
            let mut out = Vec::with_capacity(fh.raw_len as usize);
            let mut dec =
                zstd::stream::read::Decoder::new(&stored[..]).map_err(|e| LogError::Corrupt {
                    offset: at,
                    why: format!("bad zstd stream: {e}"),
                })?;
            // Bound the output by the declared length (+1 to detect a lie) so a crafted frame
            // cannot expand without limit.
            let got = (&mut dec)
                .take(u64::from(fh.raw_len) + 1)
                .read_to_end(&mut out)
                .map_err(|e| LogError::Corrupt {
                    offset: at,
                    why: format!("bad zstd stream: {e}"),
                })?;
            if got != fh.raw_len as usize {
                return Err(LogError::Corrupt {
                    offset: at,
                    why: format!("chunk expands to {got} bytes, header says {}", fh.raw_len),
                });
            }
            out
        } else {
            stored
        };
        Ok(Some((fh, at, raw)))
    }

    /// The next chunk of events, or `Ok(None)` at the end of the log (see [`Self::end`]).
    /// After an error the reader stays failed and returns `Ok(None)`.
    pub fn next_batch(&mut self) -> Result<Option<DecodedBatch>, LogError> {
        if self.end.is_some() || self.failed {
            return Ok(None);
        }
        let r = self.next_batch_inner();
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

    fn next_batch_inner(&mut self) -> Result<Option<DecodedBatch>, LogError> {
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
                let b = DecodedBatch::decode(&raw, at)?;
                for (id, text) in &b.strings {
                    self.strings.add(*id, text.clone(), at)?;
                }
                for (id, name) in &b.threads {
                    if *name as usize > self.strings.len() {
                        return Err(LogError::Corrupt {
                            offset: at,
                            why: format!("thread {id} names unknown string {name}"),
                        });
                    }
                    self.threads.insert(*id, *name);
                }
                let nstr = self.strings.len() as u32;
                for run in &b.runs {
                    if !self.threads.contains_key(&run.thread) {
                        return Err(LogError::Corrupt {
                            offset: at,
                            why: format!("events of undeclared thread {}", run.thread),
                        });
                    }
                    for e in &run.events {
                        if e.kind == 0 || e.kind > nstr || e.site > nstr {
                            return Err(LogError::Corrupt {
                                offset: at,
                                why: format!("event #{} names an unknown string", e.seq),
                            });
                        }
                    }
                    self.events += run.events.len() as u64;
                    if let Some(last) = run.events.last() {
                        self.max_seq = Some(self.max_seq.map_or(last.seq, |m| m.max(last.seq)));
                    }
                }
                self.chunks += 1;
                Ok(Some(b))
            }
        }
    }

    /// Highest sequence number seen so far.
    pub fn max_seq(&self) -> Option<u64> {
        self.max_seq
    }
}

/// Events of a log in global sequence order.
///
/// The file is only nearly ordered across threads (see the schema), so this keeps a small
/// reorder buffer: sequence numbers are dense, so the next one to emit is always known.
/// A number that never arrives (lost when a recorder crashed) is skipped once the buffer
/// holds more than `window` events or the log ends; `gaps` counts such numbers.
pub struct Ordered<R: Read = BufReader<File>> {
    pub reader: LogReader<R>,
    pending: BTreeMap<u64, Event>,
    next: u64,
    done: bool,
    window: usize,
    pub gaps: u64,
    error: Option<LogError>,
}

impl<R: Read> Ordered<R> {
    pub fn new(reader: LogReader<R>) -> Self {
        Ordered {
            reader,
            pending: BTreeMap::new(),
            next: 0,
            done: false,
            window: 1 << 22,
            gaps: 0,
            error: None,
        }
    }

    /// The error that stopped reading, if any (events before it were all returned).
    pub fn take_error(&mut self) -> Option<LogError> {
        self.error.take()
    }

    pub fn error(&self) -> Option<&LogError> {
        self.error.as_ref()
    }
}

impl<R: Read> Iterator for Ordered<R> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(e) = self.pending.remove(&self.next) {
                self.next = e.seq + 1;
                return Some(e);
            }
            if self.done || self.pending.len() > self.window {
                let (&seq, _) = self.pending.first_key_value()?;
                self.gaps += seq - self.next;
                self.next = seq;
                continue;
            }
            match self.reader.next_batch() {
                Ok(Some(b)) => {
                    for run in b.runs {
                        for e in run.events {
                            if e.seq >= self.next {
                                self.pending.insert(e.seq, e);
                            }
                        }
                    }
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.error = Some(e);
                    self.done = true;
                }
            }
        }
    }
}
