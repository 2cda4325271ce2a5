//! The replay tool's own variables (`REPLAY_MODE`, `REPLAY_TREE_CLAIMS`, `REPLAY_STDIN`, ...)
//! are not the program's: `REPLAY_MODE` is `record` in one run and `replay` in the other, the
//! claims directory has a fresh name every run. A program that wrote its environment out
//! (ant's `<property environment>` into every junit report) wrote other bytes in every replay.
//! `System.getenv()` gets the environment from `ProcessEnvironment.environ()` (once, at its
//! first use): the wrapper leaves the `REPLAY_*` pairs out, in both modes.
//!
//! Children still need them (a child JVM or Node records into its own log through them): a
//! child given an environment of its own (`ProcessBuilder.environment()`, built from the map
//! without them) gets them back at its start (src/children.rs `with_control_vars`).

use crate::{agent, clear_exception};
use jni::objects::{JByteArray, JObject, JObjectArray};
use jni::sys::{jclass, jobjectArray, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

const OWNER: &str = "Ljava/lang/ProcessEnvironment;";
const NAME: &str = "environ";
const SIG: &str = "()[[B";
/// What the tool's variables start with.
pub(crate) const PREFIX: &[u8] = b"REPLAY_";

static ORIG: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

type EnvironFn = unsafe extern "system" fn(*mut RawJniEnv, jclass) -> jobjectArray;

pub(crate) fn hooked(owner: &str, name: &str, sig: &str) -> bool {
    owner == OWNER && name == NAME && sig == SIG
}

/// NativeMethodBind of `ProcessEnvironment.environ`: the wrapper to bind instead.
pub(crate) fn bind(
    owner: &str,
    name: &str,
    sig: &str,
    address: *mut c_void,
) -> Option<*mut c_void> {
    hooked(owner, name, sig)
        .then(|| crate::fileio::bound(&ORIG, address, environ as EnvironFn as *mut c_void))
}

unsafe extern "system" fn environ(raw: *mut RawJniEnv, cls: jclass) -> jobjectArray {
    let p = ORIG.load(Ordering::Acquire);
    // SAFETY: the JVM's own implementation, stored at its bind before this could be called.
    let all = unsafe { std::mem::transmute::<*mut c_void, EnvironFn>(p)(raw, cls) };
    crate::guarded("ProcessEnvironment.environ", all, || {
        without_control_vars(raw, all).unwrap_or(all)
    })
}

/// `all` (name, value, name, value, ... as byte arrays) without the `REPLAY_*` pairs; `None`
/// when there are none (or the arrays cannot be read: the program then sees them).
fn without_control_vars(raw: *mut RawJniEnv, all: jobjectArray) -> Option<jobjectArray> {
    agent()?;
    if all.is_null() {
        return None;
    }
    // SAFETY: the thread's JNIEnv; `all` is the native's result, a local reference.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    let arr = unsafe { JObjectArray::from_raw(all) };
    let r = (|| -> Option<Option<jobjectArray>> {
        let n = env.get_array_length(&arr).ok()?;
        let mut keep = Vec::with_capacity(n as usize);
        let mut dropped = false;
        for i in (0..n - 1).step_by(2) {
            let name = JByteArray::from(env.get_object_array_element(&arr, i).ok()?);
            let bytes = env.convert_byte_array(&name).ok()?;
            let _ = env.delete_local_ref(name);
            if bytes.starts_with(PREFIX) {
                dropped = true;
            } else {
                keep.push(i);
            }
        }
        if !dropped {
            return Some(None);
        }
        let class = env.find_class("[B").ok()?;
        let out = env
            .new_object_array(2 * keep.len() as i32, &class, JObject::null())
            .ok()?;
        let _ = env.delete_local_ref(class);
        for (k, &i) in keep.iter().enumerate() {
            for d in 0..2 {
                let e = env.get_object_array_element(&arr, i + d).ok()?;
                env.set_object_array_element(&out, 2 * k as i32 + d, &e)
                    .ok()?;
                let _ = env.delete_local_ref(e);
            }
        }
        Some(Some(out.into_raw()))
    })();
    let _ = arr.into_raw();
    match r {
        Some(r) => r,
        None => {
            clear_exception(&mut env);
            None
        }
    }
}
