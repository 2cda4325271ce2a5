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
//! The look-ahead bytes come from the core ([`Core::output_ahead`]), which keeps the
//! thread's recorded writes; the bytes the JS side found equal are counted as compared with
//! [`Core::output_verified`], without a second comparison.
//!
//! [`Core::output`]: replay_core::Core::output
//! [`Core::output_ahead`]: replay_core::Core::output_ahead
//! [`Core::output_verified`]: replay_core::Core::output_verified

use crate::{active, apply, err, guarded, js_stack, Active, Res};
use napi::bindgen_prelude::{Buffer, BufferSlice};
use napi::Env;
use napi_derive::napi;
use replay_core::session::{Session, Stream};
use std::sync::Mutex;

/// Bytes handed to the JS side per crossing at most (a run of large writes).
const RUN_BYTES: usize = 1 << 20;

/// Per stream: the bytes handed to the JS side so far, and how many of them the core counts
/// as verified.
#[derive(Default)]
struct Ahead {
    sent: [u64; 2],
    committed: [u64; 2],
}

static AHEAD: Mutex<Ahead> = Mutex::new(Ahead {
    sent: [0; 2],
    committed: [0; 2],
});

fn stream(s: u32) -> Res<Stream> {
    match s {
        0 => Ok(Stream::Stdout),
        1 => Ok(Stream::Stderr),
        _ => Err(err(format!("unknown output stream {s}"))),
    }
}

impl Ahead {
    /// The JS side found the stream's bytes up to offset `verified` equal to the recording:
    /// the core counts them as compared.
    fn commit(&mut self, a: &Active, s: Stream, verified: u64) {
        let i = s as usize;
        let n = verified
            .saturating_sub(self.committed[i])
            .min(self.sent[i] - self.committed[i]);
        if n == 0 {
            return;
        }
        a.core.output_verified(s, n as usize);
        self.committed[i] += n;
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
        let mut ah = AHEAD.lock().unwrap_or_else(|p| p.into_inner());
        ah.commit(a, st, verified as u64);
        if a.core.stopped().is_some() || r.is_live() {
            return Ok(None);
        }
        let i = s as usize;
        let from = (ah.sent[i] - ah.committed[i]) as usize;
        let data = a.core.output_ahead(st, from, RUN_BYTES);
        if data.is_empty() {
            return Ok(None);
        }
        ah.sent[i] += data.len() as u64;
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
            let mut ah = AHEAD.lock().unwrap_or_else(|p| p.into_inner());
            ah.commit(a, st, verified as u64);
            // The JS side compares this stream no more (nor does the core, after a report).
            let i = s as usize;
            ah.sent[i] = ah.committed[i];
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
        AHEAD
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .commit(a, st, verified as u64);
        Ok(())
    })
}
