//! Structured events for the hooks beyond the clocks (`lib/events.js` drives these): file
//! reads, random bytes, network exchanges and async completions.
//!
//! A hook names its kind once ([`ev_kind`], e.g. `node.fs.readFileSync`) and then records
//! or replays values. A value travels as JSON text plus the binary parts it contains
//! (file contents, socket chunks) as separate buffers, stored as one `Record` payload with a
//! `json` text field and `b0`, `b1`, ... byte fields, so bytes are stored as bytes (no
//! base64) and `replay dump` shows both. The call's identity (a path, a method and URL) is
//! its `input`: its digest is the event's input digest, checked in replay, so a program that
//! asks for another file or URL than recorded diverges at that call.
//!
//! Replay takes each kind's events in recorded order (the core's per-kind replay,
//! `Replayer::next_of`); divergences are reported by the core with the JS stack, and its
//! verdict is applied by [`crate::apply`].

use crate::{active, apply, err, guarded, js_stack, Active, Res};
use napi::bindgen_prelude::{Buffer, BufferSlice, Either};
use napi::Env;
use napi_derive::napi;
use replay_core::session::Session;
use replay_core::{digest, Bytes, Event, Field, FieldValue, Payload, Record};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Kinds named by the JS side: code -> live string id, plus the last event each code was
/// served in replay (what a mismatch the JS side finds is reported against).
struct Kinds {
    ids: Vec<u32>,
    names: Vec<String>,
    last: BTreeMap<u32, Event>,
}

static KINDS: Mutex<Kinds> = Mutex::new(Kinds {
    ids: Vec::new(),
    names: Vec::new(),
    last: BTreeMap::new(),
});

fn kinds() -> std::sync::MutexGuard<'static, Kinds> {
    KINDS.lock().unwrap_or_else(|p| p.into_inner())
}

fn kind_id(code: u32) -> Res<u32> {
    kinds()
        .ids
        .get(code as usize)
        .copied()
        .ok_or_else(|| err(format!("unknown event kind code {code}")))
}

fn input_digest(input: &Option<String>) -> Option<u64> {
    input.as_ref().map(|i| digest(&[i.as_bytes()]))
}

/// A replayed value: the JSON text and the binary parts it refers to.
#[napi(object)]
pub struct EvValue {
    pub json: String,
    pub bufs: Vec<Buffer>,
}

/// The code of event kind `name` (the same name always gets the same code).
#[napi]
pub fn ev_kind(name: String) -> Res<u32> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(0) };
        let mut k = kinds();
        if let Some(i) = k.names.iter().position(|n| *n == name) {
            return Ok(i as u32);
        }
        let id = a.core.intern(&name);
        k.ids.push(id);
        k.names.push(name);
        Ok(k.ids.len() as u32 - 1)
    })
}

/// Records one event of kind `code`: `input` identifies the call (digested), `json` and
/// `bufs` are its value.
#[napi]
pub fn ev_record(
    code: u32,
    input: Option<String>,
    json: String,
    bufs: Vec<BufferSlice>,
) -> Res<()> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(()) };
        let Session::Record(rec) = &a.core.session else {
            return Err(err("ev_record called while replaying"));
        };
        let kind = kind_id(code)?;
        if a.out_kinds.contains(&kind) {
            // A large write to stdout/stderr (index.js): its bytes, as the core stores output.
            let bytes: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            a.core
                .record(kind, 0, None, replay_core::PayloadRef::Bytes(&bytes));
            return Ok(());
        }
        let record = value_record(json, bufs.iter().map(|b| Bytes::copy_from_slice(b)));
        // Handed over, not copied again: a body can be large.
        rec.record_owned(kind, 0, input_digest(&input), record);
        Ok(())
    })
}

/// The `Record` of a value: its JSON text and binary parts (see the module comment).
fn value_record(json: String, bufs: impl ExactSizeIterator<Item = Bytes>) -> Record {
    let mut fields = Vec::with_capacity(1 + bufs.len());
    fields.push(Field {
        name: "json".into(),
        value: FieldValue::Text(json),
    });
    for (i, b) in bufs.enumerate() {
        fields.push(Field {
            name: format!("b{i}"),
            value: FieldValue::Bytes(b),
        });
    }
    Record { fields }
}

/// A queued event's value: a hook's (JSON text and parts), or the bytes of a write to
/// stdout/stderr (an event of an output kind, whose one part is what was written).
pub(crate) enum Value {
    Record(Record),
    Bytes(Bytes),
}

/// Events of [`ev_record`]'s shape that the JS side queued for one [`crate::record_batch`]
/// crossing (a crossing with its argument conversions cost more than the rest of recording
/// a socket chunk): event i's JSON text, and in `lens` its input's length in UTF-16 units
/// plus one (0: no input), its number of binary parts and their lengths; the inputs one
/// after another in `inputs`, each followed by a line feed, the parts in `data`.
/// One string of inputs rather than an array of them: converting each element cost more
/// than the rest of the crossing. The line feeds keep a surrogate at one input's end from
/// pairing with the next input's start, so each input's UTF-8 bytes are those it has alone.
pub(crate) struct Queued<'a> {
    pub(crate) inputs: &'a str,
    pub(crate) jsons: Vec<&'a str>,
    pub(crate) lens: &'a [u32],
    pub(crate) data: &'a [u8],
    /// `data` as a shared view ([`crate::stage`]): the parts are slices of it, not copies.
    pub(crate) shared: Option<Bytes>,
}

impl Queued<'_> {
    /// Builds each queued event in order: `f(kind_id, digest, value)`; events of the
    /// `output` kinds are their bytes. Checks the parts against `lens` and `data` before
    /// anything is recorded, so a malformed queue records nothing of itself.
    pub(crate) fn each(
        self,
        codes: impl Iterator<Item = u32>,
        output: &[u32; 2],
        mut f: impl FnMut(u32, Option<u64>, Value),
    ) -> Res<()> {
        let codes: Vec<u32> = codes.collect();
        if codes.len() != self.jsons.len() {
            return Err(err(format!(
                "batch marks {} queued events, the queue holds {} values",
                codes.len(),
                self.jsons.len()
            )));
        }
        // Checked whole before anything is recorded: a bad queue records none of it.
        let (inputs, off) = cut(self.lens, self.inputs, codes.len()).map_err(err)?;
        if off > self.data.len() {
            return Err(err(format!(
                "queued parts need {off} bytes, the queue holds {}",
                self.data.len()
            )));
        }
        let kinds: Vec<u32> = codes.iter().map(|&c| kind_id(c)).collect::<Res<_>>()?;
        let (mut at, mut off) = (0usize, 0usize);
        for ((kind, input), json) in kinds.into_iter().zip(inputs).zip(self.jsons) {
            let n = self.lens[at + 1] as usize;
            let parts = &self.lens[at + 2..at + 2 + n];
            at += 2 + n;
            let mut bufs = Vec::with_capacity(n);
            for &l in parts {
                let r = off..off + l as usize;
                bufs.push(match &self.shared {
                    Some(all) => all.slice(r),
                    None => Bytes::copy_from_slice(&self.data[r]),
                });
                off += l as usize;
            }
            if output.contains(&kind) {
                if let [b] = &bufs[..] {
                    f(kind, None, Value::Bytes(b.clone()));
                    continue;
                }
            }
            let record = value_record(json.to_string(), bufs.into_iter());
            f(
                kind,
                input.map(|i| digest(&[i.as_bytes()])),
                Value::Record(record),
            );
        }
        Ok(())
    }
}

/// The inputs of `n` queued events (see [`Queued`]) and the bytes their parts take, or what
/// is wrong with the queue. Without napi types: the unit tests cannot link them.
fn cut<'a>(
    lens: &[u32],
    mut rest: &'a str,
    n: usize,
) -> Result<(Vec<Option<&'a str>>, usize), String> {
    let (mut at, mut off) = (0usize, 0usize);
    let mut inputs = Vec::with_capacity(n);
    for _ in 0..n {
        let head = lens.get(at..at + 2).ok_or("queued parts end early")?;
        let (units, parts) = (head[0] as usize, head[1] as usize);
        inputs.push(if units == 0 {
            None
        } else {
            let len = utf8_len(rest, units - 1)
                .filter(|&l| rest.as_bytes().get(l) == Some(&b'\n'))
                .ok_or("queued inputs end early")?;
            let input = &rest[..len];
            rest = &rest[len + 1..];
            Some(input)
        });
        let parts = lens
            .get(at + 2..at + 2 + parts)
            .ok_or("queued parts end early")?;
        off += parts.iter().map(|&l| l as usize).sum::<usize>();
        at += 2 + parts.len();
    }
    Ok((inputs, off))
}

/// The byte length of the first `units` UTF-16 code units of `s` (None if `s` is shorter).
/// Each char is as many units in `s` as it was in the JS string: a lone surrogate became
/// U+FFFD, one unit either way.
fn utf8_len(s: &str, units: usize) -> Option<usize> {
    let b = s.as_bytes();
    // Inputs are mostly ASCII, where units are bytes.
    if b.get(..units).is_some_and(|p| p.is_ascii()) {
        return Some(units);
    }
    let mut left = units;
    for (i, c) in s.char_indices() {
        if left == 0 {
            return Some(i);
        }
        left = left.checked_sub(c.len_utf16())?;
    }
    (left == 0).then_some(s.len())
}

/// Replays the next event of kind `code`, checked against `input`, through the core (which
/// reports a divergence with the JS stack and gives its verdict). Returns its value, or null
/// when the call is not replayed: replay went live, or stopped ([`crate::stop_code`]).
#[napi]
pub fn ev_replay(
    env: &Env,
    code: u32,
    input: Option<String>,
) -> Res<Option<Either<String, EvValue>>> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(None) };
        let Session::Replay(_) = &a.core.session else {
            return Err(err("ev_replay called while recording"));
        };
        let kind = kind_id(code)?;
        let verdict = a
            .core
            .replay(kind, 0, input_digest(&input), &|| js_stack(env));
        let Some(e) = apply(verdict) else {
            return Ok(None);
        };
        let mut k = kinds();
        let v = value(&e, &k.names[code as usize])?;
        k.last.insert(code, e);
        // A value without binary parts (most: fs metadata, socket ends) as its bare JSON
        // text: making the object and its empty array cost ~0.4 us of a ~1.2 us crossing
        // (replayed existsSync 4.9 -> 4.5 us, 4 alternations).
        Ok(Some(if v.bufs.is_empty() {
            Either::A(v.json)
        } else {
            Either::B(v)
        }))
    })
}

/// A mismatch the JS side found itself in the value last served for `code` (an async
/// completion recorded for another operation than the ones the program waits for, found by
/// lib/events.js's stall timer): `input` is what the program asked for instead, `context`
/// says how it differs (added to the report with the stack). Reported through the core;
/// returns the recorded value the program gets instead (warn-continue), or null (live, or
/// stopped: [`crate::stop_code`]).
#[napi]
pub fn ev_mismatch(
    env: &Env,
    code: u32,
    input: Option<String>,
    context: String,
) -> Res<Option<EvValue>> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(None) };
        let Session::Replay(r) = &a.core.session else {
            return Err(err("ev_mismatch called while recording"));
        };
        let kind = kind_id(code)?;
        let Some(expected) = kinds().last.get(&code).cloned() else {
            return Err(err(format!(
                "ev_mismatch for kind code {code}, which served no event"
            )));
        };
        let d = r.mismatch(expected, kind, 0, input_digest(&input));
        let context = match js_stack(env) {
            Some(s) => format!("{context}\n{s}"),
            None => context,
        };
        finish_report(a, code, d.with_context(context))
    })
}

fn finish_report(a: &Active, code: u32, d: Box<replay_core::Divergence>) -> Res<Option<EvValue>> {
    match apply(a.core.diverged(d)) {
        Some(e) => {
            let name = kinds()
                .names
                .get(code as usize)
                .cloned()
                .unwrap_or_default();
            Ok(Some(value(&e, &name)?))
        }
        None => Ok(None),
    }
}

/// The session's timeout in milliseconds (how long a replayed completion may wait for the
/// program to start the operation it belongs to).
#[napi]
pub fn ev_timeout_ms() -> Res<f64> {
    guarded(|| {
        Ok(match active()? {
            Some(a) => a.core.options.timeout.as_secs_f64() * 1000.0,
            None => 0.0,
        })
    })
}

/// The value an event recorded by [`ev_record`] holds.
fn value(e: &Event, kind: &str) -> Res<EvValue> {
    let bad = || {
        err(format!(
            "event #{} ({kind}) holds {}, not a value recorded by replay-node",
            e.seq,
            e.payload.summary()
        ))
    };
    let Payload::Record { record } = &e.payload else {
        return Err(bad());
    };
    let mut json = None;
    let mut bufs = Vec::new();
    for f in &record.fields {
        match (&f.name[..], &f.value) {
            ("json", FieldValue::Text(t)) => json = Some(t.clone()),
            (n, FieldValue::Bytes(b)) if n.starts_with('b') => bufs.push(b.to_vec().into()),
            _ => return Err(bad()),
        }
    }
    Ok(EvValue {
        json: json.ok_or_else(bad)?,
        bufs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_len_counts_utf16_units() {
        assert_eq!(utf8_len("GET /\n", 5), Some(5));
        // é is one unit and two bytes, 😀 two units and four bytes, U+FFFD (a lone
        // surrogate's stand-in) one unit and three bytes.
        assert_eq!(utf8_len("é😀\u{fffd}x\n", 5), Some(2 + 4 + 3 + 1));
        assert_eq!(utf8_len("ab", 3), None);
        assert_eq!(utf8_len("", 0), Some(0));
    }

    /// The inputs cut from the joined string are those the JS side queued (so each is
    /// digested as replay digests it alone), and a queue that ends early is an error.
    #[test]
    fn queued_inputs_are_cut_by_their_lengths() {
        let first = "net a é😀\r\nx";
        let ins = format!("{first}\nb\n");
        // UTF-16 lengths plus one: the first input, none, "b" with a part of 3 bytes.
        let units = first.encode_utf16().count() as u32 + 1;
        let lens = [units, 0, 0, 0, 2, 1, 3];
        let (inputs, off) = cut(&lens, &ins, 3).unwrap();
        assert_eq!(inputs, vec![Some(first), None, Some("b")]);
        assert_eq!(off, 3);
        assert_eq!(
            cut(&[7, 0], "net a", 1).unwrap_err(),
            "queued inputs end early"
        );
        assert_eq!(
            cut(&[0, 2, 1], "", 1).unwrap_err(),
            "queued parts end early"
        );
        assert_eq!(cut(&[0], "", 1).unwrap_err(), "queued parts end early");
    }
}
