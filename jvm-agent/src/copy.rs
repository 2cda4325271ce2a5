//! `Files.copy(Path, Path)` and what builds on it (ant's `<copy>`, build tools): the JDK
//! copies in native code, from descriptor to descriptor, past every read hook: JDK 17's
//! `UnixCopyFile.transfer` (sendfile), JDK 21+'s `LinuxNativeDispatcher.directCopy0`
//! (copy_file_range) and `UnixFileSystem.bufferedCopy0` (a read/write loop). When the
//! source's open was an event (src/nio.rs), the copy is one event of its own holding the
//! bytes the copy read: recorded by reading the source with `pread` before the live copy;
//! replayed, where the source descriptor is a stand-in on /dev/null, by writing those bytes
//! to the target. Without this the replayed copy read the stand-in: an empty target file,
//! while the program printed what the recording did.
//!
//! A copy from a source whose open was not an event (opened live: class loading, a file
//! opened for writing) runs live in both modes.

use crate::fileio::{
    begin, orig, pending_exception, record_one, replay_one, run, throw_recorded, COPY_BUFFERED,
    COPY_DIRECT, COPY_TRANSFER, KINDS,
};
use jni::sys::{jclass, jint, jlong, JNIEnv as RawJniEnv};
use replay_core::session::Session;
use std::fs::File;
use std::io::{Seek, Write};
use std::mem::ManuallyDrop;
use std::os::unix::fs::FileExt;
use std::os::unix::io::FromRawFd;

pub type TransferFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint, jint, jlong);
pub type DirectFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint, jint, jlong) -> jint;
pub type BufferedFn =
    unsafe extern "system" fn(*mut RawJniEnv, jclass, jint, jint, jlong, jint, jlong);

/// A descriptor the JVM owns, borrowed as a `File` that never closes it.
fn borrowed(fd: jint) -> ManuallyDrop<File> {
    // SAFETY: `fd` is an open descriptor of the copy in progress; ManuallyDrop keeps it open.
    ManuallyDrop::new(unsafe { File::from_raw_fd(fd) })
}

/// The bytes from the source's position to its end, as the live copy will read them.
fn source_bytes(src: jint) -> std::io::Result<Vec<u8>> {
    let f = borrowed(src);
    let mut at = (&*f).stream_position()?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read_at(&mut buf, at)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
        at += n as u64;
    }
}

/// One copy: `i` its kind, `live` the JVM's own copy (its return value, 0 for the void
/// forms). Record: the source's bytes, then the live copy and how it ended. Replay: the
/// recorded bytes written to `dst`, or the recorded exception thrown.
fn copy(raw: *mut RawJniEnv, i: usize, dst: jint, src: jint, live: impl Fn() -> jint) -> jint {
    run(KINDS[i], live, |call| {
        let stream = crate::nio::stream_of_fd(src)?;
        let mut c = begin(raw)?;
        let digest = replay_core::digest(&[&stream.to_le_bytes()]);
        match &c.a.core.session {
            Session::Record(_) => {
                let bytes = source_bytes(src);
                let r = call();
                match (pending_exception(&mut c.env), bytes) {
                    (Some(ex), _) => record_one(c.a, i, digest, -1, Some(&ex), None),
                    // The direct form's non-zero return means "not done here" (the JDK
                    // then copies with the buffered form, its own event): no bytes.
                    (None, Ok(_)) if r != 0 => record_one(c.a, i, digest, r.into(), None, None),
                    (None, Ok(b)) => record_one(c.a, i, digest, 0, None, Some(&b)),
                    (None, Err(e)) => {
                        // The copy worked but its bytes could not be read beside it: replay
                        // would write nothing, so say so now rather than be wrong then.
                        eprintln!(
                            "replay: warning: cannot read the source of a Files.copy ({e}); its replay will report a divergence"
                        );
                        let why = format!("java.io.IOException\nthe recording could not read this copy's source: {e}");
                        record_one(c.a, i, digest, -1, Some(why.as_bytes()), None);
                    }
                }
                Some(r)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, i, digest)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                let Some(data) = o.data else {
                    return Some(o.ret as jint);
                };
                if let Err(e) = (&*borrowed(dst)).write_all(&data) {
                    let why = format!("sun.nio.fs.UnixException\n{e}");
                    throw_recorded(&mut c.env, why.as_bytes());
                    return Some(-1);
                }
                Some(o.ret as jint)
            }
        }
    })
}

/// JDK 17: `sun.nio.fs.UnixCopyFile.transfer(int dst, int src, long cancel)`.
pub unsafe extern "system" fn transfer(
    raw: *mut RawJniEnv,
    cls: jclass,
    dst: jint,
    src: jint,
    cancel: jlong,
) {
    // SAFETY (each `orig`): the saved original of this very native, with the JVM's arguments.
    let live = || {
        unsafe { orig::<TransferFn>(COPY_TRANSFER)(raw, cls, dst, src, cancel) };
        0
    };
    copy(raw, COPY_TRANSFER, dst, src, live);
}

/// JDK 21+: `sun.nio.fs.LinuxNativeDispatcher.directCopy0(int dst, int src, long cancel)`.
pub unsafe extern "system" fn direct_copy0(
    raw: *mut RawJniEnv,
    cls: jclass,
    dst: jint,
    src: jint,
    cancel: jlong,
) -> jint {
    let live = || unsafe { orig::<DirectFn>(COPY_DIRECT)(raw, cls, dst, src, cancel) };
    copy(raw, COPY_DIRECT, dst, src, live)
}

/// JDK 21+: `sun.nio.fs.UnixFileSystem.bufferedCopy0(int dst, int src, long buf, int size,
/// long cancel)`, used when the direct copy is not available.
pub unsafe extern "system" fn buffered_copy0(
    raw: *mut RawJniEnv,
    cls: jclass,
    dst: jint,
    src: jint,
    address: jlong,
    size: jint,
    cancel: jlong,
) {
    let live = || {
        unsafe { orig::<BufferedFn>(COPY_BUFFERED)(raw, cls, dst, src, address, size, cancel) };
        0
    };
    copy(raw, COPY_BUFFERED, dst, src, live);
}
