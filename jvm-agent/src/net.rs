//! Client sockets and name resolution, at the byte level, on JDK 17 and 25.
//!
//! Every client socket of the JDK is a NIO socket: `java.net.Socket` is `NioSocketImpl`
//! (JDK 13+), `SocketChannel` is `SocketChannelImpl`, and `HttpURLConnection`, `HttpClient`
//! and TLS (`SSLSocketImpl`, `SSLEngine` over a channel) sit on top of them. Their natives:
//! - `sun.nio.ch.Net.connect0` connects a descriptor `socket0` made (blocking, or returning
//!   "in progress" for a non-blocking channel, finished by `Net.pollConnect`). A connect is an
//!   event (input digest: address and port; payload: the result and the socket's number, or
//!   the exception, `ConnectException: Connection refused` say). The descriptor then goes
//!   into [`SOCKS`] with the socket's number: calls on it are events until its close.
//! - Reads: `SocketDispatcher.read0`/`readv0` (payload: the bytes). Writes: JDK 17's
//!   `FileDispatcherImpl.write0`/`writev0`, JDK 25's `SocketDispatcher.write0`/`writev0`
//!   (input digest: the bytes written, so a request that differs is a divergence; payload:
//!   the count the kernel took). `Net.poll` (timed reads, non-blocking connects),
//!   `Net.localPort`, `Net.available`: payload the number.
//! - Selectors (`HttpClient`'s `SelectorManager`, any NIO program): `EPoll.wait` on an epoll
//!   descriptor where an event socket is registered is an event. Its payload is each ready
//!   entry, the socket's number for an event socket, else the live descriptor (the
//!   selector's wake-up pipe or eventfd).
//! - Names: `Inet4AddressImpl`/`Inet6AddressImpl.lookupAllHostAddr` (payload: the addresses,
//!   or the `UnknownHostException`), `getLocalHostName`, `getHostByAddr`.
//!
//! Replay never connects a recorded connection. `socket0` still runs, so the program holds
//! a real (never connected) socket: option calls, `configureBlocking`, close and the
//! Cleaner work on it unchanged. `connect0` is not called; reads copy the recorded bytes,
//! writes compare and return the recorded count, `shutdown` does nothing. Such a socket is
//! never added to a real epoll set (`EPoll.ctl` returns success), so a replayed `EPoll.wait`
//! serves the recorded readiness of sockets; when the recorded wait also woke on a live
//! descriptor (a `Selector.wakeup` by another thread), replay waits for that descriptor for
//! real (bounded), which keeps the hand-over between the waking thread and the selector as
//! it was.
//!
//! A server in the program (`ServerSocket`, `ServerSocketChannel`, `HttpServer`): its
//! `listen` is an event and the listening socket an event socket, so the readiness its
//! selector or `accept`'s park sees is recorded; each `accept` is an event holding the new
//! socket's number and the peer's address, and the accepted connection is an event socket
//! like a client's. Replay accepts nothing: the listening socket stays out of the real epoll
//! set, and each recorded accept hands the server a fresh unconnected socket whose calls are
//! served from the log, so a server replays with its clients gone. A connect to a port the
//! program itself listens on runs live (its peer is that live server), and so does the
//! server's accept of it (its peer port is one of the program's own client sockets).

use crate::fileio::{begin, pending_exception, run, throw_recorded, Call, Outcome};
use crate::{agent, clear_exception, fsmeta, guarded};
use jni::objects::{JByteArray, JFieldID, JObject, JObjectArray, JString, JValue};
use jni::signature::{Primitive, ReturnType};
use jni::sys::{
    jboolean, jbyteArray, jclass, jint, jlong, jobject, jobjectArray, jstring, JNIEnv as RawJniEnv,
};
use jni::JNIEnv;
use replay_core::session::Session;
use replay_core::PayloadRef;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

const NET: &[&str] = &["Lsun/nio/ch/Net;"];
const SD: &[&str] = &["Lsun/nio/ch/SocketDispatcher;"];
/// Socket writes: JDK 17 writes through the file dispatcher, JDK 21+ has its own. File
/// writes (JDK 17's file dispatcher, JDK 21+'s Unix one) pass here too: a write to a
/// descriptor a NIO open for writing gave is summed for the end of the run (src/nio.rs
/// `WRITTEN`).
const WRITERS: &[&str] = &[
    "Lsun/nio/ch/FileDispatcherImpl;",
    "Lsun/nio/ch/SocketDispatcher;",
    "Lsun/nio/ch/UnixFileDispatcherImpl;",
];
/// Where a socket's descriptor is closed (JDK 17; JDK 21+).
const CLOSERS: &[&str] = &[
    "Lsun/nio/ch/FileDispatcherImpl;",
    "Lsun/nio/ch/UnixDispatcher;",
];
const EPOLL: &[&str] = &["Lsun/nio/ch/EPoll;"];
const INET: &[&str] = &["Ljava/net/Inet4AddressImpl;", "Ljava/net/Inet6AddressImpl;"];

pub const COUNT: usize = 20;

/// The wrapped natives: (declaring classes, name, descriptor), in kind order.
const NATIVES: [(&[&str], &str, &str); COUNT] = [
    (
        NET,
        "connect0",
        "(ZLjava/io/FileDescriptor;Ljava/net/InetAddress;I)I",
    ),
    (NET, "pollConnect", "(Ljava/io/FileDescriptor;J)Z"),
    (NET, "poll", "(Ljava/io/FileDescriptor;IJ)I"),
    (NET, "localPort", "(Ljava/io/FileDescriptor;)I"),
    (NET, "available", "(Ljava/io/FileDescriptor;)I"),
    (SD, "read0", "(Ljava/io/FileDescriptor;JI)I"),
    (SD, "readv0", "(Ljava/io/FileDescriptor;JI)J"),
    (WRITERS, "write0", "(Ljava/io/FileDescriptor;JI)I"),
    (WRITERS, "writev0", "(Ljava/io/FileDescriptor;JI)J"),
    (EPOLL, "wait", "(IJII)I"),
    (
        INET,
        "lookupAllHostAddr",
        "(Ljava/lang/String;)[Ljava/net/InetAddress;",
    ),
    (
        INET,
        "lookupAllHostAddr",
        "(Ljava/lang/String;I)[Ljava/net/InetAddress;",
    ),
    (INET, "getLocalHostName", "()Ljava/lang/String;"),
    (INET, "getHostByAddr", "([B)Ljava/lang/String;"),
    // Bookkeeping, never events.
    (NET, "shutdown", "(Ljava/io/FileDescriptor;I)V"),
    (CLOSERS, "close0", "(Ljava/io/FileDescriptor;)V"),
    (EPOLL, "ctl", "(IIII)I"),
    (NET, "listen", "(Ljava/io/FileDescriptor;I)V"),
    (
        NET,
        "accept",
        "(Ljava/io/FileDescriptor;Ljava/io/FileDescriptor;[Ljava/net/InetSocketAddress;)I",
    ),
    (
        NET,
        "bind0",
        "(Ljava/io/FileDescriptor;ZZLjava/net/InetAddress;I)V",
    ),
];

/// Event kind names, indexed like [`NATIVES`].
const KINDS: [&str; COUNT] = [
    "sun.nio.ch.Net.connect",
    "sun.nio.ch.Net.pollConnect",
    "sun.nio.ch.Net.poll",
    "sun.nio.ch.Net.localPort",
    "sun.nio.ch.Net.available",
    "sun.nio.ch.SocketDispatcher.read",
    "sun.nio.ch.SocketDispatcher.readv",
    "sun.nio.ch.SocketDispatcher.write",
    "sun.nio.ch.SocketDispatcher.writev",
    "sun.nio.ch.EPoll.wait",
    "java.net.InetAddress.lookupAllHostAddr",
    "java.net.InetAddress.lookupAllHostAddr",
    "java.net.InetAddress.getLocalHostName",
    "java.net.InetAddress.getHostByAddr",
    "sun.nio.ch.Net.shutdown",
    "sun.nio.ch.NativeDispatcher.close",
    "sun.nio.ch.EPoll.ctl",
    "sun.nio.ch.Net.listen",
    "sun.nio.ch.Net.accept",
    "sun.nio.ch.Net.bind",
];
const CONNECT: usize = 0;
const POLL_CONNECT: usize = 1;
const POLL: usize = 2;
const LOCAL_PORT: usize = 3;
const AVAILABLE: usize = 4;
const READ: usize = 5;
const READV: usize = 6;
const WRITE: usize = 7;
const WRITEV: usize = 8;
const EP_WAIT: usize = 9;
const LOOKUP: usize = 10;
const LOOKUP_FLAGS: usize = 11;
const HOST_NAME: usize = 12;
const HOST_BY_ADDR: usize = 13;
const SHUTDOWN: usize = 14;
const CLOSE: usize = 15;
const EP_CTL: usize = 16;
const LISTEN: usize = 17;
const ACCEPT: usize = 18;
const BIND: usize = 19;

/// What replay counts for a server in the program.
const LIVE_SERVER: &str = "connections accepted by a server socket (run live)";
const LIVE_OWN: &str = "connections to this program's own server sockets (run live)";

static ORIG: [AtomicPtr<c_void>; COUNT] = [const { AtomicPtr::new(std::ptr::null_mut()) }; COUNT];
static KIND_IDS: OnceLock<[u32; COUNT]> = OnceLock::new();

type ConnectFn =
    unsafe extern "system" fn(*mut RawJniEnv, jclass, jboolean, jobject, jobject, jint) -> jint;
type PollConnectFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jlong) -> jboolean;
type PollFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jint, jlong) -> jint;
type FdIntFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject) -> jint;
type IoFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jlong, jint) -> jint;
type IovFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jlong, jint) -> jlong;
type WaitFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint, jlong, jint, jint) -> jint;
type LookupFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jstring) -> jobjectArray;
type LookupFlagsFn =
    unsafe extern "system" fn(*mut RawJniEnv, jobject, jstring, jint) -> jobjectArray;
type HostNameFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jstring;
type HostByAddrFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jbyteArray) -> jstring;
type ShutdownFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jint);
type CloseFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject);
type CtlFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint, jint, jint, jint) -> jint;
type ListenFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jint);
type BindFn =
    unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jboolean, jboolean, jobject, jint);
type AcceptFn =
    unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jobject, jobject) -> jint;

fn wrapper(i: usize) -> *mut c_void {
    match i {
        CONNECT => connect0 as ConnectFn as *mut c_void,
        POLL_CONNECT => poll_connect as PollConnectFn as *mut c_void,
        POLL => poll as PollFn as *mut c_void,
        LOCAL_PORT => local_port as FdIntFn as *mut c_void,
        AVAILABLE => available as FdIntFn as *mut c_void,
        READ => read0 as IoFn as *mut c_void,
        READV => readv0 as IovFn as *mut c_void,
        WRITE => write0 as IoFn as *mut c_void,
        WRITEV => writev0 as IovFn as *mut c_void,
        EP_WAIT => epoll_wait as WaitFn as *mut c_void,
        LOOKUP => lookup as LookupFn as *mut c_void,
        LOOKUP_FLAGS => lookup_flags as LookupFlagsFn as *mut c_void,
        HOST_NAME => local_host_name as HostNameFn as *mut c_void,
        HOST_BY_ADDR => host_by_addr as HostByAddrFn as *mut c_void,
        SHUTDOWN => shutdown as ShutdownFn as *mut c_void,
        CLOSE => close0 as CloseFn as *mut c_void,
        EP_CTL => epoll_ctl as CtlFn as *mut c_void,
        LISTEN => listen as ListenFn as *mut c_void,
        ACCEPT => accept as AcceptFn as *mut c_void,
        _ => bind0 as BindFn as *mut c_void,
    }
}

/// The original of native `i`, as type `F`.
///
/// # Safety
/// `F` must be the C signature of `NATIVES[i]`; only called from its wrapper, which the JVM
/// calls only after the bind event stored the original.
unsafe fn orig<F: Copy>(i: usize) -> F {
    let p = ORIG[i].load(Ordering::Acquire);
    std::mem::transmute_copy::<*mut c_void, F>(&p)
}

/// NativeMethodBind, for the natives of this module: the wrapper to bind instead of
/// `address`, if `owner.name sig` is one of them.
pub(crate) fn bind(
    owner: &str,
    name: &str,
    sig: &str,
    address: *mut c_void,
) -> Option<*mut c_void> {
    let i = NATIVES
        .iter()
        .position(|(o, n, s)| *n == name && *s == sig && o.contains(&owner))?;
    Some(crate::fileio::bound(&ORIG[i], address, wrapper(i)))
}

// ---- the socket table -------------------------------------------------------------------------

/// A socket whose connect was an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sock {
    /// Its number, recorded with the connect: the input digest of every call on it.
    id: i64,
    /// Replay: never connected, its calls are served from the log.
    replayed: bool,
}

#[derive(Default)]
struct Table {
    socks: HashMap<jint, Sock>,
    /// Epoll descriptor -> the event sockets registered in it.
    epolls: HashMap<jint, Vec<jint>>,
    /// Ports the program listens on.
    listening: Vec<u16>,
    /// Local ports of the program's own client connections to those: the server side of
    /// such a connection runs live too.
    own_ports: Vec<u16>,
    /// Descriptors of listening event sockets: their local port stays live (a server that
    /// asked for any port has another one in replay, and its own clients connect to that).
    servers: Vec<jint>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);
/// Entries in the socket table: while 0 the I/O wrappers look nothing up.
static OPEN: AtomicUsize = AtomicUsize::new(0);
/// Whether any epoll set ever held an event socket: until then waits look nothing up.
static EPOLLS: AtomicUsize = AtomicUsize::new(0);
static NEXT_SOCK: AtomicI64 = AtomicI64::new(1);

fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    f(t.get_or_insert_with(Table::default))
}

fn remember(fd: jint, s: Sock) {
    with_table(|t| {
        if t.socks.insert(fd, s).is_none() {
            OPEN.fetch_add(1, Ordering::AcqRel);
        }
    });
}

fn forget(fd: jint) {
    if OPEN.load(Ordering::Acquire) == 0 && EPOLLS.load(Ordering::Acquire) == 0 {
        return;
    }
    with_table(|t| {
        if t.socks.remove(&fd).is_some() {
            OPEN.fetch_sub(1, Ordering::AcqRel);
        }
        // A closed epoll descriptor's number may come back for another one.
        t.epolls.remove(&fd);
        t.servers.retain(|&s| s != fd);
    });
}

fn sock(fd: jint) -> Option<Sock> {
    if OPEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    with_table(|t| t.socks.get(&fd).copied())
}

/// The socket number a connect or listen recorded (a fresh one if the payload has none).
fn recorded_id(data: Option<&[u8]>) -> i64 {
    data.and_then(|b| b.try_into().ok())
        .map(i64::from_le_bytes)
        .unwrap_or_else(|| NEXT_SOCK.fetch_add(1, Ordering::Relaxed))
}

fn fd_of_sock(id: i64) -> Option<jint> {
    with_table(|t| t.socks.iter().find(|(_, s)| s.id == id).map(|(fd, _)| *fd))
}

/// The `fd` field of a `java.io.FileDescriptor`.
fn fd_number(raw: *mut RawJniEnv, fd: jobject) -> Option<jint> {
    if fd.is_null() {
        return None;
    }
    // SAFETY: the calling thread's JNIEnv and a FileDescriptor argument of the native.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    static FD_FD: OnceLock<JFieldID> = OnceLock::new();
    let id = fsmeta::field_id(&mut env, &FD_FD, "java/io/FileDescriptor", "fd", "I")?;
    let obj = unsafe { JObject::from_raw(fd) };
    match env
        .get_field_unchecked(&obj, id, ReturnType::Primitive(Primitive::Int))
        .and_then(|v| v.i())
    {
        Ok(n) => Some(n),
        Err(_) => {
            clear_exception(&mut env);
            None
        }
    }
}

/// The event socket behind a FileDescriptor argument, if any (cheap while none is open).
fn sock_of(raw: *mut RawJniEnv, fd: jobject) -> Option<(jint, Sock)> {
    if OPEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    let n = fd_number(raw, fd)?;
    Some((n, sock(n)?))
}

// ---- recording and replaying one call -----------------------------------------------------

fn kind(a: &crate::Agent, i: usize) -> u32 {
    KIND_IDS.get_or_init(|| KINDS.map(|k| a.core.intern(k)))[i]
}

fn digest(id: i64, arg: i64, bytes: &[u8]) -> u64 {
    replay_core::digest(&[&id.to_le_bytes(), &arg.to_le_bytes(), bytes])
}

fn record(c: &Call, i: usize, digest: u64, ret: i64, thrown: Option<&[u8]>, data: Option<&[u8]>) {
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
    crate::record_direct(c.a, kind(c.a, i), 0, Some(digest), payload);
}

/// Replays one call of kind `i`; `None`: run it live (policy went live).
fn replay(c: &mut Call, i: usize, digest: u64) -> Option<Outcome> {
    let k = kind(c.a, i);
    crate::fileio::replay_outcome(c, k, KINDS[i], digest)
}

/// A call on an event socket returning a number (poll, pollConnect, localPort, available).
fn scalar(raw: *mut RawJniEnv, fd: jobject, i: usize, arg: i64, live: impl Fn() -> i64) -> i64 {
    run(KINDS[i], live, |call| {
        let (_, s) = sock_of(raw, fd)?;
        let mut c = begin(raw)?;
        let d = digest(s.id, arg, &[]);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                let ex = pending_exception(&mut c.env);
                record(&c, i, d, r, ex.as_deref(), None);
                Some(r)
            }
            Session::Replay(_) => {
                if !s.replayed {
                    return None;
                }
                let o = replay(&mut c, i, d)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                }
                Some(o.ret)
            }
        }
    })
}

// ---- connect ----------------------------------------------------------------------------------

/// The bytes of an `InetAddress` (`getAddress()`).
fn address_bytes(env: &mut JNIEnv, addr: jobject) -> Option<Vec<u8>> {
    if addr.is_null() {
        return None;
    }
    let obj = unsafe { JObject::from_raw(addr) };
    let r = env
        .call_method(&obj, "getAddress", "()[B", &[])
        .and_then(|v| v.l());
    match r {
        Ok(arr) => {
            let arr = JByteArray::from(arr);
            let b = env.convert_byte_array(&arr).ok();
            let _ = env.delete_local_ref(arr);
            b
        }
        Err(_) => {
            clear_exception(env);
            None
        }
    }
}

fn is_own_server(port: jint) -> bool {
    u16::try_from(port).is_ok_and(|p| with_table(|t| t.listening.contains(&p)))
}

/// `ReplayHooks.ownServer0(port)`: whether the program listens on `port` (an HttpClient
/// exchange with it runs live: jvm-agent/java-http).
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_ownServer0(
    _env: *mut RawJniEnv,
    _cls: jclass,
    port: jint,
) -> jboolean {
    guarded("ReplayHooks.ownServer0", 0, || {
        u8::from(is_own_server(port))
    })
}

unsafe extern "system" fn connect0(
    raw: *mut RawJniEnv,
    cls: jclass,
    prefer6: jboolean,
    fd: jobject,
    remote: jobject,
    port: jint,
) -> jint {
    let live = || unsafe { orig::<ConnectFn>(CONNECT)(raw, cls, prefer6, fd, remote, port) };
    run(KINDS[CONNECT], live, |call| {
        agent()?;
        crate::fileio::FILE_EVENT.get()?;
        let n = fd_number(raw, fd)?;
        if is_own_server(port) {
            crate::fileio::a_live(LIVE_OWN);
            // The server's accept may run before this thread is back from the connect: it
            // waits for the port while a connect is under way ([`is_own_client`]).
            OWN_CONNECTS.fetch_add(1, Ordering::SeqCst);
            let r = call();
            // Its local port tells the server side's accept that the peer is this process.
            if let Some(p) = bound_port(n) {
                with_table(|t| {
                    if !t.own_ports.contains(&p) {
                        t.own_ports.push(p);
                    }
                });
            }
            OWN_CONNECTS.fetch_sub(1, Ordering::SeqCst);
            return Some(r);
        }
        let mut c = begin(raw)?;
        let addr = address_bytes(&mut c.env, remote)?;
        let d = digest(0, port as i64, &addr);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record(&c, CONNECT, d, -1, Some(&ex), None);
                    return Some(r);
                }
                let id = NEXT_SOCK.fetch_add(1, Ordering::Relaxed);
                remember(
                    n,
                    Sock {
                        id,
                        replayed: false,
                    },
                );
                record(&c, CONNECT, d, r as i64, None, Some(&id.to_le_bytes()));
                Some(r)
            }
            Session::Replay(_) => {
                let o = replay(&mut c, CONNECT, d)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                let id = recorded_id(o.data.as_deref());
                remember(n, Sock { id, replayed: true });
                Some(o.ret as jint)
            }
        }
    })
}

unsafe extern "system" fn poll_connect(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    timeout: jlong,
) -> jboolean {
    let live = || unsafe { orig::<PollConnectFn>(POLL_CONNECT)(raw, cls, fd, timeout) } as i64;
    // The timeout is not in the digest: it comes from the clock.
    (scalar(raw, fd, POLL_CONNECT, 0, live) != 0) as jboolean
}

unsafe extern "system" fn poll(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    events: jint,
    timeout: jlong,
) -> jint {
    let live = || unsafe { orig::<PollFn>(POLL)(raw, cls, fd, events, timeout) } as i64;
    scalar(raw, fd, POLL, events as i64, live) as jint
}

unsafe extern "system" fn local_port(raw: *mut RawJniEnv, cls: jclass, fd: jobject) -> jint {
    let live = || unsafe { orig::<FdIntFn>(LOCAL_PORT)(raw, cls, fd) } as i64;
    let server = guarded("Net.localPort", false, || {
        OPEN.load(Ordering::Acquire) != 0
            && fd_number(raw, fd).is_some_and(|n| with_table(|t| t.servers.contains(&n)))
    });
    if server {
        return live() as jint;
    }
    scalar(raw, fd, LOCAL_PORT, 0, live) as jint
}

unsafe extern "system" fn available(raw: *mut RawJniEnv, cls: jclass, fd: jobject) -> jint {
    let live = || unsafe { orig::<FdIntFn>(AVAILABLE)(raw, cls, fd) } as i64;
    scalar(raw, fd, AVAILABLE, 0, live) as jint
}

// ---- reads and writes -------------------------------------------------------------------------

/// `struct iovec` entries at `address` (`n` of them): (base, len).
///
/// # Safety
/// `address` must point at `n` iovecs the JDK filled.
unsafe fn iovecs(address: jlong, n: jint) -> Vec<(*mut u8, usize)> {
    let p = address as *const usize;
    (0..n.max(0) as usize)
        .map(|k| unsafe { (*p.add(2 * k) as *mut u8, *p.add(2 * k + 1)) })
        .collect()
}

/// The first `n` bytes the iovecs hold (a gather).
unsafe fn gather(v: &[(*mut u8, usize)], mut n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    for &(base, len) in v {
        if n == 0 {
            break;
        }
        let k = len.min(n);
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(base, k) });
        n -= k;
    }
    out
}

/// Copies `data` into the iovecs (a scatter); false if it does not fit.
unsafe fn scatter(v: &[(*mut u8, usize)], mut data: &[u8]) -> bool {
    for &(base, len) in v {
        if data.is_empty() {
            break;
        }
        let k = len.min(data.len());
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), base, k) };
        data = &data[k..];
    }
    data.is_empty()
}

/// A read (`read0`: one buffer of `len` bytes at `address`; `readv0`: `len` iovecs there).
fn read(
    raw: *mut RawJniEnv,
    fd: jobject,
    i: usize,
    address: jlong,
    len: jint,
    live: impl Fn() -> i64,
) -> i64 {
    run(KINDS[i], live, |call| {
        let (_, s) = sock_of(raw, fd)?;
        let mut c = begin(raw)?;
        // SAFETY: the JDK passes `len` iovecs at `address` to readv0.
        let vecs = if i == READV {
            unsafe { iovecs(address, len) }
        } else {
            vec![(address as *mut u8, len.max(0) as usize)]
        };
        let room: usize = vecs.iter().map(|v| v.1).sum();
        let d = digest(s.id, room as i64, &[]);
        match &c.a.core.session {
            Session::Record(_) => {
                let n = call();
                let ex = pending_exception(&mut c.env);
                let bytes = (ex.is_none() && n > 0 && n as usize <= room)
                    // SAFETY: the read just put n bytes there.
                    .then(|| unsafe { gather(&vecs, n as usize) });
                record(&c, i, d, n, ex.as_deref(), bytes.as_deref());
                Some(n)
            }
            Session::Replay(_) => {
                if !s.replayed {
                    return None;
                }
                let o = replay(&mut c, i, d)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                let data = o.data.unwrap_or_default();
                // SAFETY: the buffers hold `room` bytes; scatter checks the data fits.
                if o.ret > 0 && (o.ret as usize != data.len() || !unsafe { scatter(&vecs, &data) })
                {
                    crate::internal_error(
                        Some(&mut c.env),
                        "a recorded socket read does not fit the buffer",
                    );
                    return None;
                }
                Some(o.ret)
            }
        }
    })
}

/// A write: the bytes offered are the input digest, the count taken the payload.
fn write(
    raw: *mut RawJniEnv,
    fd: jobject,
    i: usize,
    address: jlong,
    len: jint,
    live: impl Fn() -> i64,
) -> i64 {
    run(KINDS[i], live, |call| {
        let Some((_, s)) = sock_of(raw, fd) else {
            note_file_write(raw, fd, i, address, len);
            return None;
        };
        let mut c = begin(raw)?;
        let bytes = if i == WRITEV {
            // SAFETY: the JDK passes `len` iovecs at `address` to writev0.
            let v = unsafe { iovecs(address, len) };
            let total = v.iter().map(|x| x.1).sum();
            unsafe { gather(&v, total) }
        } else if len > 0 {
            // SAFETY: `len` bytes to write at `address`.
            unsafe { std::slice::from_raw_parts(address as *const u8, len as usize) }.to_vec()
        } else {
            Vec::new()
        };
        let d = digest(s.id, bytes.len() as i64, &bytes);
        match &c.a.core.session {
            Session::Record(_) => {
                let n = call();
                let ex = pending_exception(&mut c.env);
                record(&c, i, d, n, ex.as_deref(), None);
                Some(n)
            }
            Session::Replay(_) => {
                if !s.replayed {
                    return None;
                }
                let o = replay(&mut c, i, d)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                Some(o.ret)
            }
        }
    })
}

/// A write to a file the program opened for writing through NIO: its bytes go to the core's
/// sums per path (the write itself runs live, in both modes).
fn note_file_write(raw: *mut RawJniEnv, fd: jobject, i: usize, address: jlong, len: jint) {
    let Some(n) = fd_number(raw, fd) else { return };
    let Some(path) = crate::nio::written_path(n) else {
        return;
    };
    let Some(a) = agent() else { return };
    // SAFETY: the thread's JNIEnv.
    let Ok(mut env) = (unsafe { jni::JNIEnv::from_raw(raw) }) else {
        return;
    };
    let Some(_inside) = replay_core::guard::HookGuard::enter() else {
        return;
    };
    if !crate::output_turn(a, &mut env) {
        return;
    }
    if i == WRITEV {
        // SAFETY: the JDK passes `len` iovecs at `address` to writev0.
        let v = unsafe { iovecs(address, len) };
        let total = v.iter().map(|x| x.1).sum();
        a.core.file_written(&path, &unsafe { gather(&v, total) });
    } else if len > 0 {
        // SAFETY: `len` bytes to write at `address`.
        a.core.file_written(&path, unsafe {
            std::slice::from_raw_parts(address as *const u8, len as usize)
        });
    }
}

unsafe extern "system" fn read0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    address: jlong,
    len: jint,
) -> jint {
    let live = || unsafe { orig::<IoFn>(READ)(raw, cls, fd, address, len) } as i64;
    read(raw, fd, READ, address, len, live) as jint
}

unsafe extern "system" fn readv0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    address: jlong,
    len: jint,
) -> jlong {
    let live = || unsafe { orig::<IovFn>(READV)(raw, cls, fd, address, len) };
    read(raw, fd, READV, address, len, live)
}

unsafe extern "system" fn write0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    address: jlong,
    len: jint,
) -> jint {
    let live = || unsafe { orig::<IoFn>(WRITE)(raw, cls, fd, address, len) } as i64;
    write(raw, fd, WRITE, address, len, live) as jint
}

unsafe extern "system" fn writev0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    address: jlong,
    len: jint,
) -> jlong {
    let live = || unsafe { orig::<IovFn>(WRITEV)(raw, cls, fd, address, len) };
    write(raw, fd, WRITEV, address, len, live)
}

// ---- bookkeeping ------------------------------------------------------------------------------

unsafe extern "system" fn shutdown(raw: *mut RawJniEnv, cls: jclass, fd: jobject, how: jint) {
    let replayed = guarded("Net.shutdown", false, || {
        sock_of(raw, fd).is_some_and(|(_, s)| s.replayed)
    });
    // A replayed socket was never connected: the live call would fail with ENOTCONN.
    if !replayed {
        unsafe { orig::<ShutdownFn>(SHUTDOWN)(raw, cls, fd, how) }
    }
}

unsafe extern "system" fn close0(raw: *mut RawJniEnv, cls: jclass, fd: jobject) {
    guarded("NativeDispatcher.close0", (), || {
        if OPEN.load(Ordering::Acquire) != 0 {
            if let Some(n) = fd_number(raw, fd) {
                forget(n);
            }
        }
    });
    unsafe { orig::<CloseFn>(CLOSE)(raw, cls, fd) }
}

/// A bind to any port (0): the port the system picked is an event (payload: the port), and
/// replay asks for that port, so a server that prints its port or hands it to its clients
/// (a test server's URL) shows the recorded one. A bind to a given port runs live.
unsafe extern "system" fn bind0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    prefer6: jboolean,
    excl: jboolean,
    addr: jobject,
    port: jint,
) {
    let real = |p: jint| unsafe { orig::<BindFn>(BIND)(raw, cls, fd, prefer6, excl, addr, p) };
    if port != 0 {
        return real(port);
    }
    run(
        KINDS[BIND],
        || real(0),
        |call| {
            crate::fileio::FILE_EVENT.get()?;
            let mut c = begin(raw)?;
            let d = digest(0, 0, b"bind");
            match &c.a.core.session {
                Session::Record(_) => {
                    call();
                    if pending_exception(&mut c.env).is_some() {
                        return Some(()); // the program sees the exception; nothing recorded
                    }
                    let p = fd_number(raw, fd).and_then(bound_port).unwrap_or(0);
                    record(&c, BIND, d, p as i64, None, None);
                    Some(())
                }
                Session::Replay(_) => {
                    let o = replay(&mut c, BIND, d)?;
                    // The recorded port (any when the recording had none).
                    real(o.ret.max(0) as jint);
                    Some(())
                }
            }
        },
    )
}

/// A server socket starts listening. The call is an event (payload: the socket's number): the listening socket becomes an event socket, so
/// the readiness its selector or `accept`'s park sees and what `accept` returns are events.
/// In replay it stays out of the real epoll set and accepts nothing for real.
unsafe extern "system" fn listen(raw: *mut RawJniEnv, cls: jclass, fd: jobject, backlog: jint) {
    unsafe { orig::<ListenFn>(LISTEN)(raw, cls, fd, backlog) };
    guarded("Net.listen", (), || {
        let Some(n) = fd_number(raw, fd) else { return };
        let Some(port) = bound_port(n) else { return };
        with_table(|t| t.listening.push(port));
        if crate::fileio::FILE_EVENT.get().is_none() {
            return;
        }
        let Some(mut c) = begin(raw) else { return };
        if pending_exception(&mut c.env).is_some() {
            return; // the listen failed: the program sees the exception, nothing to replay
        }
        // Not the port: a server that asked for any port (0) gets another one in replay.
        let d = digest(0, 0, b"listen");
        match &c.a.core.session {
            Session::Record(_) => {
                let id = NEXT_SOCK.fetch_add(1, Ordering::Relaxed);
                remember(
                    n,
                    Sock {
                        id,
                        replayed: false,
                    },
                );
                with_table(|t| t.servers.push(n));
                record(&c, LISTEN, d, 0, None, Some(&id.to_le_bytes()));
            }
            Session::Replay(_) => {
                let Some(o) = replay(&mut c, LISTEN, d) else {
                    return;
                };
                let id = recorded_id(o.data.as_deref());
                remember(n, Sock { id, replayed: true });
                with_table(|t| t.servers.push(n));
            }
        }
    });
}

/// What an accept's payload holds after its first byte ([`ACCEPTED`] or [`ACCEPTED_OWN`]):
/// the new socket's number (8 bytes), the peer's port (2) and address (4 or 16 bytes).
const ACCEPTED: u8 = 1;
/// A connection from a client of this process (its peer port is one of [`Table::own_ports`]):
/// live in both modes, as the client's side is.
const ACCEPTED_OWN: u8 = 2;

extern "C" {
    fn socket(domain: i32, kind: i32, protocol: i32) -> i32;
}

/// A connection a server socket of the program accepts. On an event socket (a listening
/// socket whose listen was an event) the call is an event: its payload is the result and,
/// for a connection, the new socket's number and the peer's address, or the exception.
/// Record: the accepted socket becomes an event socket (its reads and writes are events, as
/// a client's). Replay: nothing is accepted; a fresh unconnected socket stands for the
/// connection (its calls are served from the log) and the peer's address comes back.
unsafe extern "system" fn accept(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    newfd: jobject,
    isaa: jobject,
) -> jint {
    let live = || unsafe { orig::<AcceptFn>(ACCEPT)(raw, cls, fd, newfd, isaa) };
    let counted = |n: jint| {
        if n > 0 {
            guarded("Net.accept", (), || {
                if let Some(a) = agent() {
                    a.core.ran_unchecked(LIVE_SERVER);
                }
            });
        }
        n
    };
    run(KINDS[ACCEPT], live, |call| {
        let Some((_, s)) = sock_of(raw, fd) else {
            return Some(counted(call()));
        };
        let mut c = begin(raw)?;
        let d = digest(s.id, 0, b"accept");
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record(&c, ACCEPT, d, -1, Some(&ex), None);
                    return Some(r);
                }
                if r <= 0 {
                    record(&c, ACCEPT, d, r as i64, None, None);
                    return Some(r);
                }
                let peer = peer_of(&mut c.env, isaa);
                let own = peer
                    .as_ref()
                    .is_some_and(|(port, addr)| loopback(addr) && is_own_client(*port));
                let mut data = vec![if own { ACCEPTED_OWN } else { ACCEPTED }];
                let id = NEXT_SOCK.fetch_add(1, Ordering::Relaxed);
                data.extend_from_slice(&id.to_le_bytes());
                if let Some((port, addr)) = &peer {
                    data.extend_from_slice(&port.to_be_bytes());
                    data.extend_from_slice(addr);
                }
                if !own {
                    if let Some(n) = fd_number(raw, newfd) {
                        remember(
                            n,
                            Sock {
                                id,
                                replayed: false,
                            },
                        );
                    }
                }
                record(&c, ACCEPT, d, r as i64, None, Some(&data));
                Some(r)
            }
            Session::Replay(_) => {
                if !s.replayed {
                    return None;
                }
                let o = replay(&mut c, ACCEPT, d)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                let data = o.data.unwrap_or_default();
                if o.ret <= 0 || data.len() < 11 {
                    return Some(o.ret as jint);
                }
                if data[0] == ACCEPTED_OWN {
                    // What passes on it is not recorded: said at the end of the replay.
                    c.a.core.ran_unchecked(LIVE_SERVER);
                    // The client is this process's own, connecting for real: take its
                    // connection for real (it may not have reached the backlog yet).
                    for _ in 0..5000 {
                        let r = call();
                        if r > 0 || pending_exception(&mut c.env).is_some() {
                            return Some(r);
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    return Some(call());
                }
                let id = i64::from_le_bytes(data[1..9].try_into().ok()?);
                let port = u16::from_be_bytes([data[9], data[10]]);
                let addr = &data[11..];
                let domain = if addr.len() == 16 { 10 } else { 2 }; // AF_INET6, AF_INET
                                                                    // SAFETY: a plain socket(2) call; the descriptor becomes the connection's.
                let n = unsafe {
                    socket(domain, 1 /* SOCK_STREAM */, 0)
                };
                if n < 0 {
                    crate::internal_error(
                        Some(&mut c.env),
                        "cannot make a socket for a replayed connection",
                    );
                    return None;
                }
                if !set_fd(&mut c.env, newfd, n) || !set_peer(&mut c.env, isaa, addr, port) {
                    crate::internal_error(
                        Some(&mut c.env),
                        "cannot hand a replayed connection to the server",
                    );
                    return None;
                }
                remember(n, Sock { id, replayed: true });
                Some(o.ret as jint)
            }
        }
    })
}

fn loopback(addr: &[u8]) -> bool {
    match addr.len() {
        4 => addr[0] == 127,
        16 => {
            addr[..15].iter().all(|&b| b == 0) && addr[15] == 1
                || (addr[..10].iter().all(|&b| b == 0)
                    && addr[10] == 0xff
                    && addr[11] == 0xff
                    && addr[12] == 127)
        }
        _ => false,
    }
}

/// Connects of the program to its own server sockets under way ([`connect0`]).
static OWN_CONNECTS: AtomicUsize = AtomicUsize::new(0);

/// Whether a connection from loopback port `port` is one of the program's own. Its client's
/// connect may not have returned yet (the kernel completes the handshake before it does,
/// and the server's thread can accept at once: the recording then took the program's own
/// connection for an outside client's, and replay stalled): while connects to the program's
/// servers are under way, waits for them, briefly.
fn is_own_client(port: u16) -> bool {
    let known = || with_table(|t| t.own_ports.contains(&port));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        if known() {
            return true;
        }
        if OWN_CONNECTS.load(Ordering::SeqCst) == 0 || std::time::Instant::now() >= until {
            // The port is pushed before the count drops: one last look.
            return known();
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// The peer `accept` put in `isaa[0]`: (port, address bytes).
fn peer_of(env: &mut JNIEnv, isaa: jobject) -> Option<(u16, Vec<u8>)> {
    if isaa.is_null() {
        return None;
    }
    let arr = unsafe { JObjectArray::from_raw(isaa) };
    let isa = env.get_object_array_element(&arr, 0).ok()?;
    let r = (|| {
        let port = env
            .call_method(&isa, "getPort", "()I", &[])
            .ok()?
            .i()
            .ok()?;
        let ia = env
            .call_method(&isa, "getAddress", "()Ljava/net/InetAddress;", &[])
            .ok()?
            .l()
            .ok()?;
        let bytes = address_bytes(env, ia.as_raw())?;
        Some((u16::try_from(port).ok()?, bytes))
    })();
    clear_exception(env);
    r
}

fn set_fd(env: &mut JNIEnv, fd: jobject, n: jint) -> bool {
    if fd.is_null() {
        return false;
    }
    static FD_FD: OnceLock<JFieldID> = OnceLock::new();
    let Some(id) = fsmeta::field_id(env, &FD_FD, "java/io/FileDescriptor", "fd", "I") else {
        return false;
    };
    let obj = unsafe { JObject::from_raw(fd) };
    let ok = env.set_field_unchecked(&obj, id, JValue::Int(n)).is_ok();
    let failed = clear_exception(env);
    ok && !failed
}

/// `isaa[0] = new InetSocketAddress(InetAddress.getByAddress(addr), port)`.
fn set_peer(env: &mut JNIEnv, isaa: jobject, addr: &[u8], port: u16) -> bool {
    if isaa.is_null() {
        return false;
    }
    let r = (|| {
        let bytes = env.byte_array_from_slice(addr).ok()?;
        let ia = env
            .call_static_method(
                "java/net/InetAddress",
                "getByAddress",
                "([B)Ljava/net/InetAddress;",
                &[JValue::Object(&bytes)],
            )
            .ok()?
            .l()
            .ok()?;
        let isa = env
            .new_object(
                "java/net/InetSocketAddress",
                "(Ljava/net/InetAddress;I)V",
                &[JValue::Object(&ia), JValue::Int(port as jint)],
            )
            .ok()?;
        let arr = unsafe { JObjectArray::from_raw(isaa) };
        env.set_object_array_element(&arr, 0, isa).ok()
    })();
    let failed = clear_exception(env);
    r.is_some() && !failed
}

extern "C" {
    fn getsockname(fd: i32, addr: *mut u8, len: *mut u32) -> i32;
}

/// The port a socket is bound to (IPv4 or IPv6).
fn bound_port(fd: jint) -> Option<u16> {
    let mut buf = [0u8; 128];
    let mut len = buf.len() as u32;
    // SAFETY: a buffer of `len` bytes for a sockaddr.
    if unsafe { getsockname(fd, buf.as_mut_ptr(), &mut len) } != 0 || len < 4 {
        return None;
    }
    // sin_port and sin6_port both sit at offset 2, in network order.
    Some(u16::from_be_bytes([buf[2], buf[3]]))
}

const EPOLL_CTL_DEL: jint = 2;

unsafe extern "system" fn epoll_ctl(
    raw: *mut RawJniEnv,
    cls: jclass,
    epfd: jint,
    op: jint,
    fd: jint,
    events: jint,
) -> jint {
    let s = guarded("EPoll.ctl", None, || {
        let s = sock(fd)?;
        with_table(|t| {
            // Only added, never taken out by a DEL: once an event socket was in the set,
            // every wait on it is an event. Whether a socket is registered at a wait depends
            // on when the selector thread took another thread's registration, which is not
            // an event; an "event or live" that followed it would differ between runs.
            let v = t.epolls.entry(epfd).or_default();
            if op != EPOLL_CTL_DEL && !v.contains(&fd) {
                v.push(fd);
                EPOLLS.store(1, Ordering::Release);
            }
        });
        Some(s)
    });
    // A replayed socket stays out of the real epoll set: unconnected, it would always be
    // "ready" (EPOLLHUP) there; its readiness is the recorded one.
    if s.is_some_and(|s| s.replayed) {
        return 0;
    }
    unsafe { orig::<CtlFn>(EP_CTL)(raw, cls, epfd, op, fd, events) }
}

/// `struct epoll_event`: its size and the offset of its data (packed on x86-64).
#[cfg(target_arch = "x86_64")]
const EV_SIZE: usize = 12;
#[cfg(target_arch = "x86_64")]
const EV_DATA: usize = 4;
#[cfg(not(target_arch = "x86_64"))]
const EV_SIZE: usize = 16;
#[cfg(not(target_arch = "x86_64"))]
const EV_DATA: usize = 8;

/// Longest a replayed wait waits for a live descriptor the recording saw ready.
const LIVE_WAIT_MS: jint = 10_000;

/// Whether an event socket was ever registered in this epoll set.
fn has_event_sockets(epfd: jint) -> bool {
    EPOLLS.load(Ordering::Acquire) != 0
        && with_table(|t| t.epolls.get(&epfd).is_some_and(|v| !v.is_empty()))
}

/// One ready entry as recorded: events, whether `value` is a socket's number (else a live
/// descriptor), value.
fn encode_entries(address: jlong, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 13);
    for k in 0..n {
        // SAFETY: the wait filled `n` entries at `address`.
        let (events, data) = unsafe {
            let p = (address as *const u8).add(k * EV_SIZE);
            (
                std::ptr::read_unaligned(p as *const u32),
                std::ptr::read_unaligned(p.add(EV_DATA) as *const u64),
            )
        };
        let fd = data as jint;
        let (tag, value) = match sock(fd) {
            Some(s) => (1u8, s.id),
            None => (0u8, fd as i64),
        };
        out.extend_from_slice(&events.to_le_bytes());
        out.push(tag);
        out.extend_from_slice(&value.to_le_bytes());
    }
    out
}

fn decode_entries(data: &[u8]) -> Vec<(u32, bool, i64)> {
    data.chunks_exact(13)
        .map(|c| {
            let events = u32::from_le_bytes(c[0..4].try_into().unwrap_or_default());
            let value = i64::from_le_bytes(c[5..13].try_into().unwrap_or_default());
            (events, c[4] == 1, value)
        })
        .collect()
}

unsafe fn put_entry(address: jlong, k: usize, events: u32, fd: jint) {
    unsafe {
        let p = (address as *mut u8).add(k * EV_SIZE);
        std::ptr::write_unaligned(p as *mut u32, events);
        std::ptr::write_unaligned(p.add(EV_DATA) as *mut u64, fd as u32 as u64);
    }
}

unsafe extern "system" fn epoll_wait(
    raw: *mut RawJniEnv,
    cls: jclass,
    epfd: jint,
    address: jlong,
    numfds: jint,
    timeout: jint,
) -> jint {
    let live = || unsafe { orig::<WaitFn>(EP_WAIT)(raw, cls, epfd, address, numfds, timeout) };
    run(KINDS[EP_WAIT], live, |call| {
        if !has_event_sockets(epfd) {
            return None;
        }
        let mut c = begin(raw)?;
        // Not the epoll descriptor's number: replay's may differ (other descriptors open).
        let d = digest(0, 0, &[]);
        match &c.a.core.session {
            Session::Record(_) => {
                let n = call();
                let ex = pending_exception(&mut c.env);
                let data = (ex.is_none() && n > 0).then(|| encode_entries(address, n as usize));
                record(&c, EP_WAIT, d, n as i64, ex.as_deref(), data.as_deref());
                Some(n)
            }
            Session::Replay(_) => {
                // A selector blocked here when the recorded program exited.
                c.a.core.replay_wait_if_ended();
                let o = replay(&mut c, EP_WAIT, d)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(0);
                }
                let entries = decode_entries(o.data.as_deref().unwrap_or_default());
                // Woken by a live descriptor in the recording (the selector's wake-up): wait
                // for it here too; live entries come from the real epoll set.
                let mut k = 0usize;
                if entries.iter().any(|e| !e.1) {
                    let t = if !(0..=LIVE_WAIT_MS).contains(&timeout) {
                        LIVE_WAIT_MS
                    } else {
                        timeout.max(1)
                    };
                    let m = unsafe { orig::<WaitFn>(EP_WAIT)(raw, cls, epfd, address, numfds, t) };
                    if clear_exception(&mut c.env) {
                        return Some(0);
                    }
                    k = m.max(0) as usize;
                }
                for (events, is_sock, value) in entries {
                    if !is_sock || k >= numfds as usize {
                        continue;
                    }
                    if let Some(fd) = fd_of_sock(value) {
                        // SAFETY: the JDK's array holds `numfds` entries.
                        unsafe { put_entry(address, k, events, fd) };
                        k += 1;
                    }
                }
                Some(k as jint)
            }
        }
    })
}

// ---- names ------------------------------------------------------------------------------------

fn jstring_text(env: &mut JNIEnv, s: jstring) -> Option<String> {
    if s.is_null() {
        return None;
    }
    let s = unsafe { JString::from_raw(s) };
    let t: String = env.get_string(&s).ok()?.into();
    Some(t)
}

/// The addresses of a lookup's result, each as a length byte and its bytes.
fn encode_addresses(env: &mut JNIEnv, arr: jobjectArray) -> Option<Vec<u8>> {
    let arr = unsafe { JObjectArray::from_raw(arr) };
    let n = env.get_array_length(&arr).ok()?;
    let mut out = Vec::new();
    for k in 0..n {
        let e = env.get_object_array_element(&arr, k).ok()?;
        let b = address_bytes(env, e.as_raw())?;
        let _ = env.delete_local_ref(e);
        out.push(b.len() as u8);
        out.extend_from_slice(&b);
    }
    Some(out)
}

/// `InetAddress[]` of the recorded addresses, each named `host` (as the lookup names them).
fn decode_addresses(env: &mut JNIEnv, host: jstring, data: &[u8]) -> Option<jobjectArray> {
    let mut addrs = Vec::new();
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let len = len as usize;
        if tail.len() < len {
            return None;
        }
        addrs.push(&tail[..len]);
        rest = &tail[len..];
    }
    let cls = env.find_class("java/net/InetAddress").ok()?;
    let arr = env
        .new_object_array(addrs.len() as jint, &cls, JObject::null())
        .ok()?;
    let host = unsafe { JObject::from_raw(host) };
    for (k, b) in addrs.iter().enumerate() {
        let bytes = env.byte_array_from_slice(b).ok()?;
        let a = env
            .call_static_method(
                &cls,
                "getByAddress",
                "(Ljava/lang/String;[B)Ljava/net/InetAddress;",
                &[JValue::Object(&host), JValue::Object(&bytes)],
            )
            .and_then(|v| v.l())
            .ok()?;
        env.set_object_array_element(&arr, k as jint, &a).ok()?;
        let _ = env.delete_local_ref(a);
        let _ = env.delete_local_ref(bytes);
    }
    Some(arr.into_raw())
}

/// What libnet's `initInetAddressIDs` finds (and so initializes) before a lookup.
const INIT_WITH_LOOKUP: [&str; 5] = [
    "java/net/InetAddress",
    "java/net/InetAddress$InetAddressHolder",
    "java/net/Inet4Address",
    "java/net/Inet6Address",
    "java/net/Inet6Address$Inet6AddressHolder",
];

/// A name lookup: the host (and flags) are the input digest, the addresses the payload.
fn lookup_call(
    raw: *mut RawJniEnv,
    i: usize,
    host: jstring,
    flags: jint,
    live: impl Fn() -> jobjectArray,
) -> jobjectArray {
    run(KINDS[i], live, |call| {
        agent()?;
        crate::fileio::FILE_EVENT.get()?;
        let mut c = begin(raw)?;
        let name = jstring_text(&mut c.env, host)?;
        let d = replay_core::digest(&[name.as_bytes(), &flags.to_le_bytes()]);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record(&c, i, d, -1, Some(&ex), None);
                    return Some(r);
                }
                let Some(data) = encode_addresses(&mut c.env, r) else {
                    clear_exception(&mut c.env);
                    crate::internal_error(
                        Some(&mut c.env),
                        "cannot read a name lookup's addresses",
                    );
                    return Some(r);
                };
                record(&c, i, d, 0, None, Some(&data));
                Some(r)
            }
            Session::Replay(_) => {
                let o = replay(&mut c, i, d)?;
                // The real lookup's first call loads and initializes the address classes
                // (libnet's initInetAddressIDs: JNI FindClass initializes), Inet6Address
                // included where the answer has none. Class initialization takes identity
                // hashes from the thread's sequence: without it, every later identity hash
                // of the thread came one behind the recording (log4j2, which looks up the
                // host name at start, logged other `Object@hash` names and iterated its
                // hash sets in another order, exit 0).
                for class in INIT_WITH_LOOKUP {
                    match c.env.find_class(class) {
                        Ok(cls) => {
                            let _ = c.env.delete_local_ref(cls);
                        }
                        Err(_) => {
                            clear_exception(&mut c.env);
                        }
                    }
                }
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(std::ptr::null_mut());
                }
                match decode_addresses(&mut c.env, host, o.data.as_deref().unwrap_or_default()) {
                    Some(a) => Some(a),
                    None => {
                        clear_exception(&mut c.env);
                        crate::internal_error(
                            Some(&mut c.env),
                            "cannot rebuild a recorded name lookup",
                        );
                        None
                    }
                }
            }
        }
    })
}

unsafe extern "system" fn lookup(
    raw: *mut RawJniEnv,
    this: jobject,
    host: jstring,
) -> jobjectArray {
    let live = || unsafe { orig::<LookupFn>(LOOKUP)(raw, this, host) };
    lookup_call(raw, LOOKUP, host, 0, live)
}

unsafe extern "system" fn lookup_flags(
    raw: *mut RawJniEnv,
    this: jobject,
    host: jstring,
    flags: jint,
) -> jobjectArray {
    let live = || unsafe { orig::<LookupFlagsFn>(LOOKUP_FLAGS)(raw, this, host, flags) };
    lookup_call(raw, LOOKUP_FLAGS, host, flags, live)
}

/// A call returning a host name (`getLocalHostName`, `getHostByAddr`): digest `input`.
fn name_call(
    raw: *mut RawJniEnv,
    i: usize,
    input: &dyn Fn(&mut JNIEnv) -> Option<Vec<u8>>,
    live: impl Fn() -> jstring,
) -> jstring {
    run(KINDS[i], live, |call| {
        agent()?;
        crate::fileio::FILE_EVENT.get()?;
        let mut c = begin(raw)?;
        let d = replay_core::digest(&[&input(&mut c.env)?]);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record(&c, i, d, -1, Some(&ex), None);
                    return Some(r);
                }
                let text = jstring_text(&mut c.env, r).unwrap_or_default();
                record(&c, i, d, 0, None, Some(text.as_bytes()));
                Some(r)
            }
            Session::Replay(_) => {
                let o = replay(&mut c, i, d)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(std::ptr::null_mut());
                }
                let text =
                    String::from_utf8_lossy(o.data.as_deref().unwrap_or_default()).into_owned();
                match c.env.new_string(text) {
                    Ok(s) => Some(s.into_raw()),
                    Err(_) => {
                        clear_exception(&mut c.env);
                        None
                    }
                }
            }
        }
    })
}

unsafe extern "system" fn local_host_name(raw: *mut RawJniEnv, this: jobject) -> jstring {
    let live = || unsafe { orig::<HostNameFn>(HOST_NAME)(raw, this) };
    name_call(raw, HOST_NAME, &|_| Some(Vec::new()), live)
}

unsafe extern "system" fn host_by_addr(
    raw: *mut RawJniEnv,
    this: jobject,
    addr: jbyteArray,
) -> jstring {
    let live = || unsafe { orig::<HostByAddrFn>(HOST_BY_ADDR)(raw, this, addr) };
    let input = |env: &mut JNIEnv| {
        if addr.is_null() {
            return None;
        }
        let a = unsafe { JByteArray::from_raw(addr) };
        env.convert_byte_array(&a).ok()
    };
    name_call(raw, HOST_BY_ADDR, &input, live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natives_and_kinds_line_up() {
        assert_eq!(NATIVES.len(), KINDS.len());
        let mut w: Vec<usize> = (0..COUNT).map(|i| wrapper(i) as usize).collect();
        w.sort();
        w.dedup();
        assert_eq!(w.len(), COUNT, "one wrapper per native");
        for (i, (_, n, _)) in NATIVES.iter().enumerate() {
            let k = KINDS[i].rsplit('.').next().unwrap();
            assert!(n.starts_with(k) || i == CLOSE, "{n} / {k}");
        }
    }

    #[test]
    fn the_socket_table_forgets_closed_descriptors_and_epoll_sets() {
        remember(
            900_001,
            Sock {
                id: 7,
                replayed: true,
            },
        );
        with_table(|t| t.epolls.entry(900_005).or_default().push(900_001));
        EPOLLS.store(1, Ordering::Release);
        assert_eq!(
            sock(900_001),
            Some(Sock {
                id: 7,
                replayed: true
            })
        );
        assert_eq!(fd_of_sock(7), Some(900_001));
        assert!(has_event_sockets(900_005));
        forget(900_001);
        assert_eq!(sock(900_001), None);
        // Waits stay events once a socket was registered, until the set itself closes.
        assert!(has_event_sockets(900_005));
        forget(900_005);
        assert!(!has_event_sockets(900_005));
    }

    #[test]
    fn epoll_entries_round_trip() {
        let mut data = Vec::new();
        for (e, tag, v) in [(1u32, 1u8, 3i64), (4, 0, 9)] {
            data.extend_from_slice(&e.to_le_bytes());
            data.push(tag);
            data.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(decode_entries(&data), vec![(1, true, 3), (4, false, 9)]);
    }
}
