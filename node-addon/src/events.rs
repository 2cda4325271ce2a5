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

/// The kind id of code `code`, for the drain (no napi error off the JS thread).
pub(crate) fn kind_of(code: u32) -> Result<u32, String> {
    kinds()
        .ids
        .get(code as usize)
        .copied()
        .ok_or_else(|| format!("unknown event kind code {code}"))
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
        if !crate::on_main(a) {
            // A worker thread: its own logical thread.
            let bytes;
            let payload = if a.out_kinds.contains(&kind) {
                bytes = bufs
                    .iter()
                    .flat_map(|b| b.iter().copied())
                    .collect::<Vec<u8>>();
                replay_core::PayloadRef::Bytes(&bytes)
            } else {
                let record = value_record(json, bufs.iter().map(|b| Bytes::copy_from_slice(b)));
                rec.record_owned(kind, 0, input_digest(&input), record);
                return Ok(());
            };
            a.core.record(kind, 0, None, payload);
            return Ok(());
        }
        let g = crate::drain::lock();
        let Some(app) = g.as_ref().and_then(|st| st.appender.as_ref()) else {
            return Ok(());
        };
        if a.out_kinds.contains(&kind) {
            // A large write to stdout/stderr (index.js): its bytes, as the core stores output.
            let bytes: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            app.record(kind, 0, None, replay_core::PayloadRef::Bytes(&bytes));
            return Ok(());
        }
        let record = value_record(json, bufs.iter().map(|b| Bytes::copy_from_slice(b)));
        // Handed over, not copied again: a body can be large.
        let seq = app
            .seq_counter()
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        app.record_owned_at(seq, kind, 0, input_digest(&input), record);
        Ok(())
    })
}

/// The `Record` of a value: its JSON text and binary parts (see the module comment).
pub(crate) fn value_record(json: String, bufs: impl ExactSizeIterator<Item = Bytes>) -> Record {
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

/// Replay: whether this thread's recording holds another event of kind `code` (lib/events.js
/// asks before it takes a completion: a recording may end with operations still pending).
#[napi]
pub fn ev_has_more(code: u32) -> Res<bool> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(false) };
        Ok(a.core.replay_has_more(kind_id(code)?))
    })
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
