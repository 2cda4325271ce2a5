//! Replay of the program's output: what it writes to stdout and stderr is compared with the
//! recording before it is let through (recording puts each write in the JS-side batch, see
//! `record_batch`).
//!
//! Crossing N-API per write would cost more than the write (a `console.log` line to a file is
//! a few microseconds, the 5 % budget a few hundred nanoseconds), so `lib/output.js` compares
//! on its side against recorded bytes it fetches a run of events at a time ([`out_fetch`]),
//! and crosses again only when a run is used up, at the first difference and at exit. The
//! core still sees every byte, in order ([`Core::output`]): the bytes the JS side found equal
//! are handed to it at the next crossing, so its state (byte offset, line) is the program's
//! and it reports the first difference itself, with the JS stack of the write
//! ([`out_differ`]), and at the end whatever recorded output was not written.
//!
//! The look-ahead bytes come from a reader of the log of this module's own: the core takes
//! recorded writes out of its queues only as it compares them, with no way to look at the
//! next ones or give them back, so the bytes the JS side compares against are read a second
//! time here (the output events of the calling logical thread, in recorded order). Reading
//! them twice costs little next to the writes (a log decodes at tens of millions of events a
//! second).
//!
//! [`Core::output`]: replay_core::Core::output

use crate::{active, apply, err, guarded, js_stack, Active, Res};
use napi::bindgen_prelude::{Buffer, BufferSlice};
use napi::Env;
use napi_derive::napi;
use replay_core::session::{Session, Stream, OUTPUT_KINDS};
use replay_core::{LogReader, Payload};
use std::collections::VecDeque;
use std::sync::Mutex;

/// Recorded writes handed to the JS side per crossing at most.
const RUN: usize = 4096;

/// Bytes handed to the JS side per crossing at most (a run of large writes).
const RUN_BYTES: usize = 1 << 20;

/// The look-ahead reader and, per stream, the bytes handed to the JS side.
#[derive(Default)]
struct Ahead {
    /// The log, read for its output events; `None` before the first fetch and once it ended
    /// (or could not be read: then the JS side gets no bytes and every write goes to the
    /// core, which compares it).
    reader: Option<LogReader>,
    opened: bool,
    /// The logical thread whose writes these are (the calling thread's).
    thread: u32,
    /// Recorded writes read and not yet handed to the JS side, per stream.
    queued: [VecDeque<Vec<u8>>; 2],
    /// Per stream: bytes handed to the JS side that the core has not compared yet, and the
    /// stream offset where they start.
    sent: [Vec<u8>; 2],
    committed: [u64; 2],
}

static AHEAD: Mutex<Option<Ahead>> = Mutex::new(None);

fn stream(s: u32) -> Res<Stream> {
    match s {
        0 => Ok(Stream::Stdout),
        1 => Ok(Stream::Stderr),
        _ => Err(err(format!("unknown output stream {s}"))),
    }
}

impl Ahead {
    /// The core compares the bytes up to stream offset `verified` that the JS side found
    /// equal to what the program wrote: the same bytes, so no difference; a stop found
    /// meanwhile by another check is applied.
    fn commit(&mut self, a: &Active, s: Stream, verified: u64) {
        let i = s as usize;
        let n = (verified.saturating_sub(self.committed[i]) as usize).min(self.sent[i].len());
        if n == 0 {
            return;
        }
        apply(a.core.output(s, &self.sent[i][..n], &|| None));
        self.sent[i].drain(..n);
        self.committed[i] += n as u64;
    }

    /// Reads the log on until stream `i` has a recorded write queued; false at its end.
    fn read_more(&mut self, a: &Active, i: usize) -> bool {
        if !self.opened {
            self.opened = true;
            if let Session::Replay(r) = &a.core.session {
                self.thread = r.caller().0;
            }
            self.reader = LogReader::open(&a.core.log).ok();
        }
        // A chunk at a time, in file order: one thread's events are in recorded order there
        // (only the JS main thread records), so no reordering across chunks is needed.
        while self.queued[i].is_empty() {
            let Some(reader) = self.reader.as_mut() else {
                return false;
            };
            let Ok(Some(batch)) = reader.next_batch() else {
                self.reader = None;
                return false;
            };
            let ids = OUTPUT_KINDS.map(|k| reader.strings().id(k));
            for run in batch.runs.into_iter().filter(|r| r.thread == self.thread) {
                for e in run.events {
                    let Some(k) = ids.iter().position(|id| *id == Some(e.kind)) else {
                        continue;
                    };
                    if let Payload::Bytes { data } = e.payload {
                        self.queued[k].push_back(data);
                    }
                }
            }
        }
        true
    }
}

/// Replay: the recorded bytes of stream `s` (0 stdout, 1 stderr) that follow those fetched
/// before, a run of writes at a time; null when the recording holds no more (the next write
/// then goes to [`out_differ`], and the core says what is there instead). `verified`: the
/// stream bytes the JS side found equal so far, which the core compares now.
#[napi]
pub fn out_fetch(s: u32, verified: f64) -> Res<Option<Buffer>> {
    guarded(|| {
        let st = stream(s)?;
        let Some(a) = active()? else { return Ok(None) };
        let Session::Replay(r) = &a.core.session else {
            return Err(err("out_fetch called while recording"));
        };
        let mut ahead = AHEAD.lock().unwrap_or_else(|p| p.into_inner());
        let ah = ahead.get_or_insert_with(Ahead::default);
        ah.commit(a, st, verified as u64);
        if a.core.stopped().is_some() || r.is_live() {
            return Ok(None);
        }
        let i = s as usize;
        let mut data = Vec::new();
        for _ in 0..RUN {
            if data.len() >= RUN_BYTES || !ah.read_more(a, i) {
                break;
            }
            data.extend(ah.queued[i].pop_front().unwrap_or_default());
        }
        if data.is_empty() {
            return Ok(None);
        }
        ah.sent[i].extend_from_slice(&data);
        Ok(Some(data.into()))
    })
}

/// Replay: the program writes `data` to stream `s`, and it differs from the recording (or
/// the JS side has no recorded bytes left for it); `verified` stream bytes before it were
/// found equal. The core compares the write and reports the difference with its JS stack.
/// Returns true when the write goes through (the policy lets the program go on), false when
/// replay stopped ([`crate::stop_code`]).
#[napi]
pub fn out_differ(env: &Env, s: u32, verified: f64, data: BufferSlice) -> Res<bool> {
    guarded(|| {
        let st = stream(s)?;
        let Some(a) = active()? else { return Ok(true) };
        {
            let mut ahead = AHEAD.lock().unwrap_or_else(|p| p.into_inner());
            let ah = ahead.get_or_insert_with(Ahead::default);
            ah.commit(a, st, verified as u64);
            // The JS side compares this stream no more (nor does the core, after a report).
            ah.sent[s as usize].clear();
            ah.queued[s as usize].clear();
        }
        apply(a.core.output(st, &data, &|| js_stack(env)));
        Ok(crate::stop_code() == 0)
    })
}

/// Replay, at exit: stream `s`'s JS-side comparison ends after `verified` bytes, which the
/// core compares now; its end check then reports recorded output the program did not write.
#[napi]
pub fn out_end(s: u32, verified: f64) -> Res<()> {
    guarded(|| {
        let st = stream(s)?;
        let Some(a) = active()? else { return Ok(()) };
        let mut ahead = AHEAD.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ah) = ahead.as_mut() {
            ah.commit(a, st, verified as u64);
        }
        Ok(())
    })
}
