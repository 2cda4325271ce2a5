//! `java.io.FileInputStream`: open, read, skip, available (and `length`/`position`, which
//! `readAllBytes` asks for; `isRegularFile` on JDK 25), hooked by wrapping the class's natives.
//!
//! How (FINDINGS.md "JVM: java.io natives"): the NativeMethodBind event hands us each native's
//! address when the JVM binds it (lazily, at its first call); we keep the original and bind
//! our wrapper instead. These natives are not intrinsics, so compiled code calls the wrapper too.
//!
//! Which calls are events:
//! - An `open0` is an event when the hooks are on (after VMInit), the thread is not already
//!   inside a hook (the core's per-thread guard), class or resource loading does not make it
//!   (src/context.rs: the application class loader reads class files through
//!   FileInputStream; class loading must stay live in replay) and the thread is one whose
//!   calls are events (not a JDK service thread; `ReplayHooks.fileEvent`, which also names the
//!   thread and, in record, hands over its buffered clock events first so events stay in
//!   sequence order). Its input digest is the path; the payload is the stream's number or the
//!   exception (class and message) the open threw.
//! - A stream whose open was an event carries its number as a JVMTI tag; calls on it are
//!   events (input digest: the stream number and the call's argument). Untagged streams
//!   (stdin, class files, streams opened before VMInit or inside another hook) run live in
//!   both modes.
//!
//! Replay never touches the file: a replayed open leaves the stream's descriptor at -1 (so
//! no Cleaner is registered and `close` has nothing to close) and tags it; its reads copy the
//! recorded bytes. A recorded exception is thrown again, same class and message.

use crate::{agent, apply, clear_exception, copy, fsmeta, guarded, java_stack, nio, output, Agent};
use jni::objects::{JByteArray, JClass, JFieldID, JObject, JString, JThrowable};
use jni::signature::{Primitive, ReturnType};
use jni::sys::{
    jboolean, jbyteArray, jclass, jint, jlong, jmethodID, jobject, jstring, JNIEnv as RawJniEnv,
};
use jni::JNIEnv;
use replay_core::guard::HookGuard;
use replay_core::session::Session;
use replay_core::{Payload, PayloadRef};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock};

const FIS: &[&str] = &["Ljava/io/FileInputStream;"];
const RAF: &[&str] = &["Ljava/io/RandomAccessFile;"];
const UFS: &[&str] = &["Ljava/io/UnixFileSystem;"];
const UND: &[&str] = &["Lsun/nio/fs/UnixNativeDispatcher;"];
/// Where FileChannel's reads land (JDK 17; JDK 21 and later moved them to the Unix class).
const DISPATCHER: &[&str] = &[
    "Lsun/nio/ch/FileDispatcherImpl;",
    "Lsun/nio/ch/UnixFileDispatcherImpl;",
];

/// Number of wrapped natives.
pub const COUNT: usize = 58;

/// The wrapped natives, in kind order: (declaring classes, names on JDK 17 / later JDKs,
/// descriptor).
const NATIVES: [(&[&str], &[&str], &str); COUNT] = [
    (FIS, &["open0"], "(Ljava/lang/String;)V"),
    (FIS, &["read0"], "()I"),
    (FIS, &["readBytes"], "([BII)I"),
    (FIS, &["available0"], "()I"),
    (FIS, &["skip0"], "(J)J"),
    (FIS, &["length0"], "()J"),
    (FIS, &["position0"], "()J"),
    (FIS, &["isRegularFile0"], "(Ljava/io/FileDescriptor;)Z"),
    // A FileInputStream's channel (`getChannel`, which `Scanner(File)` reads through) shares
    // its FileDescriptor: the descriptor carries the stream's tag too.
    (DISPATCHER, &["read0"], "(Ljava/io/FileDescriptor;JI)I"),
    (DISPATCHER, &["pread0"], "(Ljava/io/FileDescriptor;JIJ)I"),
    (DISPATCHER, &["size0"], "(Ljava/io/FileDescriptor;)J"),
    (DISPATCHER, &["seek0"], "(Ljava/io/FileDescriptor;J)J"),
    // RandomAccessFile: the same scheme as FileInputStream (tagged object and descriptor).
    // JDK 21 and later renamed `readBytes` and `length` with a trailing 0.
    (RAF, &["open0"], "(Ljava/lang/String;I)V"),
    (RAF, &["read0"], "()I"),
    (RAF, &["readBytes", "readBytes0"], "([BII)I"),
    (RAF, &["getFilePointer"], "()J"),
    (RAF, &["seek0"], "(J)V"),
    (RAF, &["length", "length0"], "()J"),
    // java.io.File's metadata (exists, isFile, isDirectory, canRead, length, lastModified,
    // list, listFiles), src/fsmeta.rs. JDK 21 and later renamed most with a trailing 0.
    (UFS, &["getBooleanAttributes0"], "(Ljava/io/File;)I"),
    (UFS, &["checkAccess", "checkAccess0"], "(Ljava/io/File;I)Z"),
    (
        UFS,
        &["getLastModifiedTime", "getLastModifiedTime0"],
        "(Ljava/io/File;)J",
    ),
    (UFS, &["getLength", "getLength0"], "(Ljava/io/File;)J"),
    (
        UFS,
        &["list", "list0"],
        "(Ljava/io/File;)[Ljava/lang/String;",
    ),
    // NIO opens (`Files.readAllBytes`, `newByteChannel`, `FileChannel.open`, ...), src/nio.rs:
    // a read-only open is an event; its descriptor number goes into a table that the
    // dispatcher wrappers above consult, and the three closes take it out again (they are
    // bookkeeping, never events).
    (UND, &["open0"], "(JII)I"),
    (UND, &["close0"], "(I)V"),
    (&["Ljava/io/FileDescriptor;"], &["close0"], "()V"),
    (&["Ljava/io/FileCleanable;"], &["cleanupClose0"], "(IJ)V"),
    // NIO metadata (`Files.exists`, `isDirectory`, `size`, `readAttributes`, `isReadable`,
    // ...) and directory streams (`Files.list`, `newDirectoryStream`, `walk`), src/nio.rs.
    // JDK 17 throws UnixException from stat0/access0 and has stat1/exists0; JDK 25 returns
    // the errno from stat0/access0 instead: each descriptor is its own entry.
    (UND, &["stat0"], "(JLsun/nio/fs/UnixFileAttributes;)V"),
    (UND, &["stat0"], "(JLsun/nio/fs/UnixFileAttributes;)I"),
    (UND, &["lstat0"], "(JLsun/nio/fs/UnixFileAttributes;)V"),
    (UND, &["stat1"], "(J)I"),
    (UND, &["access0"], "(JI)V"),
    (UND, &["access0"], "(JI)I"),
    (UND, &["exists0"], "(J)Z"),
    (UND, &["opendir0"], "(J)J"),
    (UND, &["fdopendir"], "(I)J"),
    (UND, &["readdir", "readdir0"], "(J)[B"),
    (UND, &["closedir"], "(J)V"),
    // The program's output (src/output.rs): writes reaching fd 1/2, and the exit status.
    (&["Ljava/io/FileOutputStream;"], &["writeBytes"], "([BIIZ)V"),
    (&["Ljava/io/FileOutputStream;"], &["write"], "(IZ)V"),
    (&["Ljava/lang/Shutdown;"], &["halt0"], "(I)V"),
    // A child process starts (`ProcessBuilder`, `Runtime.exec`), src/children.rs.
    (
        &["Ljava/lang/ProcessImpl;"],
        &["forkAndExec"],
        "(I[B[B[BI[BI[B[IZ)I",
    ),
    // JDK 21 and later: a FileChannel's `available` (what `Files.newInputStream(...)`'s
    // `available()` asks, javac's source reader sizes its buffer by it) and `isOther` (asked
    // by its `skip` and `transferTo`), on the descriptor like `size0`.
    (DISPATCHER, &["available0"], "(Ljava/io/FileDescriptor;)I"),
    (DISPATCHER, &["isOther0"], "(Ljava/io/FileDescriptor;)Z"),
    // `Files.copy`'s native copies, descriptor to descriptor (src/copy.rs).
    (&["Lsun/nio/fs/UnixCopyFile;"], &["transfer"], "(IIJ)V"),
    (
        &["Lsun/nio/fs/LinuxNativeDispatcher;"],
        &["directCopy0"],
        "(IIJ)I",
    ),
    (
        &["Lsun/nio/fs/UnixFileSystem;"],
        &["bufferedCopy0"],
        "(IIJIJ)V",
    ),
    // Changes of the file system (src/fsmeta.rs `change`, src/nio.rs `change`): they run
    // live in both modes and return the recorded outcome in replay.
    (
        UFS,
        &["createDirectory", "createDirectory0"],
        "(Ljava/io/File;)Z",
    ),
    (UFS, &["delete0"], "(Ljava/io/File;)Z"),
    (UFS, &["rename0"], "(Ljava/io/File;Ljava/io/File;)Z"),
    (UND, &["mkdir0"], "(JI)V"),
    (UND, &["unlink0"], "(J)V"),
    (UND, &["rmdir0"], "(J)V"),
    (UND, &["rename0"], "(JJ)V"),
    // Bookkeeping, never an event: a replayed channel's force (src/nio.rs `force0`).
    (DISPATCHER, &["force0"], "(Ljava/io/FileDescriptor;Z)I"),
    // `File.getTotalSpace/getFreeSpace/getUsableSpace` (src/fsmeta.rs).
    (UFS, &["getSpace", "getSpace0"], "(Ljava/io/File;I)J"),
    // A RandomAccessFile's writes (ImageIO writes through one): summed per file for the end
    // of the run, never events (src/output.rs `raf_write_bytes`).
    (RAF, &["writeBytes", "writeBytes0"], "([BII)V"),
    (RAF, &["write0"], "(I)V"),
];

/// Kind names, indexed like [`NATIVES`].
pub const KINDS: [&str; COUNT] = [
    "java.io.FileInputStream.open",
    "java.io.FileInputStream.read",
    "java.io.FileInputStream.readBytes",
    "java.io.FileInputStream.available",
    "java.io.FileInputStream.skip",
    "java.io.FileInputStream.length",
    "java.io.FileInputStream.position",
    "java.io.FileInputStream.isRegularFile",
    "sun.nio.ch.FileDispatcher.read",
    "sun.nio.ch.FileDispatcher.pread",
    "sun.nio.ch.FileDispatcher.size",
    "sun.nio.ch.FileDispatcher.seek",
    "java.io.RandomAccessFile.open",
    "java.io.RandomAccessFile.read",
    "java.io.RandomAccessFile.readBytes",
    "java.io.RandomAccessFile.getFilePointer",
    "java.io.RandomAccessFile.seek",
    "java.io.RandomAccessFile.length",
    "java.io.UnixFileSystem.getBooleanAttributes",
    "java.io.UnixFileSystem.checkAccess",
    "java.io.UnixFileSystem.getLastModifiedTime",
    "java.io.UnixFileSystem.getLength",
    "java.io.UnixFileSystem.list",
    "sun.nio.fs.UnixNativeDispatcher.open",
    "sun.nio.fs.UnixNativeDispatcher.close",
    "java.io.FileDescriptor.close",
    "java.io.FileCleanable.cleanupClose",
    // The two forms of stat0 and access0 record the same payload: one kind each.
    "sun.nio.fs.UnixNativeDispatcher.stat",
    "sun.nio.fs.UnixNativeDispatcher.stat",
    "sun.nio.fs.UnixNativeDispatcher.lstat",
    "sun.nio.fs.UnixNativeDispatcher.stat1",
    "sun.nio.fs.UnixNativeDispatcher.access",
    "sun.nio.fs.UnixNativeDispatcher.access",
    "sun.nio.fs.UnixNativeDispatcher.exists",
    "sun.nio.fs.UnixNativeDispatcher.opendir",
    "sun.nio.fs.UnixNativeDispatcher.fdopendir",
    "sun.nio.fs.UnixNativeDispatcher.readdir",
    "sun.nio.fs.UnixNativeDispatcher.closedir",
    // Never event kinds: output events are the core's `output.stdout`/`output.stderr`.
    "java.io.FileOutputStream.writeBytes",
    "java.io.FileOutputStream.write",
    "java.lang.Shutdown.halt",
    "java.lang.ProcessImpl.forkAndExec",
    "sun.nio.ch.FileDispatcher.available",
    "sun.nio.ch.FileDispatcher.isOther",
    "sun.nio.fs.UnixCopyFile.transfer",
    "sun.nio.fs.LinuxNativeDispatcher.directCopy",
    "sun.nio.fs.UnixFileSystem.bufferedCopy",
    "java.io.UnixFileSystem.createDirectory",
    "java.io.UnixFileSystem.delete",
    "java.io.UnixFileSystem.rename",
    "sun.nio.fs.UnixNativeDispatcher.mkdir",
    "sun.nio.fs.UnixNativeDispatcher.unlink",
    "sun.nio.fs.UnixNativeDispatcher.rmdir",
    "sun.nio.fs.UnixNativeDispatcher.rename",
    "sun.nio.ch.FileDispatcher.force",
    "java.io.UnixFileSystem.getSpace",
    "java.io.RandomAccessFile.writeBytes",
    "java.io.RandomAccessFile.write",
];
const OPEN: usize = 0;
const READ: usize = 1;
const READ_BYTES: usize = 2;
const AVAILABLE: usize = 3;
const SKIP: usize = 4;
const LENGTH: usize = 5;
const POSITION: usize = 6;
const IS_REGULAR: usize = 7;
const NIO_READ: usize = 8;
const NIO_PREAD: usize = 9;
const NIO_SIZE: usize = 10;
const NIO_SEEK: usize = 11;
const RAF_OPEN: usize = 12;
const RAF_READ: usize = 13;
const RAF_READ_BYTES: usize = 14;
const RAF_POINTER: usize = 15;
const RAF_SEEK: usize = 16;
const RAF_LENGTH: usize = 17;
pub(crate) const META_ATTRS: usize = 18;
pub(crate) const META_ACCESS: usize = 19;
pub(crate) const META_MTIME: usize = 20;
pub(crate) const META_LENGTH: usize = 21;
pub(crate) const META_LIST: usize = 22;
pub(crate) const NIO_OPEN: usize = 23;
pub(crate) const NIO_CLOSE: usize = 24;
pub(crate) const FD_CLOSE: usize = 25;
pub(crate) const CLEANUP_CLOSE: usize = 26;
pub(crate) const NIO_STAT: usize = 27;
pub(crate) const NIO_STAT_ERRNO: usize = 28;
pub(crate) const NIO_LSTAT: usize = 29;
pub(crate) const NIO_STAT_MODE: usize = 30;
pub(crate) const NIO_ACCESS: usize = 31;
pub(crate) const NIO_ACCESS_ERRNO: usize = 32;
pub(crate) const NIO_EXISTS: usize = 33;
pub(crate) const NIO_OPENDIR: usize = 34;
pub(crate) const NIO_FDOPENDIR: usize = 35;
pub(crate) const NIO_READDIR: usize = 36;
pub(crate) const NIO_CLOSEDIR: usize = 37;
pub(crate) const OUT_WRITE_BYTES: usize = 38;
pub(crate) const OUT_WRITE: usize = 39;
pub(crate) const HALT: usize = 40;
pub(crate) const FORK: usize = 41;
const NIO_AVAILABLE: usize = 42;
const NIO_IS_OTHER: usize = 43;
pub(crate) const COPY_TRANSFER: usize = 44;
pub(crate) const COPY_DIRECT: usize = 45;
pub(crate) const COPY_BUFFERED: usize = 46;
pub(crate) const IO_MKDIR: usize = 47;
pub(crate) const IO_DELETE: usize = 48;
pub(crate) const IO_RENAME: usize = 49;
pub(crate) const NIO_MKDIR: usize = 50;
pub(crate) const NIO_UNLINK: usize = 51;
pub(crate) const NIO_RMDIR: usize = 52;
pub(crate) const NIO_RENAME: usize = 53;
pub(crate) const NIO_FORCE: usize = 54;
pub(crate) const META_SPACE: usize = 55;
pub(crate) const RAF_WRITE_BYTES: usize = 56;
pub(crate) const RAF_WRITE: usize = 57;
/// `RandomAccessFile`'s mode bit for "r": only read-only opens are events (a file opened for
/// writing must really be open in replay, so it stays live).
const RAF_O_RDONLY: jint = 1;

/// The JVM's own implementations, saved when it bound them.
static ORIG: [AtomicPtr<c_void>; COUNT] = [const { AtomicPtr::new(std::ptr::null_mut()) }; COUNT];
/// `ReplayHooks.fileEvent()Z`, set at VMInit once the hook class runs: until then no call is
/// an event.
pub static FILE_EVENT: OnceLock<jni::objects::JStaticMethodID> = OnceLock::new();
/// `ReplayHooks.eventThread()Z`: fileEvent() without its check of fetched clock values.
pub static EVENT_THREAD: OnceLock<jni::objects::JStaticMethodID> = OnceLock::new();
/// Numbers of recorded streams (the JVMTI tag; 0 means "not an event stream").
pub(crate) static NEXT_STREAM: AtomicI64 = AtomicI64::new(1);

type OpenFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jstring);
type IntFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jint;
type BytesFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jbyteArray, jint, jint) -> jint;
type LongFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jlong;
type SkipFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jlong) -> jlong;
type BoolFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jobject) -> jboolean;
type NioReadFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jlong, jint) -> jint;
type NioPreadFn =
    unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jlong, jint, jlong) -> jint;
type NioSizeFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject) -> jlong;
type NioAvailableFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject) -> jint;
type NioIsOtherFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject) -> jboolean;
type NioSeekFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jlong) -> jlong;
type RafOpenFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jstring, jint);
type RafSeekFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jlong);

fn wrapper(i: usize) -> *mut c_void {
    match i {
        OPEN => open0 as OpenFn as *mut c_void,
        READ => read0 as IntFn as *mut c_void,
        READ_BYTES => read_bytes as BytesFn as *mut c_void,
        AVAILABLE => available0 as IntFn as *mut c_void,
        SKIP => skip0 as SkipFn as *mut c_void,
        LENGTH => length0 as LongFn as *mut c_void,
        POSITION => position0 as LongFn as *mut c_void,
        IS_REGULAR => is_regular_file0 as BoolFn as *mut c_void,
        NIO_READ => nio_read0 as NioReadFn as *mut c_void,
        NIO_PREAD => nio_pread0 as NioPreadFn as *mut c_void,
        NIO_SIZE => nio_size0 as NioSizeFn as *mut c_void,
        NIO_SEEK => nio_seek0 as NioSeekFn as *mut c_void,
        RAF_OPEN => raf_open0 as RafOpenFn as *mut c_void,
        RAF_READ => raf_read0 as IntFn as *mut c_void,
        RAF_READ_BYTES => raf_read_bytes as BytesFn as *mut c_void,
        RAF_POINTER => raf_pointer as LongFn as *mut c_void,
        RAF_SEEK => raf_seek0 as RafSeekFn as *mut c_void,
        RAF_LENGTH => raf_length as LongFn as *mut c_void,
        META_ATTRS => fsmeta::attributes as fsmeta::IntFn as *mut c_void,
        META_ACCESS => fsmeta::access as fsmeta::AccessFn as *mut c_void,
        META_MTIME => fsmeta::mtime as fsmeta::LongFn as *mut c_void,
        META_LENGTH => fsmeta::length as fsmeta::LongFn as *mut c_void,
        META_LIST => fsmeta::list as fsmeta::ListFn as *mut c_void,
        NIO_OPEN => nio::open0 as nio::OpenFn as *mut c_void,
        NIO_CLOSE => nio::close0 as nio::CloseFn as *mut c_void,
        FD_CLOSE => nio::fd_close0 as nio::FdCloseFn as *mut c_void,
        CLEANUP_CLOSE => nio::cleanup_close0 as nio::CleanupFn as *mut c_void,
        NIO_STAT => nio::stat0 as nio::StatFn as *mut c_void,
        NIO_STAT_ERRNO => nio::stat0_errno as nio::StatErrnoFn as *mut c_void,
        NIO_LSTAT => nio::lstat0 as nio::StatFn as *mut c_void,
        NIO_STAT_MODE => nio::stat1 as nio::ModeFn as *mut c_void,
        NIO_ACCESS => nio::access0 as nio::AccessFn as *mut c_void,
        NIO_ACCESS_ERRNO => nio::access0_errno as nio::AccessErrnoFn as *mut c_void,
        NIO_EXISTS => nio::exists0 as nio::ExistsFn as *mut c_void,
        NIO_OPENDIR => nio::opendir0 as nio::OpendirFn as *mut c_void,
        NIO_FDOPENDIR => nio::fdopendir as nio::FdopendirFn as *mut c_void,
        NIO_READDIR => nio::readdir as nio::ReaddirFn as *mut c_void,
        NIO_CLOSEDIR => nio::closedir as nio::ClosedirFn as *mut c_void,
        OUT_WRITE_BYTES => output::write_bytes as output::WriteBytesFn as *mut c_void,
        OUT_WRITE => output::write as output::WriteFn as *mut c_void,
        HALT => output::halt0 as output::HaltFn as *mut c_void,
        NIO_AVAILABLE => nio_available0 as NioAvailableFn as *mut c_void,
        NIO_IS_OTHER => nio_is_other0 as NioIsOtherFn as *mut c_void,
        COPY_TRANSFER => copy::transfer as copy::TransferFn as *mut c_void,
        COPY_DIRECT => copy::direct_copy0 as copy::DirectFn as *mut c_void,
        COPY_BUFFERED => copy::buffered_copy0 as copy::BufferedFn as *mut c_void,
        IO_MKDIR => fsmeta::create_directory as fsmeta::FileBoolFn as *mut c_void,
        IO_DELETE => fsmeta::delete0 as fsmeta::FileBoolFn as *mut c_void,
        IO_RENAME => fsmeta::rename0 as fsmeta::RenameFn as *mut c_void,
        NIO_MKDIR => nio::mkdir0 as nio::MkdirFn as *mut c_void,
        NIO_UNLINK => nio::unlink0 as nio::PathFn as *mut c_void,
        NIO_RMDIR => nio::rmdir0 as nio::PathFn as *mut c_void,
        NIO_RENAME => nio::rename0 as nio::RenameFn as *mut c_void,
        NIO_FORCE => nio::force0 as nio::ForceFn as *mut c_void,
        META_SPACE => fsmeta::space as fsmeta::SpaceFn as *mut c_void,
        RAF_WRITE_BYTES => output::raf_write_bytes as output::RafWriteBytesFn as *mut c_void,
        RAF_WRITE => output::raf_write as output::RafWriteFn as *mut c_void,
        _ => crate::children::fork_and_exec as crate::children::ForkFn as *mut c_void,
    }
}

/// A bind of a native we wrap: keeps the JVM's `address` in `orig` and gives the wrapper to
/// bind instead. A rebind of our own wrapper (RegisterNatives again) must not lose the
/// original.
pub(crate) fn bound(
    orig: &AtomicPtr<c_void>,
    address: *mut c_void,
    wrapper: *mut c_void,
) -> *mut c_void {
    if address != wrapper {
        orig.store(address, Ordering::Release);
    }
    wrapper
}

/// The original of native `i`, as type `F`.
///
/// # Safety
/// `F` must be the C signature of `NATIVES[i]`; only called from its wrapper, which the JVM
/// calls only after the bind event stored the original.
pub(crate) unsafe fn orig<F: Copy>(i: usize) -> F {
    let p = ORIG[i].load(Ordering::Acquire);
    std::mem::transmute_copy::<*mut c_void, F>(&p)
}

/// NativeMethodBind: binds our wrapper in place of each FileInputStream native we hook.
///
/// # Safety
/// Called by the JVM with valid pointers (or nulls, which are ignored).
pub unsafe extern "C" fn on_native_bind(
    _jvmti: crate::jvmti::RawEnv,
    jni: *mut RawJniEnv,
    _thread: crate::jvmti::jthread,
    method: jmethodID,
    address: *mut c_void,
    new_address: *mut *mut c_void,
) {
    guarded("NativeMethodBind", (), || {
        let Some(a) = agent() else { return };
        if address.is_null() || new_address.is_null() {
            return;
        }
        // Fails in the primordial phase (method names are not available yet): FileInputStream
        // is not bound that early.
        let Ok((owner, name, sig)) = a.jvmti.method_names(jni, method) else {
            // Primordial phase: `java.io.UnixFileSystem.getBooleanAttributes0` and others
            // are bound that early (during the JDK's own start-up). Kept for `bind_early`.
            if let Ok(mut v) = EARLY.lock() {
                v.push((method as usize, address as usize));
            }
            return;
        };
        if let Some(i) = index_of(&owner, &name, &sig) {
            *new_address = bound(&ORIG[i], address, wrapper(i));
        } else if let Some(w) = crate::net::bind(&owner, &name, &sig, address) {
            *new_address = w;
        } else if let Some(w) = crate::children::bind(&owner, &name, &sig, address) {
            *new_address = w;
        } else if let Some(w) = crate::mgmt::bind(&owner, &name, &sig, address) {
            *new_address = w;
        } else if let Some(w) = crate::mmap::bind(&owner, &name, &sig, address) {
            *new_address = w;
        } else if let Some(w) = crate::pid::bind(&owner, &name, &sig, address) {
            *new_address = w;
        } else if let Some(w) = crate::links::bind(&owner, &name, &sig, address) {
            *new_address = w;
        } else if let Some(w) = crate::environ::bind(&owner, &name, &sig, address) {
            *new_address = w;
        } else if !JDK_PACKAGES.iter().any(|p| owner.starts_with(p)) {
            // A native of the program's own libraries (JRuby's and other jnr/jffi users'
            // libc calls, sqlite-jdbc, netty's epoll): whatever it reads runs live, beyond
            // the hooks. Replay says so at its end instead of passing for faithful.
            a.core.ran_unchecked(PROGRAM_NATIVES);
        }
    })
}

/// Class signature prefixes of the JDK's own natives.
const JDK_PACKAGES: [&str; 8] = [
    "Ljava/",
    "Ljavax/",
    "Ljdk/",
    "Lsun/",
    "Lcom/sun/",
    "Lorg/ietf/",
    "Lorg/w3c/",
    "Lorg/xml/",
];

/// What replay counts for natives of the program's own libraries.
const PROGRAM_NATIVES: &str =
    "native methods of the program's own libraries bound (their calls are not recorded)";

fn index_of(owner: &str, name: &str, sig: &str) -> Option<usize> {
    NATIVES
        .iter()
        .position(|(o, n, s)| n.contains(&name) && *s == sig && o.contains(&owner))
}

/// Natives bound before their names could be read: (jmethodID, the JVM's address).
static EARLY: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// At VMInit, before any call may be an event: makes the JVM bind again each native of the
/// table that it bound in the primordial phase (the bind event could not name it then).
/// `UnregisterNatives` on its class unbinds all of that class's natives; the next call of each
/// looks it up by name again (as at a first call), and that bind event wraps it. (Binding our
/// wrapper with `RegisterNatives` from here makes the JVM warn on stdout about a platform
/// native re-registered from another class loader: there is no Java caller at VMInit.)
pub fn bind_early(env: &mut JNIEnv) {
    let Some(a) = agent() else { return };
    let early = match EARLY.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(_) => return,
    };
    let mut classes: Vec<String> = Vec::new();
    for (method, _) in early {
        let Ok((owner, name, sig)) = a.jvmti.method_names(env.get_raw(), method as jmethodID)
        else {
            continue;
        };
        if (index_of(&owner, &name, &sig).is_some()
            || crate::mgmt::hooked(&owner, &name, &sig)
            || crate::pid::hooked(&owner, &name, &sig)
            || crate::links::hooked(&owner, &name, &sig)
            || crate::environ::hooked(&owner, &name, &sig))
            && !classes.contains(&owner)
        {
            classes.push(owner);
        }
    }
    for owner in classes {
        let Some(class_name) = owner.strip_prefix('L').and_then(|o| o.strip_suffix(';')) else {
            continue;
        };
        let done = env.find_class(class_name).and_then(|class| {
            let r = env.unregister_native_methods(&class);
            let _ = env.delete_local_ref(class);
            r
        });
        if done.is_err() {
            clear_exception(env);
            eprintln!("replay: warning: cannot hook the natives of {class_name}: they run live");
        }
    }
}

/// Runs a wrapped call: `hooked` gets the live call and returns `Some(result)` when it
/// handled the call (recorded or replayed it), `None` to run it live. A panic (an internal
/// error, which disables the agent) never runs the live call twice.
pub(crate) fn run<R: Copy>(
    what: &str,
    live: impl Fn() -> R,
    hooked: impl FnOnce(&dyn Fn() -> R) -> Option<R>,
) -> R {
    let done: Cell<Option<R>> = Cell::new(None);
    let call = || {
        let r = live();
        done.set(Some(r));
        r
    };
    match guarded(what, None, || hooked(&call)) {
        Some(r) => r,
        None => done.get().unwrap_or_else(&live),
    }
}

/// This thread's way into the hooks for one event call: `None` when the call is not an event.
pub(crate) struct Call<'l> {
    pub a: &'static Agent,
    pub env: JNIEnv<'l>,
    _guard: HookGuard,
}

pub(crate) fn begin<'l>(raw: *mut RawJniEnv) -> Option<Call<'l>> {
    begin_with(raw, false)
}

/// [`begin`] for a call on a path (an open, a metadata call): also `None` when class or
/// resource loading makes it (src/context.rs), counted as run live by rule.
pub(crate) fn begin_path<'l>(raw: *mut RawJniEnv) -> Option<Call<'l>> {
    begin_with(raw, true)
}

/// [`begin_path`] for a call that makes no event itself (the open of a file for writing,
/// which only tags the stream): clock values fetched ahead for the thread are no divergence
/// here (the recording read the clock after this call, which was not an event there either).
pub(crate) fn begin_tag<'l>(raw: *mut RawJniEnv) -> Option<Call<'l>> {
    begin_with_helper(raw, true, *EVENT_THREAD.get()?)
}

fn begin_with<'l>(raw: *mut RawJniEnv, path: bool) -> Option<Call<'l>> {
    begin_with_helper(raw, path, *FILE_EVENT.get()?)
}

fn begin_with_helper<'l>(
    raw: *mut RawJniEnv,
    path: bool,
    helper: jni::objects::JStaticMethodID,
) -> Option<Call<'l>> {
    let a = agent()?;
    // Nested (inside another hook, or the helper's own class loading below): live.
    let guard = HookGuard::enter()?;
    if path && crate::context::class_loading(a, raw) {
        a.core.ran_live(LIVE_CLASS_LOADING);
        return None;
    }
    // SAFETY: the JNIEnv of the calling thread, passed to the native by the JVM.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    let cls: &JClass = a.hooks.get()?.as_obj().into();
    // SAFETY: the method ID of `static boolean fileEvent()` in that class.
    let r = unsafe {
        env.call_static_method_unchecked(
            cls,
            helper,
            ReturnType::Primitive(Primitive::Boolean),
            &[],
        )
    };
    if clear_exception(&mut env) {
        return None;
    }
    if !r.ok()?.z().ok()? {
        // After VMInit fileEvent says no only for a JDK service thread (or once the agent
        // stopped at VMDeath): its file calls run live in replay too.
        a.core.ran_live("file calls of JDK service threads");
        return None;
    }
    Some(Call {
        a,
        env,
        _guard: guard,
    })
}

/// The pending exception, as `class\nmessage` (no `\n` without a message), left pending.
pub(crate) fn pending_exception(env: &mut JNIEnv) -> Option<Vec<u8>> {
    if !env.exception_check().unwrap_or(false) {
        return None;
    }
    let Ok(ex) = env.exception_occurred() else {
        return Some(b"java.io.IOException".to_vec());
    };
    let _ = env.exception_clear();
    let mut out = describe(env, &ex).unwrap_or_else(|| b"java.io.IOException".to_vec());
    clear_exception(env);
    let _ = env.throw(ex);
    out.shrink_to_fit();
    Some(out)
}

fn describe(env: &mut JNIEnv, ex: &JThrowable) -> Option<Vec<u8>> {
    let cls = env.get_object_class(ex).ok()?;
    let name = env
        .call_method(&cls, "getName", "()Ljava/lang/String;", &[])
        .ok()?
        .l()
        .ok()?;
    let name: String = env.get_string(&JString::from(name)).ok()?.into();
    let msg = env
        .call_method(ex, "getMessage", "()Ljava/lang/String;", &[])
        .ok()?
        .l()
        .ok()?;
    let mut out = name.into_bytes();
    if !msg.is_null() {
        let msg: String = env.get_string(&JString::from(msg)).ok()?.into();
        out.push(b'\n');
        out.extend_from_slice(msg.as_bytes());
    }
    Some(out)
}

/// Throws what [`pending_exception`] recorded: same class (IOException if it cannot be
/// found) and message.
pub(crate) fn throw_recorded(env: &mut JNIEnv, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (class, msg) = match text.split_once('\n') {
        Some((c, m)) => (c, Some(m)),
        None => (&*text, None),
    };
    let class = match env.find_class(class.replace('.', "/")) {
        Ok(c) => c,
        Err(_) => {
            let _ = env.exception_clear();
            match env.find_class("java/io/IOException") {
                Ok(c) => c,
                Err(_) => return,
            }
        }
    };
    match msg {
        Some(m) => {
            let _ = env.throw_new(&class, m);
        }
        None => {
            let raw = env.get_raw();
            // SAFETY: a valid env and class; JNI allows a null message.
            unsafe {
                if let Some(f) = (**raw).ThrowNew {
                    f(raw, class.as_raw(), std::ptr::null());
                }
            }
        }
    }
}

pub(crate) struct Outcome {
    pub ret: i64,
    pub thrown: bool,
    /// The recorded errno (non-zero when the call threw).
    pub errno: i64,
    pub data: Option<Vec<u8>>,
}

/// Replays one call of the event kind `kind` (named `name` in a report of a payload of
/// another shape); `None`: run it live (policy went live, or such a payload).
pub(crate) fn replay_outcome(c: &mut Call, kind: u32, name: &str, digest: u64) -> Option<Outcome> {
    let a = c.a;
    let env = std::cell::RefCell::new(&mut c.env);
    let stack = || java_stack(a, &mut env.borrow_mut());
    let e = apply(a.core.replay(kind, 0, Some(digest), &stack))?;
    match e.payload {
        Payload::Ret { ret, errno, data } => Some(Outcome {
            ret,
            thrown: errno != 0,
            errno: errno as i64,
            data: data.map(|d| d.to_vec()),
        }),
        other => {
            crate::internal_error(
                Some(&mut c.env),
                &format!(
                    "event {} ({name}) holds {} instead of a call's outcome",
                    e.seq,
                    other.summary()
                ),
            );
            None
        }
    }
}

/// Replays one call of kind `i`; `None` means run it live (no event, or policy said live).
pub(crate) fn replay_one(c: &mut Call, i: usize, digest: u64) -> Option<Outcome> {
    let env = std::cell::RefCell::new(&mut c.env);
    let stack = || java_stack(c.a, &mut env.borrow_mut());
    match apply(c.a.core.replay(c.a.files[i], 0, Some(digest), &stack)) {
        Some(e) => match e.payload {
            Payload::Ret { ret, errno, data } => Some(Outcome {
                ret,
                thrown: errno != 0,
                errno: errno as i64,
                data: data.map(|d| d.to_vec()),
            }),
            other => {
                if !c.a.bad_payload.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "replay: event {} ({}) holds {} instead of a call's outcome; the call runs live",
                        e.seq,
                        KINDS[i],
                        other.summary()
                    );
                }
                None
            }
        },
        None => None,
    }
}

pub(crate) fn record_one(
    a: &Agent,
    i: usize,
    digest: u64,
    ret: i64,
    thrown: Option<&[u8]>,
    data: Option<&[u8]>,
) {
    let payload = match thrown {
        Some(ex) => PayloadRef::Ret {
            ret: -1,
            errno: 1,
            data: Some(ex),
        },
        None => PayloadRef::Ret {
            ret,
            errno: 0,
            data,
        },
    };
    crate::record_direct(a, a.files[i], 0, Some(digest), payload);
}

fn stream_digest(stream: jlong, arg: i64) -> u64 {
    replay_core::digest(&[&stream.to_le_bytes(), &arg.to_le_bytes()])
}

/// What [`Core::ran_live`](replay_core::session::Core::ran_live) counts for file calls left
/// live because class or resource loading makes them (src/context.rs).
pub(crate) const LIVE_CLASS_LOADING: &str = "file calls of class and resource loading";

/// Counts one call let through live by rule (replay only; the core ignores it in record).
pub(crate) fn a_live(what: &'static str) {
    if let Some(a) = agent() {
        a.core.ran_live(what);
    }
}

unsafe extern "system" fn open0(raw: *mut RawJniEnv, this: jobject, path: jstring) {
    // SAFETY (all the `orig` calls): the saved original of this very native.
    let live = || unsafe { orig::<OpenFn>(OPEN)(raw, this, path) };
    open_stream(raw, this, path, OPEN, live)
}

unsafe extern "system" fn raf_open0(raw: *mut RawJniEnv, this: jobject, path: jstring, mode: jint) {
    let live = || unsafe { orig::<RafOpenFn>(RAF_OPEN)(raw, this, path, mode) };
    if mode != RAF_O_RDONLY {
        // Opened for writing: the file must really be open in replay too, so this stays live,
        // and so do its reads; they are checked instead (VERIFIED).
        live();
        let _ = (|| -> Option<()> {
            agent()?;
            FILE_EVENT.get()?;
            let mut c = begin_tag(raw)?;
            if c.env.exception_check().unwrap_or(true) {
                return None;
            }
            tag_stream(&mut c, this, RAF_OPEN, VERIFIED);
            Some(())
        })();
        return;
    }
    open_stream(raw, this, path, RAF_OPEN, live)
}

/// The tag of a stream open for writing (`RandomAccessFile` "rw", and the FileDescriptor its
/// channel uses): its calls run live in replay too, since the file is really open and written,
/// and each read, length, position or seek is an event whose input digest is what the call
/// returned (and the bytes it read), so a replay that reads other bytes than the recording
/// (the file changed, say) is a divergence instead of a silently different run.
const VERIFIED: jlong = -1;

/// Record or check call `i` of a [`VERIFIED`] stream, which ran live and returned `r` (and
/// read `bytes`); `arg` is the call's argument. An exception it left pending goes on.
fn verified(c: &mut Call, i: usize, arg: i64, r: i64, bytes: &[u8]) -> Option<()> {
    let thrown = c.env.exception_check().unwrap_or(false);
    let digest = replay_core::digest(&[
        &(i as u64).to_le_bytes(),
        &arg.to_le_bytes(),
        &r.to_le_bytes(),
        &[thrown as u8],
        bytes,
    ]);
    match &c.a.core.session {
        Session::Record(_) => record_one(c.a, i, digest, r, None, None),
        Session::Replay(_) => {
            replay_one(c, i, digest)?;
        }
    }
    Some(())
}

/// An open of a FileInputStream or RandomAccessFile (`i`): its input digest is the path, its
/// payload the stream's number or the exception.
fn open_stream(raw: *mut RawJniEnv, this: jobject, path: jstring, i: usize, live: impl Fn()) {
    run(KINDS[i], live, |call| {
        agent()?;
        FILE_EVENT.get()?;
        // SAFETY: the thread's JNIEnv; `path` is the call's argument (a local reference).
        let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
        if path.is_null() {
            return None; // the live call throws the NullPointerException
        }
        let p = unsafe { JString::from_raw(path) };
        let name: String = env.get_string(&p).ok()?.into();
        let mut c = begin_path(raw)?;
        let digest = replay_core::digest(&[name.as_bytes()]);
        match &c.a.core.session {
            Session::Record(_) => {
                call();
                match pending_exception(&mut c.env) {
                    Some(ex) => record_one(c.a, i, digest, -1, Some(&ex), None),
                    None => {
                        let id = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
                        // An untagged stream is simply live; recording the open still holds.
                        tag_stream(&mut c, this, i, id);
                        record_one(c.a, i, digest, id, None, None);
                    }
                }
                Some(())
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, i, digest)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                } else {
                    let id = if o.ret > 0 {
                        o.ret
                    } else {
                        NEXT_STREAM.fetch_add(1, Ordering::Relaxed)
                    };
                    if !tag_stream(&mut c, this, i, id) {
                        // The stream could not be marked: open it for real instead.
                        return None;
                    }
                }
                Some(())
            }
        }
    })
}

/// Marks a stream and its FileDescriptor (which its channel reads through) as stream `id`;
/// `open` is the open's kind (FileInputStream's or RandomAccessFile's). Returns whether the
/// stream itself got the tag.
fn tag_stream(c: &mut Call, this: jobject, open: usize, id: jlong) -> bool {
    if c.a.jvmti.set_tag(this, id).is_err() {
        return false;
    }
    static FIS_FD: OnceLock<JFieldID> = OnceLock::new();
    static RAF_FD: OnceLock<JFieldID> = OnceLock::new();
    let (cache, class) = if open == RAF_OPEN {
        (&RAF_FD, "java/io/RandomAccessFile")
    } else {
        (&FIS_FD, "java/io/FileInputStream")
    };
    let fd_sig = "Ljava/io/FileDescriptor;";
    let Some(field) = fsmeta::field_id(&mut c.env, cache, class, "fd", fd_sig) else {
        return true;
    };
    // SAFETY: `this` is the native's receiver, a live local reference we do not delete.
    let stream = unsafe { JObject::from_raw(this) };
    match c
        .env
        .get_field_unchecked(&stream, field, ReturnType::Object)
        .and_then(|v| v.l())
    {
        Ok(fd) if !fd.is_null() => {
            let _ = c.a.jvmti.set_tag(fd.as_raw(), id);
            let _ = c.env.delete_local_ref(fd);
        }
        _ => {
            clear_exception(&mut c.env);
        }
    }
    true
}

/// The stream's number if call `i` on `this` is an event: its tag, or for a dispatcher call
/// the number of the NIO open that gave the FileDescriptor its descriptor.
fn stream_for(raw: *mut RawJniEnv, this: jobject, i: usize) -> Option<jlong> {
    stream_of(this).or_else(|| {
        if (NIO_READ..=NIO_SEEK).contains(&i) || i == NIO_AVAILABLE || i == NIO_IS_OTHER {
            nio::stream_of_descriptor(raw, this)
        } else if matches!(
            i,
            READ | READ_BYTES | AVAILABLE | SKIP | LENGTH | POSITION | IS_REGULAR
        ) {
            // Another stream on a replayed stdin (src/stdin.rs).
            crate::stdin::shared(raw, this)
        } else {
            None
        }
    })
}

/// The stream number of a FileDescriptor whose calls are events: its tag, or the NIO open
/// that gave it its descriptor.
pub(crate) fn orig_stream(raw: *mut RawJniEnv, fd: jobject) -> Option<jlong> {
    stream_of(fd).or_else(|| nio::stream_of_descriptor(raw, fd))
}

/// The stream's number if calls on it are events.
fn stream_of(this: jobject) -> Option<jlong> {
    let a = agent()?;
    a.jvmti.tag(this).ok().filter(|&t| t != 0)
}

/// One call on a stream returning a number (read0, available0, skip0, length0, position0,
/// isRegularFile0): the number, or the exception, is the payload.
fn scalar(raw: *mut RawJniEnv, this: jobject, i: usize, arg: i64, live: impl Fn() -> i64) -> i64 {
    run(KINDS[i], live, |call| {
        let stream = stream_for(raw, this, i)?;
        let mut c = begin(raw)?;
        if stream == VERIFIED {
            let r = call();
            verified(&mut c, i, arg, r, &[]);
            return Some(r);
        }
        scalar_event(&mut c, i, stream_digest(stream, arg), call)
    })
}

/// Records or replays one event call `i` returning a number: in record `call` runs it live and
/// the number, or the exception it left pending, is the payload; in replay the recorded number
/// comes back, or the recorded exception is thrown again. The stream calls here and the path
/// calls of src/fsmeta.rs share it; they differ only in their input digest.
pub(crate) fn scalar_event(
    c: &mut Call,
    i: usize,
    digest: u64,
    call: &dyn Fn() -> i64,
) -> Option<i64> {
    match &c.a.core.session {
        Session::Record(_) => {
            let r = call();
            let ex = pending_exception(&mut c.env);
            record_one(c.a, i, digest, r, ex.as_deref(), None);
            Some(r)
        }
        Session::Replay(_) => {
            let o = replay_one(c, i, digest)?;
            if o.thrown {
                throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
            }
            Some(o.ret)
        }
    }
}

unsafe extern "system" fn read0(raw: *mut RawJniEnv, this: jobject) -> jint {
    if let Some(pipe) = crate::children::pipe_of(raw, this) {
        let r = unsafe { orig::<IntFn>(READ)(raw, this) };
        crate::children::read_byte(pipe, r);
        return r;
    }
    let live = || unsafe { orig::<IntFn>(READ)(raw, this) } as i64;
    scalar(raw, this, READ, 0, live) as jint
}

unsafe extern "system" fn available0(raw: *mut RawJniEnv, this: jobject) -> jint {
    let live = || unsafe { orig::<IntFn>(AVAILABLE)(raw, this) } as i64;
    scalar(raw, this, AVAILABLE, 0, live) as jint
}

unsafe extern "system" fn skip0(raw: *mut RawJniEnv, this: jobject, n: jlong) -> jlong {
    let live = || unsafe { orig::<SkipFn>(SKIP)(raw, this, n) };
    scalar(raw, this, SKIP, n, live)
}

unsafe extern "system" fn length0(raw: *mut RawJniEnv, this: jobject) -> jlong {
    let live = || unsafe { orig::<LongFn>(LENGTH)(raw, this) };
    scalar(raw, this, LENGTH, 0, live)
}

unsafe extern "system" fn position0(raw: *mut RawJniEnv, this: jobject) -> jlong {
    let live = || unsafe { orig::<LongFn>(POSITION)(raw, this) };
    scalar(raw, this, POSITION, 0, live)
}

unsafe extern "system" fn is_regular_file0(
    raw: *mut RawJniEnv,
    this: jobject,
    fd: jobject,
) -> jboolean {
    let live = || unsafe { orig::<BoolFn>(IS_REGULAR)(raw, this, fd) } as i64;
    (scalar(raw, this, IS_REGULAR, 0, live) != 0) as jboolean
}

unsafe extern "system" fn read_bytes(
    raw: *mut RawJniEnv,
    this: jobject,
    b: jbyteArray,
    off: jint,
    len: jint,
) -> jint {
    if let Some(pipe) = crate::children::pipe_of(raw, this) {
        // A child's pipe (src/children.rs): read live, what was read is a side record.
        let n = unsafe { orig::<BytesFn>(READ_BYTES)(raw, this, b, off, len) };
        crate::children::read_bytes(raw, pipe, b, off, n);
        return n;
    }
    let live = || unsafe { orig::<BytesFn>(READ_BYTES)(raw, this, b, off, len) };
    stream_read(raw, this, READ_BYTES, b, off, len, live)
}

/// A stream's `readBytes` (`i`: FileInputStream's or RandomAccessFile's): count and bytes read
/// into `b[off..]`, or the exception, are the payload.
fn stream_read(
    raw: *mut RawJniEnv,
    this: jobject,
    i: usize,
    b: jbyteArray,
    off: jint,
    len: jint,
    live: impl Fn() -> jint,
) -> jint {
    run(KINDS[i], live, |call| {
        let stream = stream_of(this)?;
        let mut c = begin(raw)?;
        let digest = stream_digest(stream, len as i64);
        // SAFETY: the call's array argument, a local reference we do not delete.
        let arr = unsafe { JByteArray::from_raw(b) };
        if stream == VERIFIED {
            let n = call();
            let mut buf = vec![0i8; n.clamp(0, len.max(0)) as usize];
            if !c.env.exception_check().unwrap_or(true)
                && n > 0
                && c.env.get_byte_array_region(&arr, off, &mut buf).is_err()
            {
                clear_exception(&mut c.env);
                return Some(n);
            }
            let bytes: Vec<u8> = buf.iter().map(|&x| x as u8).collect();
            verified(&mut c, i, len as i64, n as i64, &bytes);
            return Some(n);
        }
        match &c.a.core.session {
            Session::Record(_) => {
                let n = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record_one(c.a, i, digest, -1, Some(&ex), None);
                    return Some(n);
                }
                let mut buf = vec![0i8; n.max(0) as usize];
                if n > 0 && c.env.get_byte_array_region(&arr, off, &mut buf).is_err() {
                    clear_exception(&mut c.env);
                    // The read happened but its bytes cannot be seen: stop recording.
                    crate::internal_error(Some(&mut c.env), "cannot read a file stream's buffer");
                    return Some(n);
                }
                let bytes: Vec<u8> = buf.iter().map(|&x| x as u8).collect();
                record_one(c.a, i, digest, n as i64, None, Some(&bytes));
                Some(n)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, i, digest)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                let data = o.data.unwrap_or_default();
                let n = o.ret;
                if n > 0 {
                    if n as usize != data.len() || n > len as i64 {
                        crate::internal_error(
                            Some(&mut c.env),
                            "a recorded file stream read does not fit the buffer",
                        );
                        return None;
                    }
                    let signed: Vec<i8> = data.iter().map(|&x| x as i8).collect();
                    if c.env.set_byte_array_region(&arr, off, &signed).is_err() {
                        clear_exception(&mut c.env);
                        return None;
                    }
                }
                Some(n as jint)
            }
        }
    })
}

// FileChannel reads of a tagged FileDescriptor: `address` is the JDK's native buffer of `len`
// bytes (a direct or temporary direct buffer).

/// A channel read (`read0`, `pread0`): the bytes at `address` are the payload.
fn nio_read(
    raw: *mut RawJniEnv,
    fd: jobject,
    i: usize,
    address: jlong,
    len: jint,
    arg: i64,
    live: impl Fn() -> jint,
) -> jint {
    run(KINDS[i], live, |call| {
        let stream = stream_for(raw, fd, i)?;
        let mut c = begin(raw)?;
        let digest = stream_digest(stream, arg);
        if stream == VERIFIED {
            let n = call();
            let bytes =
                (!c.env.exception_check().unwrap_or(true) && n > 0 && n <= len && address != 0)
                    .then(|| {
                        // SAFETY: the read just put n bytes at `address`, a buffer of len bytes.
                        unsafe { std::slice::from_raw_parts(address as *const u8, n as usize) }
                    });
            verified(&mut c, i, arg, n as i64, bytes.unwrap_or_default());
            return Some(n);
        }
        match &c.a.core.session {
            Session::Record(_) => {
                let n = call();
                let ex = pending_exception(&mut c.env);
                let bytes = (ex.is_none() && n > 0 && n <= len && address != 0).then(|| {
                    // SAFETY: the read just put n bytes at `address`, a buffer of len bytes.
                    unsafe { std::slice::from_raw_parts(address as *const u8, n as usize) }
                });
                record_one(c.a, i, digest, n as i64, ex.as_deref(), bytes);
                Some(n)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, i, digest)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                let data = o.data.unwrap_or_default();
                if o.ret > 0 {
                    if o.ret as usize != data.len() || o.ret > len as i64 || address == 0 {
                        crate::internal_error(
                            Some(&mut c.env),
                            "a recorded FileChannel read does not fit the buffer",
                        );
                        return None;
                    }
                    // SAFETY: the JDK's buffer at `address` holds len >= data.len() bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(data.as_ptr(), address as *mut u8, data.len())
                    };
                }
                Some(o.ret as jint)
            }
        }
    })
}

unsafe extern "system" fn nio_read0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    address: jlong,
    len: jint,
) -> jint {
    let live = || unsafe { orig::<NioReadFn>(NIO_READ)(raw, cls, fd, address, len) };
    nio_read(raw, fd, NIO_READ, address, len, len as i64, live)
}

unsafe extern "system" fn nio_pread0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    address: jlong,
    len: jint,
    position: jlong,
) -> jint {
    let live = || unsafe { orig::<NioPreadFn>(NIO_PREAD)(raw, cls, fd, address, len, position) };
    // The digest holds the position: a read elsewhere in the file is another call.
    let arg = position.wrapping_mul(1 << 32) ^ len as i64;
    nio_read(raw, fd, NIO_PREAD, address, len, arg, live)
}

unsafe extern "system" fn nio_size0(raw: *mut RawJniEnv, cls: jclass, fd: jobject) -> jlong {
    let live = || unsafe { orig::<NioSizeFn>(NIO_SIZE)(raw, cls, fd) };
    scalar(raw, fd, NIO_SIZE, 0, live)
}

unsafe extern "system" fn nio_available0(raw: *mut RawJniEnv, cls: jclass, fd: jobject) -> jint {
    let live = || unsafe { orig::<NioAvailableFn>(NIO_AVAILABLE)(raw, cls, fd) } as i64;
    scalar(raw, fd, NIO_AVAILABLE, 0, live) as jint
}

unsafe extern "system" fn nio_is_other0(raw: *mut RawJniEnv, cls: jclass, fd: jobject) -> jboolean {
    let live = || unsafe { orig::<NioIsOtherFn>(NIO_IS_OTHER)(raw, cls, fd) } as i64;
    (scalar(raw, fd, NIO_IS_OTHER, 0, live) != 0) as jboolean
}

unsafe extern "system" fn nio_seek0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    offset: jlong,
) -> jlong {
    let live = || unsafe { orig::<NioSeekFn>(NIO_SEEK)(raw, cls, fd, offset) };
    scalar(raw, fd, NIO_SEEK, offset, live)
}

// RandomAccessFile (opened "r"): the tagged object's calls, like FileInputStream's. Replay
// never touches the file: the file pointer and length are the recorded ones.

unsafe extern "system" fn raf_read0(raw: *mut RawJniEnv, this: jobject) -> jint {
    let live = || unsafe { orig::<IntFn>(RAF_READ)(raw, this) } as i64;
    scalar(raw, this, RAF_READ, 0, live) as jint
}

unsafe extern "system" fn raf_read_bytes(
    raw: *mut RawJniEnv,
    this: jobject,
    b: jbyteArray,
    off: jint,
    len: jint,
) -> jint {
    let live = || unsafe { orig::<BytesFn>(RAF_READ_BYTES)(raw, this, b, off, len) };
    stream_read(raw, this, RAF_READ_BYTES, b, off, len, live)
}

unsafe extern "system" fn raf_pointer(raw: *mut RawJniEnv, this: jobject) -> jlong {
    let live = || unsafe { orig::<LongFn>(RAF_POINTER)(raw, this) };
    scalar(raw, this, RAF_POINTER, 0, live)
}

unsafe extern "system" fn raf_seek0(raw: *mut RawJniEnv, this: jobject, pos: jlong) {
    let live = || {
        unsafe { orig::<RafSeekFn>(RAF_SEEK)(raw, this, pos) };
        0
    };
    // The position is the digest's argument: seeking elsewhere is another call.
    scalar(raw, this, RAF_SEEK, pos, live);
}

unsafe extern "system" fn raf_length(raw: *mut RawJniEnv, this: jobject) -> jlong {
    let live = || unsafe { orig::<LongFn>(RAF_LENGTH)(raw, this) };
    scalar(raw, this, RAF_LENGTH, 0, live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natives_and_kinds_line_up() {
        assert_eq!(NATIVES.len(), KINDS.len());
        for (i, (_, names, _)) in NATIVES.iter().enumerate() {
            let n = names[0];
            let short = n.trim_end_matches('0').trim_end_matches("Bytes");
            let k = KINDS[i].rsplit('.').next().unwrap();
            assert_eq!(k.trim_end_matches("Bytes"), short, "{n}");
        }
        let mut w: Vec<usize> = (0..NATIVES.len()).map(|i| wrapper(i) as usize).collect();
        w.dedup();
        assert_eq!(w.len(), NATIVES.len(), "one wrapper per native");
    }
}
