//! `HttpClient`'s hand-over of registrations to its selector thread.
//!
//! A thread that starts or continues an exchange (a connect, a write, a read subscription)
//! adds an event to the `SelectorManager`'s `registrations` list under its lock and wakes
//! the selector; the selector thread takes the whole list at the top of its loop, registers
//! the channels' interests, then selects. Which registrations one pass takes is a race: in
//! a replay the selector may take one fewer (its next `EPoll.wait`, served from the log, then
//! names a socket whose read interest is not registered yet, and the selector goes another
//! way: measured, every HttpClient replay diverged in the selector thread) or one more.
//!
//! How: the class hook replaces the `List.iterator()` and `List.clear()` calls of
//! `HttpClientImpl$SelectorManager` with `ReplayHooks.selIterator`/`selClear`
//! (`classfile::SITES`). Record: how many registrations (and deregistrations) the selector
//! takes in each pass is an event of the selector thread (`K_SELECTOR` of src/lib.rs, input
//! digest: which list), taken under the lock, so it is ordered after every add it saw.
//! Replay: at that event's turn (waited for with the lock released, so that the threads
//! before it can add theirs), the selector waits for the recorded count to be there, and
//! registrations added beyond it are set aside until the list is cleared, so the next pass
//! takes them.

use crate::guarded;
use jni::objects::{JClass, JObject, JObjectArray};
use jni::sys::{jint, jobjectArray};
use jni::JNIEnv;

/// `{thread, registrations, deregistrations, lock}` of the `SelectorManager` thread `t`: the
/// lock its loop holds while it takes the lists is JDK 25's `ReentrantLock lock`, else (JDK
/// 17: `synchronized (this)`) the thread itself. Null if a field is missing (another JDK).
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_selLists0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    t: JObject<'l>,
) -> jobjectArray {
    guarded("selLists0", std::ptr::null_mut(), || {
        let r = lists(&mut env, &t);
        if env.exception_check().unwrap_or(false) {
            let _ = env.exception_clear();
        }
        r.unwrap_or(std::ptr::null_mut())
    })
}

fn lists(env: &mut JNIEnv, t: &JObject) -> Option<jobjectArray> {
    let regs = env
        .get_field(t, "registrations", "Ljava/util/List;")
        .ok()?
        .l()
        .ok()?;
    let _ = env.exception_clear();
    let deregs = env
        .get_field(t, "deregistrations", "Ljava/util/List;")
        .ok()?
        .l()
        .ok()?;
    let _ = env.exception_clear();
    let lock = match env.get_field(t, "lock", "Ljava/util/concurrent/locks/ReentrantLock;") {
        Ok(v) => v.l().ok()?,
        Err(_) => {
            let _ = env.exception_clear();
            JObject::null()
        }
    };
    let object = env.find_class("java/lang/Object").ok()?;
    let arr: JObjectArray = env.new_object_array(4, object, JObject::null()).ok()?;
    let lock = if lock.is_null() {
        env.new_local_ref(t).ok()?
    } else {
        lock
    };
    for (i, o) in [env.new_local_ref(t).ok()?, regs, deregs, lock]
        .iter()
        .enumerate()
    {
        env.set_object_array_element(&arr, i as jint, o).ok()?;
    }
    Some(arr.into_raw())
}

/// Replay: whether the calling thread's next recorded event is of hook kind `kind`, and
/// whether it is its turn: 1 its turn, 0 not yet, -2 none left in the thread's recording
/// (the recorded process ended with the thread here: `ReplayHooks.untilEnd`), -1 another
/// kind, or not replaying (the call goes on and the replay call reports it).
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_turnOf0<'l>(
    _env: JNIEnv<'l>,
    _c: JClass<'l>,
    kind: jint,
) -> jint {
    guarded("turnOf0", -1, || {
        let Some(a) = crate::agent() else { return -1 };
        let Some(&id) = a.kinds.get(kind as usize) else {
            return -1;
        };
        match a.core.replay_next_turn(id) {
            Some(true) => 1,
            Some(false) => 0,
            None if a.core.replay_past_end() => -2,
            None => -1,
        }
    })
}
