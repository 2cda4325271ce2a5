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
use jni::objects::{JByteArray, JClass};
use jni::sys::jbyteArray;
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
