//! `sun.security.provider.SeedGenerator.getSystemEntropy()`: what SHA1PRNG's seeder
//! (`SecureRandom.getInstance("SHA1PRNG")` without a seed) and the DRBG's seeder
//! (`SecureRandom.getInstance("DRBG")`) mix into their state besides `/dev/random`: a digest
//! of the clock, every system property, the network adapters and a MAC address, the names in
//! `java.io.tmpdir`, and `Runtime.totalMemory`/`freeMemory`. Most of it differs from one run
//! to the next (the heap's state) or one machine to another, and none of it is a call the
//! file hooks see, so the digest itself is the event.
//!
//! How: the class hook redirects calls of the method to `ReplayHooks.getSystemEntropy`
//! (src/classfile.rs `TARGETS`; the callers are the two `SeederHolder`s, loaded on first use),
//! whose native here calls the original through JNI (JNI ignores access: the method is
//! package-private) in both modes, so what it reads through hooked calls (the clock, the
//! `java.io.tmpdir` listing: up to 1 025 `readdir` events) are events in both, then records
//! its 20 bytes, or in replay returns the recorded ones.
//! The seeds read from `/dev/random` are FileInputStream events already.

use crate::fileio::{begin, pending_exception};
use crate::{apply, clear_exception, guarded, java_stack};
use jni::objects::{JByteArray, JClass, JMethodID, JObject, JValue};
use jni::signature::{Primitive, ReturnType};
use jni::sys::{jboolean, jbyteArray, jint};
use jni::JNIEnv;
use replay_core::session::Session;
use replay_core::{Payload, PayloadRef};
use std::sync::OnceLock;

const KIND: &str = "sun.security.provider.SeedGenerator.getSystemEntropy";

#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_entropy0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
) -> jbyteArray {
    let raw = env.get_raw();
    // Not inside the hook guard: replay's clock hooks serve nothing to a guarded thread
    // while record's buffer its reads all the same, so the original's calls must be events.
    let live = env
        .call_static_method(
            "sun/security/provider/SeedGenerator",
            "getSystemEntropy",
            "()[B",
            &[],
        )
        .and_then(|v| v.l());
    let live = match live {
        Ok(o) => JByteArray::from(o),
        // Thrown (an InternalError without SHA-1): it stays pending for the caller.
        Err(_) => return std::ptr::null_mut(),
    };
    let fallback = live.as_raw();
    guarded("SeedGenerator.getSystemEntropy", fallback, || {
        let Some(mut c) = begin(raw) else {
            return fallback;
        };
        static KIND_ID: OnceLock<u32> = OnceLock::new();
        let kind = *KIND_ID.get_or_init(|| c.a.core.intern(KIND));
        match &c.a.core.session {
            Session::Record(_) => {
                match c.env.convert_byte_array(&live) {
                    Ok(bytes) => crate::record_direct(
                        c.a,
                        kind,
                        0,
                        None,
                        PayloadRef::Ret {
                            ret: bytes.len() as i64,
                            errno: 0,
                            data: Some(&bytes),
                        },
                    ),
                    Err(_) => {
                        let _ = pending_exception(&mut c.env);
                        clear_exception(&mut c.env);
                        crate::internal_error(Some(&mut c.env), "cannot read the system entropy");
                    }
                }
                fallback
            }
            Session::Replay(_) => {
                let env = std::cell::RefCell::new(&mut c.env);
                let stack = || java_stack(c.a, &mut env.borrow_mut());
                let e = apply(c.a.core.replay(kind, 0, None, &stack));
                let env = env.into_inner();
                match e.map(|e| e.payload) {
                    Some(Payload::Ret {
                        data: Some(bytes), ..
                    }) => match env.byte_array_from_slice(&bytes) {
                        Ok(a) => a.into_raw(),
                        Err(_) => {
                            clear_exception(env);
                            fallback
                        }
                    },
                    _ => fallback,
                }
            }
        }
    })
}

/// NativePRNG's output, one event per `implNextBytes` of the program (`ReplayHooks.prngNextBytes`,
/// a call site redirected in `NativePRNG` and its `Blocking`/`NonBlocking` variants).
const PRNG_KIND: &str = "java.security.SecureRandom.nextBytes";

/// The ID of NativePRNG's `RandomIO` method `name`, found once from `io`'s class (the class
/// is private to its package: JNI ignores that); `None` with a ProviderException thrown.
fn io_method(
    env: &mut JNIEnv,
    io: &JObject,
    cell: &OnceLock<Option<JMethodID>>,
    name: &str,
    sig: &str,
) -> Option<JMethodID> {
    let id = *cell.get_or_init(|| {
        let c = env.get_object_class(io).ok()?;
        let id = env.get_method_id(&c, name, sig).ok();
        let _ = env.delete_local_ref(c);
        id
    });
    if id.is_none() {
        clear_exception(env);
        let _ = env.throw_new(
            "java/security/ProviderException",
            format!("replay: NativePRNG's {name} not found"),
        );
    }
    id
}

/// `ReplayHooks.prngCall0(io, bytes)`: `io.implNextBytes(bytes)` through JNI. An exception
/// it throws stays pending for the caller.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_prngCall0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    io: JObject<'l>,
    bytes: JByteArray<'l>,
) {
    static ID: OnceLock<Option<JMethodID>> = OnceLock::new();
    let Some(id) = io_method(&mut env, &io, &ID, "implNextBytes", "([B)V") else {
        return;
    };
    // SAFETY: the ID of `void implNextBytes(byte[])` of io's class, one byte[] argument.
    let _ = unsafe {
        env.call_method_unchecked(
            &io,
            id,
            ReturnType::Primitive(Primitive::Void),
            &[JValue::Object(&bytes).as_jni()],
        )
    };
}

/// `ReplayHooks.prngSeed0(io, n)`: `io.implGenerateSeed(n)` through JNI.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_prngSeed0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    io: JObject<'l>,
    n: jint,
) -> jbyteArray {
    static ID: OnceLock<Option<JMethodID>> = OnceLock::new();
    let Some(id) = io_method(&mut env, &io, &ID, "implGenerateSeed", "(I)[B") else {
        return std::ptr::null_mut();
    };
    // SAFETY: the ID of `byte[] implGenerateSeed(int)` of io's class, one int argument.
    let r = unsafe {
        env.call_method_unchecked(&io, id, ReturnType::Object, &[JValue::Int(n).as_jni()])
    };
    match r.and_then(|v| v.l()) {
        Ok(o) => o.into_raw(),
        Err(_) => std::ptr::null_mut(),
    }
}

/// The input digest of a call: which (0 NativePRNG's bytes, 1 its seed, 2 SeedGenerator's
/// seed) and how many bytes.
fn prng_digest(len: usize, which: jint) -> u64 {
    let which: &[u8] = match which {
        0 => b"next",
        1 => b"seed",
        _ => b"seedgen",
    };
    replay_core::digest(&[which, &(len as u64).to_le_bytes()])
}

/// `ReplayHooks.seedGen0(bytes)`: `SeedGenerator.generateSeed(bytes)` through JNI (the
/// method is package-private).
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_seedGen0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    bytes: JByteArray<'l>,
) {
    let _ = env.call_static_method(
        "sun/security/provider/SeedGenerator",
        "generateSeed",
        "([B)V",
        &[JValue::Object(&bytes)],
    );
}

/// `ReplayHooks.prngRecord0(bytes)`: record, the bytes just made, as this thread's event.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_prngRecord0<'l>(
    env: JNIEnv<'l>,
    _c: JClass<'l>,
    bytes: JByteArray<'l>,
    which: jint,
) {
    let raw = env.get_raw();
    guarded(PRNG_KIND, (), || {
        let Some(mut c) = begin(raw) else { return };
        let Ok(data) = c.env.convert_byte_array(&bytes) else {
            clear_exception(&mut c.env);
            return;
        };
        let a = c.a;
        if let Session::Record(_) = &a.core.session {
            let kind = a.core.intern(PRNG_KIND);
            let d = prng_digest(data.len(), which);
            crate::record_direct(a, kind, 0, Some(d), PayloadRef::Bytes(&data));
        }
    })
}

/// `ReplayHooks.prngReplay0(bytes)`: replay, fills `bytes` with the recorded ones; false
/// when this call runs live (a thread of no events, or replay gone live).
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_prngReplay0<'l>(
    env: JNIEnv<'l>,
    _c: JClass<'l>,
    bytes: JByteArray<'l>,
    which: jint,
) -> jboolean {
    let raw = env.get_raw();
    let served = guarded(PRNG_KIND, false, || {
        let Some(mut c) = begin(raw) else {
            return false;
        };
        let a = c.a;
        let Session::Replay(_) = &a.core.session else {
            return false;
        };
        let Ok(len) = c.env.get_array_length(&bytes) else {
            clear_exception(&mut c.env);
            return false;
        };
        let kind = a.core.intern(PRNG_KIND);
        let d = prng_digest(len as usize, which);
        let env = std::cell::RefCell::new(&mut c.env);
        let stack = || java_stack(a, &mut env.borrow_mut());
        let Some(e) = apply(a.core.replay(kind, 0, Some(d), &stack)) else {
            return false;
        };
        let env = env.into_inner();
        match e.payload {
            Payload::Bytes { data } if data.len() == len as usize => {
                // SAFETY: u8 and i8 have the same layout.
                let signed: &[i8] =
                    unsafe { std::slice::from_raw_parts(data.as_ptr() as *const i8, data.len()) };
                env.set_byte_array_region(&bytes, 0, signed).is_ok()
            }
            _ => {
                crate::internal_error(
                    Some(env),
                    &format!(
                        "event {} ({PRNG_KIND}) holds no bytes of that length",
                        e.seq
                    ),
                );
                false
            }
        }
    });
    jboolean::from(served)
}
