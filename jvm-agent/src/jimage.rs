//! Original class bytes of JDK classes, read from the runtime image (`lib/modules`) through
//! the JVM's own `libjimage.so`.
//!
//! Why: at VMInit the agent must find, among the ~440 classes loaded before its hook class
//! existed, the few that call a clock. Without a warm class cache it asked the JVM for each
//! class's constant pool (`GetConstantPool`, ~25 us a class: 10-16 ms, the whole difference
//! between a JDK's first run and later ones). The JVM loaded those boot classes from this
//! image (or from the CDS archive, which is checked against the same image), so their bytes
//! are here: a lookup in the image's hash table and a copy out of the mapped file cost a few
//! microseconds, and a byte search for the hooked method names rejects almost every class
//! without parsing it.
//!
//! The caller uses this only when boot classes cannot come from anywhere else (the class
//! cache's conditions: no `--patch-module`, `-Xbootclasspath/a`, `--upgrade-module-path`); a
//! class the image does not hold, or whose bytes are not a class file, is scanned the old way.
//! The library is the one the JVM already loaded (`RTLD_NOLOAD`): the agent loads nothing.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlclose(handle: *mut c_void) -> c_int;
}
const RTLD_LAZY: c_int = 1;
const RTLD_NOLOAD: c_int = 4;

// The jimage.hpp interface, unchanged from JDK 9 to 25.
type OpenFn = unsafe extern "C" fn(*const c_char, *mut i32) -> *mut c_void;
type CloseFn = unsafe extern "C" fn(*mut c_void);
type PackageToModuleFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *const c_char;
type FindResourceFn =
    unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, *const c_char, *mut i64) -> i64;
type GetResourceFn = unsafe extern "C" fn(*mut c_void, i64, *mut c_char, i64) -> i64;

/// An open runtime image. Closed (its reference count dropped: the JVM keeps its own) on drop.
pub struct Image {
    lib: *mut c_void,
    image: *mut c_void,
    close: CloseFn,
    package_to_module: PackageToModuleFn,
    find: FindResourceFn,
    get: GetResourceFn,
    /// Package (`java/lang`) -> module (`java.base`), `None` for a package of no module.
    modules: HashMap<Vec<u8>, Option<CString>>,
    buf: Vec<u8>,
}

impl Image {
    /// Opens `<java_home>/lib/modules` with the JVM's `libjimage.so`; `None` when the JVM did
    /// not load that library (an exploded build) or the image does not open.
    pub fn open(java_home: &str) -> Option<Image> {
        let lib = CString::new(format!("{java_home}/lib/libjimage.so")).ok()?;
        let modules = CString::new(format!("{java_home}/lib/modules")).ok()?;
        // SAFETY: plain dl calls; symbols are cast to the types jimage.hpp declares.
        unsafe {
            let lib = dlopen(lib.as_ptr(), RTLD_LAZY | RTLD_NOLOAD);
            if lib.is_null() {
                return None;
            }
            let sym = |n: &CStr| {
                let p = dlsym(lib, n.as_ptr());
                (!p.is_null()).then_some(p)
            };
            let syms = (|| {
                Some((
                    sym(c"JIMAGE_Open")?,
                    sym(c"JIMAGE_Close")?,
                    sym(c"JIMAGE_PackageToModule")?,
                    sym(c"JIMAGE_FindResource")?,
                    sym(c"JIMAGE_GetResource")?,
                ))
            })();
            let Some((open, close, p2m, find, get)) = syms else {
                dlclose(lib);
                return None;
            };
            let open: OpenFn = std::mem::transmute::<*mut c_void, OpenFn>(open);
            let mut error = 0i32;
            let image = open(modules.as_ptr(), &mut error);
            if image.is_null() {
                dlclose(lib);
                return None;
            }
            Some(Image {
                lib,
                image,
                close: std::mem::transmute::<*mut c_void, CloseFn>(close),
                package_to_module: std::mem::transmute::<*mut c_void, PackageToModuleFn>(p2m),
                find: std::mem::transmute::<*mut c_void, FindResourceFn>(find),
                get: std::mem::transmute::<*mut c_void, GetResourceFn>(get),
                modules: HashMap::new(),
                buf: Vec::new(),
            })
        }
    }

    /// The class file of the class with internal name `name` (`java/lang/Thread`), or `None`
    /// if the image has no such class. The slice lives until the next call.
    pub fn class_bytes(&mut self, name: &str) -> Option<&[u8]> {
        let package = name.rsplit_once('/')?.0.as_bytes();
        if !self.modules.contains_key(package) {
            let p = CString::new(package).ok()?;
            // SAFETY: open image; the returned name is owned by the image, copied at once.
            let m = unsafe {
                let m = (self.package_to_module)(self.image, p.as_ptr());
                (!m.is_null()).then(|| CStr::from_ptr(m).to_owned())
            };
            self.modules.insert(package.to_vec(), m);
        }
        let module = self.modules.get(package)?.as_ref()?;
        let resource = CString::new(format!("{name}.class")).ok()?;
        let mut size: i64 = 0;
        // SAFETY: open image, NUL-terminated strings; the buffer has `size` bytes. The version
        // argument is not used by the lookup (HotSpot passes its own "major.minor").
        unsafe {
            let loc = (self.find)(
                self.image,
                module.as_ptr(),
                c"9.0".as_ptr(),
                resource.as_ptr(),
                &mut size,
            );
            if loc == 0 || size <= 0 || size > i32::MAX as i64 {
                return None;
            }
            self.buf.resize(size as usize, 0);
            let got = (self.get)(self.image, loc, self.buf.as_mut_ptr().cast(), size);
            if got != size {
                return None;
            }
        }
        Some(&self.buf)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        // SAFETY: opened in `open`; the JVM's own references keep its image and library.
        unsafe {
            (self.close)(self.image);
            dlclose(self.lib);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_opened_only_through_a_library_the_process_already_loaded() {
        // A unit-test process has no JVM: nothing is loaded, nothing is opened. (The real
        // image is exercised by tests/tests/jvm_startup.rs, a cold run judging every class.)
        assert!(Image::open("/nonexistent-jdk").is_none());
        if let Some(home) = std::fs::read_dir("/usr/lib/jvm")
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
        {
            assert!(Image::open(&home.path().to_string_lossy()).is_none());
        }
    }
}
