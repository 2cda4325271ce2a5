//! `java.io.File` metadata a program branches on: `exists`, `isFile`, `isDirectory`,
//! `isHidden` (`getBooleanAttributes0`), `canRead`/`canWrite`/`canExecute` (`checkAccess`),
//! `lastModified`, `length` and `list`/`listFiles`: the `java.io.UnixFileSystem` natives,
//! wrapped through NativeMethodBind like FileInputStream's (the table is in src/fileio.rs).
//!
//! Each call is an event of the calling thread unless class or resource loading makes it
//! (src/context.rs: `URLClassPath` asks `exists` for every class file it looks up in a
//! directory, ServiceLoader and `getResource` look in the class path): input digest = the
//! path (and `checkAccess`'s mode), payload = the result (for `list`, the names,
//! NUL-separated, and their count; -1 for null). Replay never touches the file system for an
//! event call. Where the file is and what it is called do not matter: a program's metadata
//! calls on its class-path directory, on `.class` and `.jar` files, or through `../`, are
//! events like any other. An empty path is answered live (the same answer in both modes).

use crate::fileio::{
    begin_path, orig, pending_exception, record_one, replay_one, run, scalar_event, throw_recorded,
    IO_DELETE, IO_MKDIR, IO_RENAME, KINDS, META_ACCESS, META_ATTRS, META_LENGTH, META_LIST,
    META_MTIME, META_SPACE,
};
use crate::{agent, clear_exception};
use jni::objects::{JFieldID, JObject, JObjectArray, JString};
use jni::signature::ReturnType;
use jni::sys::{jboolean, jint, jlong, jobject, jobjectArray, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use replay_core::session::Session;
use std::sync::OnceLock;

pub type IntFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject) -> jint;
pub type AccessFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject, jint) -> jboolean;
pub type LongFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject) -> jlong;
pub type ListFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject) -> jobjectArray;
pub type SpaceFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject, jint) -> jlong;

/// A field's ID, looked up once per process (`cache`) in a boot class, whose IDs stay valid:
/// looking a field up by name on every call parses its signature each time.
pub(crate) fn field_id(
    env: &mut JNIEnv,
    cache: &OnceLock<JFieldID>,
    class: &str,
    name: &str,
    sig: &str,
) -> Option<JFieldID> {
    if let Some(id) = cache.get() {
        return Some(*id);
    }
    let id = env.get_field_id(class, name, sig);
    let id = match id {
        Ok(id) => id,
        Err(_) => {
            clear_exception(env);
            return None;
        }
    };
    Some(*cache.get_or_init(|| id))
}

/// The `path` of a `java.io.File`, if this call on it may be an event.
fn event_path(raw: *mut RawJniEnv, file: jobject) -> Option<String> {
    agent()?;
    crate::fileio::FILE_EVENT.get()?;
    if file.is_null() {
        return None;
    }
    // SAFETY: the thread's JNIEnv; `file` is the call's argument (a local reference).
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    let f = unsafe { JObject::from_raw(file) };
    static PATH: OnceLock<JFieldID> = OnceLock::new();
    let id = field_id(
        &mut env,
        &PATH,
        "java/io/File",
        "path",
        "Ljava/lang/String;",
    )?;
    let p = match env
        .get_field_unchecked(&f, id, ReturnType::Object)
        .and_then(|v| v.l())
    {
        Ok(p) if !p.is_null() => p,
        _ => {
            clear_exception(&mut env);
            return None;
        }
    };
    let p = JString::from(p);
    let name: Option<String> = env.get_string(&p).ok().map(Into::into);
    let _ = env.delete_local_ref(p);
    let name = name?;
    (!name.is_empty()).then_some(name)
}

/// The input digest of a call on a path (java.io here, NIO in src/nio.rs): the path and the
/// call's argument (an access mode, or 0).
pub(crate) fn path_digest(path: &[u8], arg: i64) -> u64 {
    replay_core::digest(&[path, &arg.to_le_bytes()])
}

/// A metadata call returning a number: the number is the payload.
fn scalar(raw: *mut RawJniEnv, file: jobject, i: usize, arg: i64, live: impl Fn() -> i64) -> i64 {
    run(KINDS[i], live, |call| {
        let path = event_path(raw, file)?;
        let mut c = begin_path(raw)?;
        scalar_event(&mut c, i, path_digest(path.as_bytes(), arg), call)
    })
}

pub unsafe extern "system" fn attributes(raw: *mut RawJniEnv, this: jobject, f: jobject) -> jint {
    // SAFETY (all the `orig` calls): the saved original of this very native.
    let live = || unsafe { orig::<IntFn>(META_ATTRS)(raw, this, f) } as i64;
    scalar(raw, f, META_ATTRS, 0, live) as jint
}

pub unsafe extern "system" fn access(
    raw: *mut RawJniEnv,
    this: jobject,
    f: jobject,
    mode: jint,
) -> jboolean {
    let live = || unsafe { orig::<AccessFn>(META_ACCESS)(raw, this, f, mode) } as i64;
    (scalar(raw, f, META_ACCESS, mode as i64, live) != 0) as jboolean
}

pub unsafe extern "system" fn mtime(raw: *mut RawJniEnv, this: jobject, f: jobject) -> jlong {
    let live = || unsafe { orig::<LongFn>(META_MTIME)(raw, this, f) };
    scalar(raw, f, META_MTIME, 0, live)
}

pub unsafe extern "system" fn length(raw: *mut RawJniEnv, this: jobject, f: jobject) -> jlong {
    let live = || unsafe { orig::<LongFn>(META_LENGTH)(raw, this, f) };
    scalar(raw, f, META_LENGTH, 0, live)
}

/// `getTotalSpace`/`getFreeSpace`/`getUsableSpace` (`t`: which): the file system's answer
/// changes with every byte anyone writes (read live, a replay after 5 MB more on the disk
/// diverged at once).
pub unsafe extern "system" fn space(
    raw: *mut RawJniEnv,
    this: jobject,
    f: jobject,
    t: jint,
) -> jlong {
    let live = || unsafe { orig::<SpaceFn>(META_SPACE)(raw, this, f, t) };
    scalar(raw, f, META_SPACE, i64::from(t), live)
}

/// `list`: the names (NUL cannot occur in a file name, so it separates them) and their count,
/// or -1 for null (not a directory, unreadable).
pub unsafe extern "system" fn list(raw: *mut RawJniEnv, this: jobject, f: jobject) -> jobjectArray {
    let live = || unsafe { orig::<ListFn>(META_LIST)(raw, this, f) };
    run(KINDS[META_LIST], live, |call| {
        let path = event_path(raw, f)?;
        let mut c = begin_path(raw)?;
        let digest = path_digest(path.as_bytes(), 0);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record_one(c.a, META_LIST, digest, -1, Some(&ex), None);
                    return Some(r);
                }
                if r.is_null() {
                    record_one(c.a, META_LIST, digest, -1, None, None);
                    return Some(r);
                }
                match names_of(&mut c.env, r) {
                    Some(names) => {
                        let data = names.join("\0");
                        let n = names.len() as i64;
                        record_one(c.a, META_LIST, digest, n, None, Some(data.as_bytes()));
                    }
                    None => {
                        clear_exception(&mut c.env);
                        crate::internal_error(Some(&mut c.env), "cannot read a File.list result");
                    }
                }
                Some(r)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, META_LIST, digest)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(std::ptr::null_mut());
                }
                if o.ret < 0 {
                    return Some(std::ptr::null_mut());
                }
                let data = o.data.unwrap_or_default();
                let text = String::from_utf8_lossy(&data);
                let names: Vec<&str> = if o.ret == 0 {
                    Vec::new()
                } else {
                    text.split('\0').collect()
                };
                if names.len() as i64 != o.ret {
                    crate::internal_error(
                        Some(&mut c.env),
                        "a recorded File.list result does not hold its count of names",
                    );
                    return None;
                }
                match new_names(&mut c.env, &names) {
                    Some(a) => Some(a),
                    None => {
                        clear_exception(&mut c.env);
                        None
                    }
                }
            }
        }
    })
}

fn names_of(env: &mut JNIEnv, arr: jobjectArray) -> Option<Vec<String>> {
    // SAFETY: the live call's result, a local reference we do not delete (it is returned).
    let arr = unsafe { JObjectArray::from_raw(arr) };
    let n = env.get_array_length(&arr).ok()?;
    let mut out = Vec::with_capacity(n as usize);
    for k in 0..n {
        let s = JString::from(env.get_object_array_element(&arr, k).ok()?);
        let name: String = env.get_string(&s).ok()?.into();
        let _ = env.delete_local_ref(s);
        out.push(name);
    }
    Some(out)
}

fn new_names(env: &mut JNIEnv, names: &[&str]) -> Option<jobjectArray> {
    let arr = env
        .new_object_array(names.len() as i32, "java/lang/String", JObject::null())
        .ok()?;
    for (k, n) in names.iter().enumerate() {
        let s = env.new_string(n).ok()?;
        env.set_object_array_element(&arr, k as i32, &s).ok()?;
        let _ = env.delete_local_ref(s);
    }
    Some(arr.into_raw())
}

pub type FileBoolFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject) -> jboolean;
pub type RenameFn =
    unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject, jobject) -> jboolean;

/// A change of the file system through java.io.File (`mkdir`, `delete`, `renameTo`): it runs
/// live in both modes (its effect is the program's output on disk), and its outcome is an
/// input. Replay returns the recorded outcome: a directory the recording made exists now,
/// and `mkdir` after an `exists` that replays "no" must not return false where the recorded
/// one returned true (ant's `<mkdir>` then asks again and diverges); a change that failed in
/// the recording is not made.
fn change(raw: *mut RawJniEnv, i: usize, files: &[jobject], live: impl Fn() -> i64) -> i64 {
    run(KINDS[i], live, |call| {
        let mut key = Vec::new();
        for f in files {
            key.extend_from_slice(event_path(raw, *f)?.as_bytes());
            key.push(0);
        }
        let mut c = begin_path(raw)?;
        let digest = path_digest(&key, 0);
        if matches!(c.a.core.session, Session::Record(_)) {
            return scalar_event(&mut c, i, digest, call);
        }
        let o = replay_one(&mut c, i, digest)?;
        if o.thrown {
            throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
            return Some(0);
        }
        if o.ret != 0 {
            // Made again; how it goes now is not the program's business (an exception it
            // throws is dropped without a word).
            call();
            let _ = c.env.exception_clear();
        }
        Some(o.ret)
    })
}

/// `createDirectory(File)` (JDK 21+: `createDirectory0`): `File.mkdir`, and `mkdirs` per level.
pub unsafe extern "system" fn create_directory(
    raw: *mut RawJniEnv,
    this: jobject,
    f: jobject,
) -> jboolean {
    // SAFETY (each `orig`): the saved original of this very native, with the JVM's arguments.
    let live = || unsafe { orig::<FileBoolFn>(IO_MKDIR)(raw, this, f) } as i64;
    (change(raw, IO_MKDIR, &[f], live) != 0) as jboolean
}

/// `delete0(File)`: `File.delete`.
pub unsafe extern "system" fn delete0(raw: *mut RawJniEnv, this: jobject, f: jobject) -> jboolean {
    let live = || unsafe { orig::<FileBoolFn>(IO_DELETE)(raw, this, f) } as i64;
    (change(raw, IO_DELETE, &[f], live) != 0) as jboolean
}

/// `rename0(File, File)`: `File.renameTo`.
pub unsafe extern "system" fn rename0(
    raw: *mut RawJniEnv,
    this: jobject,
    from: jobject,
    to: jobject,
) -> jboolean {
    let live = || unsafe { orig::<RenameFn>(IO_RENAME)(raw, this, from, to) } as i64;
    (change(raw, IO_RENAME, &[from, to], live) != 0) as jboolean
}
