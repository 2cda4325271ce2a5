//! SIGINT, SIGTERM and SIGHUP as inputs: when the JVM got one is part of the recording. A
//! server stopped with Ctrl-C or `kill` (jwebserver, an `HttpServer` program) is the usual
//! way a recording of one ends; without its signal, the replay waited for ever.
//!
//! Record: the JVM runs a signal's handler (the shutdown hooks, or the program's own
//! `sun.misc.Signal` handler) on a new thread named `SIGTERM handler`; its ThreadStart is a
//! side record (`side.java.lang.Signal`, `core::session::SIDE_KINDS`) holding the signal's
//! number, numbered where the signal fell among the program's events.
//! Replay: a thread of the agent takes those records as the replay's reader meets them
//! (`Core::side_events_read`) and raises each signal on the process once every event before
//! it was replayed (the strict cursor passed it); the JVM then runs the same handler, whose
//! events replay in turn.

use crate::jvmti::{jthread, RawEnv};
use crate::{agent, guarded};
use jni::objects::{JObject, JString};
use jni::sys::JNIEnv as RawJniEnv;
use jni::JNIEnv;
use replay_core::guard::HookGuard;
use replay_core::session::{Session, SIDE_KINDS};
use replay_core::{Appender, FieldValue, Payload, Record};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Duration;

const SIGNALS: [(&str, i32); 3] = [("SIGINT", 2), ("SIGTERM", 15), ("SIGHUP", 1)];

static SIDE: OnceLock<Option<Appender>> = OnceLock::new();

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn getpid() -> i32;
}

/// ThreadStart (record only): a `SIG... handler` thread starting is the signal's arrival.
pub unsafe extern "C" fn on_thread_start(_jvmti: RawEnv, jni: *mut RawJniEnv, thread: jthread) {
    guarded("ThreadStart", (), || {
        let Some(a) = agent() else { return };
        if !matches!(a.core.session, Session::Record(_)) || thread.is_null() {
            return;
        }
        // What getName() runs here is not the program's.
        let Some(_inside) = HookGuard::enter() else {
            return;
        };
        // SAFETY: the JNIEnv of the starting thread, which the JVM passed to the callback.
        let Ok(mut env) = (unsafe { JNIEnv::from_raw(jni) }) else {
            return;
        };
        let t = unsafe { JObject::from_raw(thread as jni::sys::jobject) };
        let name = env
            .call_method(&t, "getName", "()Ljava/lang/String;", &[])
            .and_then(|v| v.l());
        let name: String = match name {
            Ok(n) if !n.is_null() => env
                .get_string(&JString::from(n))
                .map(Into::into)
                .unwrap_or_default(),
            _ => {
                crate::clear_exception(&mut env);
                return;
            }
        };
        let Some(&(_, number)) = SIGNALS
            .iter()
            .find(|(sig, _)| name.strip_suffix(" handler") == Some(sig))
        else {
            return;
        };
        let Some(app) = SIDE
            .get_or_init(|| a.core.side_appender("[signals]"))
            .as_ref()
        else {
            return;
        };
        let k = a.core.intern(SIDE_KINDS[2]);
        let seq = app.seq_counter().fetch_add(1, Ordering::Relaxed);
        let record = Record {
            fields: vec![replay_core::Field {
                name: "signal".into(),
                value: FieldValue::Int(number as i64),
            }],
        };
        app.record_owned_at(seq, k, 0, None, record);
    })
}

/// Replay: starts the thread that raises the recorded signals at their place. It takes them
/// as the replay's own reader meets them (`Core::side_events_read`: no pass over the log of
/// its own) and waits for the strict cursor to pass each.
pub(crate) fn start_replay() {
    let Some(a) = agent() else { return };
    if !matches!(a.core.session, Session::Replay(_)) || a.core.replay_cursor().is_none() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("replay-signals".into())
        .spawn(move || {
            let mut pending: std::collections::VecDeque<replay_core::Event> = Default::default();
            loop {
                if a.core.stopped().is_some() {
                    return;
                }
                pending.extend(a.core.side_events_read(SIDE_KINDS[2]));
                // Every event before the signal's was replayed: the cursor is past it (the
                // cursor passes a side record by itself).
                match (pending.front(), a.core.replay_cursor()) {
                    (Some(e), Some(c)) if c > e.seq => {
                        let e = pending.pop_front().expect("a front one");
                        if let Payload::Record { record } = &e.payload {
                            if let Some(FieldValue::Int(sig)) = record.get("signal") {
                                a.core.end_signal_raised_at(e.seq);
                                // SAFETY: kill(2) on this very process with the recorded signal.
                                unsafe { kill(getpid(), *sig as i32) };
                            }
                        }
                    }
                    (_, None) => return,
                    // A few checks of two locks a second while nothing is due.
                    _ => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
    if spawned.is_err() {
        eprintln!("replay: internal error: cannot start the thread that raises recorded signals");
    }
}
