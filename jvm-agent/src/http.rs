//! HttpClient (`java.net.http`) exchanges, recorded and replayed whole at the API.
//!
//! The client's internals pass data between its selector thread and pool workers through
//! lock-free hand-overs, so the socket calls under an exchange come in another order from run
//! to run: recorded call by call, fresh recordings replayed 0 of 10. Instead
//! `jdk.internal.net.http.ReplayHttp` (java-http/, a patch of java.net.http) takes over
//! `HttpClientFacade`'s calls of `HttpClientImpl.send`/`sendAsync`:
//! - the agent defines that class into the platform loader when `HttpClientFacade` loads (the
//!   boot loader's `ReplayHooks` cannot see java.net.http's types), then points the facade's
//!   calls at it ([`SITES`](crate::classfile::SITES), hook class [`HOOK`]);
//! - record: the real client runs with the calling thread's hooks live and unrecorded for the
//!   call (its selector and worker threads are JDK service threads); the exchange is one event
//!   of the calling thread ([`KIND`]): input the request line (checked), payload the response
//!   or the exception; the body bytes the program's subscriber got are side records
//!   (`side.java.net.http.body`, keyed by the exchange's number), since a streamed body comes
//!   after `send` returned;
//! - replay: nothing of the client runs; the response comes from the event and the body from
//!   the side records, fed to the program's own BodyHandler.

use crate::{agent, apply, clear_exception, guarded, java_stack};
use jni::objects::{JByteArray, JClass, JObject, JString};
use jni::sys::{jbyteArray, jlong, jobject, jobjectArray, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use replay_core::session::{Session, SIDE_KINDS};
use replay_core::{Appender, Field, FieldValue, Payload, PayloadRef, Record};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The facade whose calls are redirected, and the class they go to.
pub(crate) const FACADE: &str = "jdk/internal/net/http/HttpClientFacade";
pub(crate) const HOOK: &str = "jdk/internal/net/http/ReplayHttp";
static HOOK_BYTES: &[u8] = include_bytes!(env!("REPLAY_HTTP_CLASS"));

/// The exchange's event kind.
pub(crate) const KIND: &str = "java.net.http.HttpClient.send";
/// The body's side records ([`SIDE_KINDS`]).
const BODY: &str = SIDE_KINDS[3];

/// Whether [`HOOK`] was defined (once): the facade is rewritten only then.
static DEFINED: OnceLock<bool> = OnceLock::new();
/// Record: the side records' logical thread.
static SIDE: OnceLock<Option<Appender>> = OnceLock::new();
/// Replay: each exchange's body chunks and end, read once.
static SCAN: OnceLock<Bodies> = OnceLock::new();
/// Exchange number -> its body chunks and its end ("" complete, else the error), if recorded.
type Bodies = HashMap<u64, (Vec<Vec<u8>>, Option<String>)>;
static SCAN_FAILED: AtomicBool = AtomicBool::new(false);

/// ClassFileLoadHook of [`FACADE`]: defines [`HOOK`] into the facade's loader. Whether the
/// facade may be rewritten to call it.
pub(crate) fn define(jni: *mut RawJniEnv, loader: jobject) -> bool {
    *DEFINED.get_or_init(|| {
        if loader.is_null() {
            return false;
        }
        // SAFETY: the JNIEnv the JVM passed to the class hook.
        let Ok(mut env) = (unsafe { JNIEnv::from_raw(jni) }) else {
            return false;
        };
        // SAFETY: a local reference the JVM passed, valid for this callback.
        let loader = unsafe { JObject::from_raw(loader) };
        let r = env.define_class(HOOK, &loader, HOOK_BYTES);
        let threw = clear_exception(&mut env);
        match r {
            Ok(c) if !threw => {
                let _ = env.delete_local_ref(c);
                true
            }
            _ => {
                eprintln!(
                    "replay: warning: cannot define the HttpClient hook class: HttpClient's internals are recorded call by call"
                );
                false
            }
        }
    })
}

fn side() -> Option<&'static Appender> {
    let a = agent()?;
    SIDE.get_or_init(|| a.core.side_appender("[http bodies]"))
        .as_ref()
}

fn scan() -> &'static Bodies {
    SCAN.get_or_init(|| {
        let mut m = Bodies::new();
        let Some(a) = agent() else { return m };
        let events = match a.core.side_events(&[BODY]) {
            Ok(e) => e,
            Err(e) => {
                if !SCAN_FAILED.swap(true, Ordering::Relaxed) {
                    eprintln!("replay: warning: cannot read the recorded HTTP bodies: {e}");
                }
                return m;
            }
        };
        for e in events {
            let Payload::Record { record } = e.payload else {
                continue;
            };
            let Some(FieldValue::Uint(x)) = record.get("exchange") else {
                continue;
            };
            let entry = m.entry(*x).or_default();
            match (record.get("data"), record.get("end")) {
                (Some(FieldValue::Bytes(d)), _) => entry.0.push(d.to_vec()),
                (_, Some(FieldValue::Text(t))) => entry.1 = Some(t.clone()),
                _ => {}
            }
        }
        m
    })
}

/// `ReplayHooks.httpEvent0(input, payload)`.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_httpEvent0<'l>(
    env: JNIEnv<'l>,
    _c: JClass<'l>,
    input: JString<'l>,
    payload: JByteArray<'l>,
) -> jbyteArray {
    let raw = env.get_raw();
    guarded("HttpClient.send", None, || {
        let mut c = crate::fileio::begin(raw)?;
        let text: String = c.env.get_string(&input).ok()?.into();
        let d = replay_core::digest(&[text.as_bytes()]);
        let a = c.a;
        let kind = a.core.intern(KIND);
        match &a.core.session {
            Session::Record(_) => {
                if payload.is_null() {
                    return None;
                }
                let bytes = c.env.convert_byte_array(&payload).ok()?;
                crate::record_direct(a, kind, 0, Some(d), PayloadRef::Bytes(&bytes));
                None
            }
            Session::Replay(_) => {
                let env = std::cell::RefCell::new(&mut c.env);
                let stack = || java_stack(a, &mut env.borrow_mut());
                let e = apply(a.core.replay(kind, 0, Some(d), &stack))?;
                let Payload::Bytes { data } = e.payload else {
                    crate::internal_error(
                        Some(&mut c.env),
                        &format!("event {} ({KIND}) holds no exchange", e.seq),
                    );
                    return None;
                };
                let arr = c.env.byte_array_from_slice(&data).ok()?;
                Some(arr.into_raw())
            }
        }
    })
    .unwrap_or(std::ptr::null_mut())
}

/// `ReplayHooks.httpSide0(x, chunk, end)`: record only, from any thread (the client's own).
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_httpSide0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    x: jlong,
    chunk: JByteArray<'l>,
    end: JString<'l>,
) {
    guarded("HttpClient body", (), || {
        let (Some(a), Some(app)) = (agent(), side()) else {
            return;
        };
        let mut fields = vec![Field {
            name: "exchange".into(),
            value: FieldValue::Uint(x as u64),
        }];
        if !chunk.is_null() {
            let Ok(bytes) = env.convert_byte_array(&chunk) else {
                clear_exception(&mut env);
                return;
            };
            fields.push(Field {
                name: "data".into(),
                value: FieldValue::Bytes(bytes.into()),
            });
        } else if !end.is_null() {
            let Ok(s) = env.get_string(&end) else {
                clear_exception(&mut env);
                return;
            };
            fields.push(Field {
                name: "end".into(),
                value: FieldValue::Text(s.into()),
            });
        } else {
            return;
        }
        let k = a.core.intern(BODY);
        app.record_owned(k, 0, None, Record { fields });
    })
}

/// `ReplayHooks.httpBody0(x)`: replay: exchange `x`'s chunks (byte[]) and its end (a String)
/// if recorded; null when nothing was recorded of it.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_httpBody0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    x: jlong,
) -> jobjectArray {
    guarded("HttpClient body", None, || {
        let (chunks, end) = scan().get(&(x as u64))?;
        let n = chunks.len() + usize::from(end.is_some());
        let arr = env
            .new_object_array(n as i32, "java/lang/Object", JObject::null())
            .ok()?;
        for (i, c) in chunks.iter().enumerate() {
            let b = env.byte_array_from_slice(c).ok()?;
            env.set_object_array_element(&arr, i as i32, &b).ok()?;
            let _ = env.delete_local_ref(b);
        }
        if let Some(t) = end {
            let s = env.new_string(t).ok()?;
            env.set_object_array_element(&arr, chunks.len() as i32, &s)
                .ok()?;
        }
        Some(arr.into_raw())
    })
    .unwrap_or(std::ptr::null_mut())
}
