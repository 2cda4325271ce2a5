//! Whether a file call on a path is made by class or resource loading, which stays live, or
//! by the program, which is an event wherever the file is and whatever its name.
//!
//! Why the call's context and not its path: a program reads files in its class-path
//! directory (`java Main` and `javac` from the project directory have "." as class path),
//! reads `.class` and `.jar` files as data (javac's class path, ant's `<jar>`/`<checksum>`),
//! and walks out of any directory with `../`. What must stay live is the JVM's own loading:
//! the class loaders (`URLClassPath` looking up a class file, opening a jar), `ServiceLoader`
//! reading `META-INF/services`, resource lookups (`getResource*`, `ResourceBundle`), the module
//! system and the runtime image, and the launcher loading the main class. That I/O happens at
//! other moments in replay (class loading is lazy and the agent's own work loads classes), so
//! it can never be an event; and it reads the program itself, not its input.
//!
//! How: when a call on a path would be an event (hooks on, not nested, not a JDK service
//! thread), the calling thread's Java stack is read with JVMTI `GetStackTrace` (no
//! capability; the current thread needs no safepoint), innermost frame first. JDK I/O
//! plumbing (`java.io`, `java.nio`, `sun.nio`, `java.util.zip`/`jar`, URL connections,
//! reflection, method handles, `doPrivileged`) is looked through; the first other frame
//! decides: a class loader (any subclass of `java.lang.ClassLoader`, custom ones included) or
//! a loading package of the JDK means live, anything else is the program's call. So javac
//! reading `Main.java` or a class file of its `-cp` through its file manager is the
//! program's (`com.sun.tools.javac.file`), while the same file opened by `URLClassPath` is
//! loading. The answer depends only on the Java stack, which is the same in record and in
//! replay, so both modes make the same calls events.
//!
//! Cost: the decision comes within the first frames (a `Files.readAllBytes` from `main` is
//! 8 frames deep), read 5 and then 32 at a time; each method's class is classified once
//! (JVMTI class signature, `IsAssignableFrom`) and kept by `jmethodID`, which the JVM never
//! reuses, in a map per thread before the shared one.

use crate::jvmti::FrameInfo;
use crate::Agent;
use jni::objects::GlobalRef;
use jni::sys::{jint, jmethodID, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{OnceLock, RwLock};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Frame {
    /// JDK plumbing between a caller and the file: looked through.
    Io,
    /// Class or resource loading: the call stays live.
    Loading,
    /// Anything else: the program's call.
    Program,
}

/// Packages and classes of the JDK whose frames load classes or resources (prefixes of the
/// internal class name). Checked before [`IO`]: `java/net/URLClassLoader` is loading.
const LOADING: &[&str] = &[
    "java/lang/ClassLoader",
    "java/net/URLClassLoader",
    "java/security/SecureClassLoader",
    "jdk/internal/loader/",
    "jdk/internal/module/",
    "java/lang/module/",
    "jdk/internal/jimage/",
    "jdk/internal/jrtfs/",
    "java/util/ServiceLoader",
    "java/util/ResourceBundle",
    "sun/launcher/",
    // The JDK's own configuration and devices, read in class initializers whichever thread
    // gets there first (UUID's SecureRandom from several threads): the security properties,
    // and NativePRNG's /dev/random and /dev/urandom (what it makes of them is recorded at its
    // API, src/entropy.rs).
    "java/security/Security",
    "sun/security/provider/NativePRNG",
];

/// JDK plumbing a loading or program frame reaches the file through.
const IO: &[&str] = &[
    "java/io/",
    "java/nio/",
    "sun/nio/",
    "java/util/zip/",
    "java/util/jar/",
    "sun/net/www/",
    "java/net/URL",
    "java/net/JarURLConnection",
    "java/lang/invoke/",
    "java/lang/reflect/",
    "jdk/internal/reflect/",
    "jdk/internal/misc/",
    "jdk/internal/util/",
    "jdk/internal/access/",
    "java/security/AccessController",
    "sun/security/provider/FileInputStreamPool",
];

/// Frames read by the first `GetStackTrace`. The walk costs ~0.5 us for the first frames of
/// a JIT-compiled caller and ~1-2 us once it crosses into the next physical frame (measured
/// on JDK 17, 7 frames deep: 4 frames 0.7-0.9 us, 6 frames 1.1-2.3 us). The deciding frame
/// of `File.exists`, a FileInputStream or `Files.exists` called by the program, and of
/// `URLClassPath` looking up a class, lies at depth 2 to 4; that of `Files.readAllBytes` or
/// javac's reads at 7 to 10, read by the next call. How deep the walk goes before it calls
/// the stack the program's (no loading frame that far from a file call has been seen).
const FIRST: usize = 5;
const CHUNK: usize = 32;
const MAX_DEPTH: jint = 1024;

/// The kind of a frame's class, by internal name (`java/io/File`); `None`: decided by
/// whether the class is a class loader.
pub(crate) fn by_name(class: &str) -> Option<Frame> {
    if LOADING.iter().any(|p| class.starts_with(p)) {
        Some(Frame::Loading)
    } else if IO.iter().any(|p| class.starts_with(p)) {
        Some(Frame::Io)
    } else {
        None
    }
}

/// Hashes a `jmethodID` (a pointer: its low bits are zero) for the frame maps; the default
/// SipHash was a third of a frame's lookup.
#[derive(Default, Clone, Copy)]
struct MethodHash(u64);

impl Hasher for MethodHash {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_usize(&mut self, n: usize) {
        let h = (n as u64 ^ (n as u64 >> 4)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Map = HashMap<usize, Frame, BuildHasherDefault<MethodHash>>;

/// Every thread's answers, and each thread's own copy in front of it (no lock on the path).
static FRAMES: OnceLock<RwLock<Map>> = OnceLock::new();
thread_local! {
    static MINE: RefCell<Map> = RefCell::new(Map::default());
}

/// Whether the calling thread's current file call is made by class or resource loading.
/// Any failure to read the stack answers no (the call is then an event, in both modes).
pub(crate) fn class_loading(a: &Agent, raw: *mut RawJniEnv) -> bool {
    let mut buf = [FrameInfo::default(); CHUNK];
    let mut start: jint = 0;
    let mut want = FIRST;
    while start < MAX_DEPTH {
        let Ok(n) = a.jvmti.own_stack(start, &mut buf[..want]) else {
            return false;
        };
        for f in &buf[..n] {
            match frame(a, raw, f.method) {
                Frame::Io => {}
                Frame::Loading => return true,
                Frame::Program => return false,
            }
        }
        if n < want {
            return false;
        }
        start += n as jint;
        want = CHUNK;
    }
    false
}

fn frame(a: &Agent, raw: *mut RawJniEnv, method: jmethodID) -> Frame {
    let id = method as usize;
    if let Some(k) = MINE.with(|m| m.borrow().get(&id).copied()) {
        return k;
    }
    let map = FRAMES.get_or_init(Default::default);
    let known = map.read().ok().and_then(|m| m.get(&id).copied());
    let k = known.unwrap_or_else(|| {
        let k = classify(a, raw, method);
        if let Ok(mut m) = map.write() {
            m.insert(id, k);
        }
        k
    });
    MINE.with(|m| m.borrow_mut().insert(id, k));
    k
}

fn classify(a: &Agent, raw: *mut RawJniEnv, method: jmethodID) -> Frame {
    let Ok(class) = a.jvmti.declaring_class(method) else {
        return Frame::Program;
    };
    // SAFETY: the calling thread's JNIEnv, passed to the native by the JVM.
    let Ok(mut env) = (unsafe { JNIEnv::from_raw(raw) }) else {
        return Frame::Program;
    };
    // SAFETY: a local reference GetMethodDeclaringClass made in this native's frame.
    let class = unsafe { jni::objects::JClass::from_raw(class) };
    let sig = a.jvmti.class_signature(class.as_raw()).unwrap_or_default();
    let name = sig
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
        .unwrap_or(&sig);
    let k = by_name(name).unwrap_or_else(|| match class_loader_class(&mut env) {
        Some(cl) => {
            let is = env.is_assignable_from(&class, <&jni::objects::JClass>::from(cl.as_obj()));
            if crate::clear_exception(&mut env) {
                return Frame::Program;
            }
            if is.unwrap_or(false) {
                Frame::Loading
            } else {
                Frame::Program
            }
        }
        None => Frame::Program,
    });
    let _ = env.delete_local_ref(class);
    k
}

fn class_loader_class(env: &mut JNIEnv) -> Option<&'static GlobalRef> {
    static CL: OnceLock<Option<GlobalRef>> = OnceLock::new();
    CL.get_or_init(|| {
        let c = env.find_class("java/lang/ClassLoader");
        let g = c.and_then(|c| env.new_global_ref(c));
        crate::clear_exception(env);
        g.ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loading_and_plumbing_by_name() {
        for c in [
            "jdk/internal/loader/URLClassPath$FileLoader",
            "jdk/internal/loader/BuiltinClassLoader",
            "java/net/URLClassLoader$1",
            "java/lang/ClassLoader",
            "java/util/ServiceLoader$LazyClassPathLookupIterator",
            "jdk/internal/module/ModuleReferences$JarModuleReader",
            "sun/launcher/LauncherHelper",
        ] {
            assert_eq!(by_name(c), Some(Frame::Loading), "{c}");
        }
        for c in [
            "java/io/FileInputStream",
            "java/util/zip/ZipFile$Source",
            "sun/nio/fs/UnixChannelFactory",
            "java/nio/file/Files",
            "sun/net/www/protocol/file/FileURLConnection",
            "java/net/URL",
            "java/security/AccessController",
        ] {
            assert_eq!(by_name(c), Some(Frame::Io), "{c}");
        }
        // Decided by their place in the class hierarchy, or the program's.
        for c in [
            "com/sun/tools/javac/file/JavacFileManager",
            "org/apache/tools/ant/AntClassLoader",
            "Main",
            "java/util/Scanner",
            "sun/security/provider/SeedGenerator$URLSeedGenerator",
        ] {
            assert_eq!(by_name(c), None, "{c}");
        }
    }
}
