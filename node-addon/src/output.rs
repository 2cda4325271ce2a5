//! Replay of the program's output: what it writes to stdout and stderr is compared with the
//! recording before it is let through (recording puts each write in the JS-side batch, see
//! `record_batch`).
//!
//! Crossing N-API per write would cost more than the write (a `console.log` line to a file is
//! ~2 us), so `lib/output.js` compares on its side, against recorded bytes it fetches a run
//! of events at a time ([`out_fetch`]), and crosses again only when that run is used up, at
//! the first difference and at exit. The core still sees every byte, in order, so its
//! reports name the right byte offset and line: the events fetched are held here, and handed
//! back ([`Replayer::unread_of`]) and compared by [`Core::output`] once the JS side verified
//! them (whole events, so the core never holds a half-compared event while more are held
//! here). A difference is given to the core with the write it was found in and the JS stack
//! of that write: the core finds the first differing byte again and reports it.
//!
//! [`Replayer::unread_of`]: replay_core::Replayer::unread_of
//! [`Core::output`]: replay_core::Core::output

use crate::{active, apply, err, guarded, js_stack, Active, Res};
use napi::bindgen_prelude::{Buffer, BufferSlice};
use napi::Env;
use napi_derive::napi;
use replay_core::session::{Session, Stream};
use replay_core::{Event, Payload};
use std::collections::VecDeque;
use std::sync::Mutex;

/// Events fetched per crossing at most (a run of `console.log` lines is one event each).
const RUN: usize = 4096;

/// One stream's events handed to the JS side and not yet compared by the core.
#[derive(Default)]
struct Held {
    events: VecDeque<Event>,
    /// Stream bytes the core compared: where the first held event starts.
    committed: u64,
}

static HELD: Mutex<[Held; 2]> = Mutex::new([
    Held {
        events: VecDeque::new(),
        committed: 0,
    },
    Held {
        events: VecDeque::new(),
        committed: 0,
    },
]);

fn bytes(e: &Event) -> &[u8] {
    match &e.payload {
        Payload::Bytes { data } => data,
        _ => &[],
    }
}

fn stream(s: u32) -> Res<Stream> {
    match s {
        0 => Ok(Stream::Stdout),
        1 => Ok(Stream::Stderr),
        _ => Err(err(format!("unknown output stream {s}"))),
    }
}

/// The core compares the held events that end at or before stream byte `verified` (the JS
/// side found them equal to what the program wrote): they go back to the replayer and the
/// core takes them again, seeing the same bytes. A stop found meanwhile (by another check)
/// is applied; the comparison itself cannot differ.
fn commit(a: &Active, s: Stream, h: &mut Held, verified: u64) {
    let Session::Replay(r) = &a.core.session else {
        return;
    };
    let mut whole = Vec::new();
    let mut end = h.committed;
    while let Some(e) = h.events.front() {
        let n = bytes(e).len() as u64;
        if end + n > verified {
            break;
        }
        end += n;
        whole.push(h.events.pop_front().unwrap_or_else(|| unreachable!()));
    }
    if whole.is_empty() {
        return;
    }
    let data: Vec<u8> = whole
        .iter()
        .flat_map(|e| bytes(e).iter().copied())
        .collect();
    r.unread_of(a.out_kinds[s as usize], whole);
    h.committed = end;
    apply(a.core.output(s, &data, &|| None));
}

/// Hands every held event back (in order) and returns the bytes of the first one that the
/// JS side already verified (up to `verified`): the core is then where the program is.
fn give_back(a: &Active, s: Stream, h: &mut Held, verified: u64) -> Vec<u8> {
    commit(a, s, h, verified);
    let Session::Replay(r) = &a.core.session else {
        return Vec::new();
    };
    let part = (verified.saturating_sub(h.committed)) as usize;
    let prefix = h
        .events
        .front()
        .map(|e| bytes(e)[..part.min(bytes(e).len())].to_vec())
        .unwrap_or_default();
    let events: Vec<Event> = h.events.drain(..).collect();
    r.unread_of(a.out_kinds[s as usize], events);
    prefix
}

/// Replay: the recorded bytes of stream `s` (0 stdout, 1 stderr) that follow those fetched
/// before, a run of events at a time; null when the recording holds no more (the next write
/// then goes to [`out_differ`], and the core reports what is there instead). `verified`: the
/// stream bytes the JS side found equal so far, which the core compares now.
#[napi]
pub fn out_fetch(s: u32, verified: f64) -> Res<Option<Buffer>> {
    guarded(|| {
        let st = stream(s)?;
        let Some(a) = active()? else { return Ok(None) };
        let Session::Replay(r) = &a.core.session else {
            return Err(err("out_fetch called while recording"));
        };
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        let h = &mut held[s as usize];
        commit(a, st, h, verified as u64);
        if a.core.stopped().is_some() || r.is_live() {
            return Ok(None);
        }
        let mut run = Vec::new();
        // Nothing left is not reported here: the program may write no more.
        if r.next_of_run(a.out_kinds[s as usize], RUN, &mut run)
            .is_err()
        {
            return Ok(None);
        }
        let data: Vec<u8> = run.iter().flat_map(|e| bytes(e).iter().copied()).collect();
        h.events.extend(run);
        Ok(Some(data.into()))
    })
}

/// Replay: the program writes `data` to stream `s`, and it differs from the recording (or
/// the JS side has no recorded bytes left for it); `verified` stream bytes before it were
/// found equal. The core compares and reports the difference with the write's JS stack.
/// Returns true when the write goes through (the core found it equal after all, or the
/// policy lets the program go on); false when replay stopped ([`crate::stop_code`]).
#[napi]
pub fn out_differ(env: &Env, s: u32, verified: f64, data: BufferSlice) -> Res<bool> {
    guarded(|| {
        let st = stream(s)?;
        let Some(a) = active()? else { return Ok(true) };
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = give_back(a, st, &mut held[s as usize], verified as u64);
        drop(held);
        all.extend_from_slice(&data);
        apply(a.core.output(st, &all, &|| js_stack(env)));
        Ok(crate::stop_code() == 0)
    })
}

/// Replay, at exit: stream `s`'s JS-side comparison ends after `verified` bytes; everything
/// fetched beyond goes back, so that the core's end check reports recorded output the program
/// did not write, at its byte offset.
#[napi]
pub fn out_end(s: u32, verified: f64) -> Res<()> {
    guarded(|| {
        let st = stream(s)?;
        let Some(a) = active()? else { return Ok(()) };
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        let part = give_back(a, st, &mut held[s as usize], verified as u64);
        drop(held);
        if !part.is_empty() {
            apply(a.core.output(st, &part, &|| None));
        }
        Ok(())
    })
}
