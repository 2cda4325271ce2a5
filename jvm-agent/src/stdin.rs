//! `System.in` when it is not the stdin the launcher gives the program. The launcher records
//! the stdin it hands the top program (`launcher.stdin`, cli/src/cmd/inputs.rs) and names it
//! in `REPLAY_STDIN`; a JVM further down the tree whose fd 0 is another (a script's
//! `java Main < input`, `cat data | java Main`) read its input live in replay, edited or
//! gone (exit 0, other output, silently). Such a JVM's `System.in` stream is tagged at VMInit
//! like a stream opened by path (src/fileio.rs), so its reads are events: replay serves the
//! recorded bytes and never reads fd 0.
//!
//! Whether it was tagged is an event of main at VMInit (`java.lang.System.in`, value the
//! stream's number): replay follows the recording, whatever its own fd 0 is. A JVM run with
//! the agent alone (no launcher, no `REPLAY_STDIN`) leaves stdin as it was: live.

use crate::{agent, clear_exception};
use jni::objects::{JObject, JValueOwned};
use jni::JNIEnv;
use replay_core::session::Session;
use replay_core::{Payload, PayloadRef};
use std::sync::atomic::{AtomicI64, Ordering};

const KIND: &str = "java.lang.System.in";

/// The stream number `System.in` was tagged with (0: none). Another FileInputStream on
/// `FileDescriptor.in` (jline's, `new FileInputStream(FileDescriptor.in)`) reads the same
/// stdin: [`shared`] gives it the same number at its first call.
static STDIN_STREAM: AtomicI64 = AtomicI64::new(0);

/// The stream number of `this`, an untagged FileInputStream, when it reads the tagged
/// `FileDescriptor.in` (then `this` is tagged too); costs nothing while stdin is not tagged.
pub(crate) fn shared(raw: *mut jni::sys::JNIEnv, this: jni::sys::jobject) -> Option<i64> {
    let id = STDIN_STREAM.load(Ordering::Acquire);
    if id == 0 || this.is_null() {
        return None;
    }
    let a = agent()?;
    // SAFETY: the thread's JNIEnv; `this` is the native's receiver, a FileInputStream.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    let this = unsafe { JObject::from_raw(this) };
    let fd = env
        .get_field(&this, "fd", "Ljava/io/FileDescriptor;")
        .and_then(JValueOwned::l)
        .ok();
    clear_exception(&mut env);
    let fd = fd.filter(|f| !f.is_null())?;
    let tagged = a.jvmti.tag(fd.as_raw()).ok() == Some(id);
    let _ = env.delete_local_ref(fd);
    if !tagged {
        return None;
    }
    a.jvmti.set_tag(this.as_raw(), id).ok()?;
    Some(id)
}

/// Whether fd 0 is another stdin than the one `REPLAY_STDIN` names (none named: false).
fn own_stdin() -> bool {
    let Some(named) = std::env::var_os("REPLAY_STDIN") else {
        return false;
    };
    // The descriptor's own file (a pipe's too): /proc's link is followed as fstat would.
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata("/proc/self/fd/0") else {
        return false;
    };
    named.to_str() != Some(&format!("{}:{}", m.dev(), m.ino()))
}

/// At VMInit, on main, once file calls may be events.
pub fn hook(env: &mut JNIEnv) {
    let Some(a) = agent() else { return };
    let kind = a.core.intern(KIND);
    let id = match &a.core.session {
        Session::Record(_) => {
            if !own_stdin() {
                return;
            }
            let id = crate::fileio::NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
            if !tag(env, id) {
                return;
            }
            crate::record_direct(a, kind, 0, None, PayloadRef::Int(id));
            return;
        }
        Session::Replay(_) => {
            if !a.core.replay_next_is(kind) {
                return;
            }
            match crate::apply(a.core.replay(kind, 0, None, &|| None)) {
                Some(e) => match e.payload {
                    Payload::Int { value } => value,
                    _ => return,
                },
                None => return,
            }
        }
    };
    if !tag(env, id) {
        eprintln!("replay: warning: System.in cannot be replayed: the program reads this stdin");
    }
}

/// Tags `System.in`'s FileInputStream (under its BufferedInputStream) and its
/// FileDescriptor as stream `id`.
fn tag(env: &mut JNIEnv, id: i64) -> bool {
    let Some(a) = agent() else { return false };
    let found = (|| -> Option<bool> {
        let stream = field(env, None, "java/lang/System", "in")?;
        let fis = if env
            .is_instance_of(&stream, "java/io/FileInputStream")
            .ok()?
        {
            stream
        } else if env
            .is_instance_of(&stream, "java/io/FilterInputStream")
            .ok()?
        {
            let inner = field(env, Some(&stream), "java/io/FilterInputStream", "in")?;
            if !env.is_instance_of(&inner, "java/io/FileInputStream").ok()? {
                return Some(false);
            }
            inner
        } else {
            return Some(false);
        };
        a.jvmti.set_tag(fis.as_raw(), id).ok()?;
        let fd = env
            .get_field(&fis, "fd", "Ljava/io/FileDescriptor;")
            .and_then(JValueOwned::l)
            .ok()?;
        if !fd.is_null() && a.jvmti.set_tag(fd.as_raw(), id).is_ok() {
            STDIN_STREAM.store(id, Ordering::Release);
        }
        Some(true)
    })();
    clear_exception(env);
    found == Some(true)
}

/// An InputStream field: static of `class` when `of` is None.
fn field<'l>(
    env: &mut JNIEnv<'l>,
    of: Option<&JObject>,
    class: &str,
    name: &str,
) -> Option<JObject<'l>> {
    let sig = "Ljava/io/InputStream;";
    let v = match of {
        None => env.get_static_field(class, name, sig),
        Some(o) => {
            let c = env.find_class(class).ok()?;
            let id = env.get_field_id(&c, name, sig).ok()?;
            env.get_field_unchecked(o, id, jni::signature::ReturnType::Object)
        }
    };
    v.and_then(JValueOwned::l).ok().filter(|o| !o.is_null())
}
