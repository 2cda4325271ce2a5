//! Hand-written JVMTI bindings: only the functions and events this agent uses.
//!
//! Why by hand: bindgen needs libclang at build time, and the agent must build on a machine
//! that has nothing but a JDK. The JVMTI function table is an array of function pointers
//! whose slot numbers are fixed by the specification (`jvmti.h` numbers them, "1 :
//! RESERVED", "2 : Set Event Notification Mode", ...); slots are never reused, so the same
//! numbers hold for JDK 11 through 25. We index the table by those numbers.

use jni::sys::{jboolean, jclass, jint, jlong, jmethodID, jobject, JNIEnv, JavaVM};

/// `jthread` is a `jobject` (jvmti.h).
#[allow(non_camel_case_types)]
pub type jthread = jobject;
use std::ffi::{c_char, c_int, c_uchar, c_void, CStr};
use std::ptr;

/// `jvmtiEnv` in C is `const struct jvmtiInterface_1_ *`; functions take a pointer to it.
pub type RawEnv = *mut *const *const c_void;

pub const JVMTI_VERSION_11: jint = 0x300B_0000;
pub const JNI_OK: jint = 0;

pub const ENABLE: c_int = 1;

// Event numbers (jvmtiEvent); the callbacks struct holds one pointer per event from 50.
pub const EV_VM_INIT: c_int = 50;
pub const EV_VM_DEATH: c_int = 51;
pub const EV_THREAD_START: c_int = 52;
pub const EV_THREAD_END: c_int = 53;
pub const EV_CLASS_FILE_LOAD_HOOK: c_int = 54;
pub const EV_VM_START: c_int = 57;
pub const EV_NATIVE_METHOD_BIND: c_int = 67;
const FIRST_EVENT: c_int = 50;
/// Room for every event up to the newest JDK's (VirtualThreadEnd is 88); unused slots are null.
const EVENT_SLOTS: usize = 40;

// Function slots (1-based, as numbered in jvmti.h).
const F_SET_EVENT_NOTIFICATION_MODE: usize = 2;
const F_IS_MODIFIABLE_CLASS: usize = 45;
const F_ALLOCATE: usize = 46;
const F_DEALLOCATE: usize = 47;
const F_GET_CLASS_SIGNATURE: usize = 48;
const F_GET_CLASS_STATUS: usize = 49;
const F_GET_CLASS_LOADER: usize = 57;
const F_GET_METHOD_NAME: usize = 64;
const F_GET_METHOD_DECLARING_CLASS: usize = 65;
const F_IS_METHOD_NATIVE: usize = 76;
const F_GET_STACK_TRACE: usize = 104;
const F_GET_TAG: usize = 106;
const F_SET_TAG: usize = 107;
const F_GET_LOADED_CLASSES: usize = 78;
const F_SET_EVENT_CALLBACKS: usize = 122;
const F_GET_SYSTEM_PROPERTY: usize = 131;
const F_ADD_CAPABILITIES: usize = 142;
const F_GET_CONSTANT_POOL: usize = 146;
const F_RETRANSFORM_CLASSES: usize = 152;

/// `jvmtiCapabilities`: 128 bits of C bitfields, allocated from the lowest bit of the first
/// `unsigned int` up (the x86-64 and aarch64 SysV layout).
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct Capabilities([u32; 4]);

impl Capabilities {
    pub const CAN_TAG_OBJECTS: u32 = 0;
    pub const CAN_GENERATE_ALL_CLASS_HOOK_EVENTS: u32 = 26;
    pub const CAN_GENERATE_NATIVE_METHOD_BIND_EVENTS: u32 = 30;
    pub const CAN_GET_CONSTANT_POOL: u32 = 35;
    pub const CAN_RETRANSFORM_CLASSES: u32 = 37;

    pub fn with(mut self, bit: u32) -> Self {
        self.0[(bit / 32) as usize] |= 1 << (bit % 32);
        self
    }
}

pub type VmInitFn = unsafe extern "C" fn(RawEnv, *mut JNIEnv, jthread);
pub type VmDeathFn = unsafe extern "C" fn(RawEnv, *mut JNIEnv);
pub type ThreadEndFn = unsafe extern "C" fn(RawEnv, *mut JNIEnv, jthread);
pub type ThreadStartFn = unsafe extern "C" fn(RawEnv, *mut JNIEnv, jthread);
pub type VmStartFn = unsafe extern "C" fn(RawEnv, *mut JNIEnv);
pub type NativeMethodBindFn =
    unsafe extern "C" fn(RawEnv, *mut JNIEnv, jthread, jmethodID, *mut c_void, *mut *mut c_void);
pub type ClassFileLoadHookFn = unsafe extern "C" fn(
    RawEnv,
    *mut JNIEnv,
    jclass,
    jobject,
    *const c_char,
    jobject,
    jint,
    *const c_uchar,
    *mut jint,
    *mut *mut c_uchar,
);

/// `jvmtiEventCallbacks`: one function pointer per event number from 50.
#[repr(C)]
pub struct Callbacks([*const c_void; EVENT_SLOTS]);

impl Default for Callbacks {
    fn default() -> Self {
        Callbacks([ptr::null(); EVENT_SLOTS])
    }
}

impl Callbacks {
    fn set(&mut self, event: c_int, f: *const c_void) {
        self.0[(event - FIRST_EVENT) as usize] = f;
    }
    pub fn vm_init(&mut self, f: VmInitFn) {
        self.set(EV_VM_INIT, f as *const c_void);
    }
    pub fn vm_death(&mut self, f: VmDeathFn) {
        self.set(EV_VM_DEATH, f as *const c_void);
    }
    pub fn thread_start(&mut self, f: ThreadStartFn) {
        self.set(EV_THREAD_START, f as *const c_void);
    }
    pub fn thread_end(&mut self, f: ThreadEndFn) {
        self.set(EV_THREAD_END, f as *const c_void);
    }
    pub fn vm_start(&mut self, f: VmStartFn) {
        self.set(EV_VM_START, f as *const c_void);
    }
    pub fn class_file_load_hook(&mut self, f: ClassFileLoadHookFn) {
        self.set(EV_CLASS_FILE_LOAD_HOOK, f as *const c_void);
    }
    pub fn native_method_bind(&mut self, f: NativeMethodBindFn) {
        self.set(EV_NATIVE_METHOD_BIND, f as *const c_void);
    }
}

/// A JVMTI error: the function that failed and its `jvmtiError` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    pub function: &'static str,
    pub code: c_int,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.code {
            62 => "WRONG_PHASE",
            98 => "NOT_AVAILABLE",
            99 => "MUST_POSSESS_CAPABILITY",
            110 => "OUT_OF_MEMORY",
            112 => "UNMODIFIABLE_CLASS",
            113 => "INTERNAL",
            _ => "",
        };
        write!(f, "JVMTI {} failed with error {}", self.function, self.code)?;
        if !name.is_empty() {
            write!(f, " ({name})")?;
        }
        Ok(())
    }
}

/// `jvmtiFrameInfo`: a frame's method and bytecode index.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct FrameInfo {
    pub method: jmethodID,
    pub location: jlong,
}

impl Default for FrameInfo {
    fn default() -> Self {
        FrameInfo {
            method: ptr::null_mut(),
            location: 0,
        }
    }
}

/// A JVMTI environment. The pointer stays valid for the life of the VM (we never dispose of
/// it), and JVMTI functions may be called from any thread.
#[derive(Clone, Copy)]
pub struct Jvmti(RawEnv);

// SAFETY: JVMTI environments are usable from every thread (the spec allows it).
unsafe impl Send for Jvmti {}
unsafe impl Sync for Jvmti {}

macro_rules! slot {
    ($self:ident, $n:expr, $t:ty) => {{
        // SAFETY: slot $n of the function table has the C signature $t (jvmti.h); the table
        // outlives the environment.
        let table = *$self.0;
        let f = *table.add($n - 1);
        std::mem::transmute::<*const c_void, $t>(f)
    }};
}

fn check(function: &'static str, code: c_int) -> Result<(), Error> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error { function, code })
    }
}

impl Jvmti {
    /// Gets a JVMTI 11 environment from the VM.
    ///
    /// # Safety
    /// `vm` must be the `JavaVM` passed to `Agent_OnLoad`.
    pub unsafe fn from_vm(vm: *mut JavaVM) -> Result<Jvmti, Error> {
        let mut env: *mut c_void = ptr::null_mut();
        let get_env = (**vm).GetEnv.ok_or(Error {
            function: "GetEnv",
            code: -1,
        })?;
        let r = get_env(vm, &mut env, JVMTI_VERSION_11);
        if r != JNI_OK || env.is_null() {
            return Err(Error {
                function: "GetEnv(JVMTI 11)",
                code: r,
            });
        }
        Ok(Jvmti(env as RawEnv))
    }

    pub fn add_capabilities(&self, caps: &Capabilities) -> Result<(), Error> {
        type F = unsafe extern "C" fn(RawEnv, *const Capabilities) -> c_int;
        // SAFETY: valid env and capabilities struct.
        unsafe {
            check(
                "AddCapabilities",
                slot!(self, F_ADD_CAPABILITIES, F)(self.0, caps),
            )
        }
    }

    pub fn set_event_callbacks(&self, cb: &Callbacks) -> Result<(), Error> {
        type F = unsafe extern "C" fn(RawEnv, *const Callbacks, jint) -> c_int;
        let size = std::mem::size_of::<Callbacks>() as jint;
        // SAFETY: the VM copies min(size, its own struct size) bytes.
        unsafe {
            check(
                "SetEventCallbacks",
                slot!(self, F_SET_EVENT_CALLBACKS, F)(self.0, cb, size),
            )
        }
    }

    pub fn enable_event(&self, event: c_int) -> Result<(), Error> {
        type F = unsafe extern "C" fn(RawEnv, c_int, c_int, jthread, ...) -> c_int;
        // SAFETY: variadic in C; a null thread means "all threads".
        unsafe {
            check(
                "SetEventNotificationMode",
                slot!(self, F_SET_EVENT_NOTIFICATION_MODE, F)(
                    self.0,
                    ENABLE,
                    event,
                    ptr::null_mut(),
                ),
            )
        }
    }

    /// Reads a system property (available from the OnLoad phase on).
    pub fn system_property(&self, name: &CStr) -> Result<String, Error> {
        type F = unsafe extern "C" fn(RawEnv, *const c_char, *mut *mut c_char) -> c_int;
        let mut out: *mut c_char = ptr::null_mut();
        // SAFETY: valid env; `out` is JVMTI-allocated and freed below.
        unsafe {
            check(
                "GetSystemProperty",
                slot!(self, F_GET_SYSTEM_PROPERTY, F)(self.0, name.as_ptr(), &mut out),
            )?;
            let s = CStr::from_ptr(out).to_string_lossy().into_owned();
            self.deallocate(out as *mut c_uchar);
            Ok(s)
        }
    }

    /// Allocates JVMTI memory (what ClassFileLoadHook must return new class bytes in).
    pub fn allocate(&self, size: usize) -> Result<*mut c_uchar, Error> {
        type F = unsafe extern "C" fn(RawEnv, jlong, *mut *mut c_uchar) -> c_int;
        let mut out: *mut c_uchar = ptr::null_mut();
        // SAFETY: valid env.
        unsafe {
            check(
                "Allocate",
                slot!(self, F_ALLOCATE, F)(self.0, size as jlong, &mut out),
            )?
        };
        Ok(out)
    }

    /// # Safety
    /// `mem` must come from this environment's `Allocate` (or a JVMTI out-parameter).
    pub unsafe fn deallocate(&self, mem: *mut c_uchar) {
        type F = unsafe extern "C" fn(RawEnv, *mut c_uchar) -> c_int;
        if !mem.is_null() {
            slot!(self, F_DEALLOCATE, F)(self.0, mem);
        }
    }

    /// Every loaded class, as JNI local references of the calling frame.
    pub fn loaded_classes(&self) -> Result<Vec<jclass>, Error> {
        type F = unsafe extern "C" fn(RawEnv, *mut jint, *mut *mut jclass) -> c_int;
        let mut n: jint = 0;
        let mut arr: *mut jclass = ptr::null_mut();
        // SAFETY: valid env; the array is JVMTI-allocated and freed after copying.
        unsafe {
            check(
                "GetLoadedClasses",
                slot!(self, F_GET_LOADED_CLASSES, F)(self.0, &mut n, &mut arr),
            )?;
            let v = std::slice::from_raw_parts(arr, n.max(0) as usize).to_vec();
            self.deallocate(arr as *mut c_uchar);
            Ok(v)
        }
    }

    pub fn is_modifiable_class(&self, class: jclass) -> Result<bool, Error> {
        type F = unsafe extern "C" fn(RawEnv, jclass, *mut jboolean) -> c_int;
        let mut b: jboolean = 0;
        // SAFETY: valid env and class reference.
        unsafe {
            check(
                "IsModifiableClass",
                slot!(self, F_IS_MODIFIABLE_CLASS, F)(self.0, class, &mut b),
            )?
        };
        Ok(b != 0)
    }

    /// The class's JVM signature, e.g. `Ljava/lang/Thread;`.
    pub fn class_signature(&self, class: jclass) -> Result<String, Error> {
        type F = unsafe extern "C" fn(RawEnv, jclass, *mut *mut c_char, *mut *mut c_char) -> c_int;
        let mut sig: *mut c_char = ptr::null_mut();
        // SAFETY: valid env; a null generic pointer asks for no generic signature.
        unsafe {
            check(
                "GetClassSignature",
                slot!(self, F_GET_CLASS_SIGNATURE, F)(self.0, class, &mut sig, ptr::null_mut()),
            )?;
            let s = CStr::from_ptr(sig).to_string_lossy().into_owned();
            self.deallocate(sig as *mut c_uchar);
            Ok(s)
        }
    }

    /// Whether the class is initialized (its `<clinit>` has run to completion).
    pub fn is_initialized(&self, class: jclass) -> Result<bool, Error> {
        type F = unsafe extern "C" fn(RawEnv, jclass, *mut jint) -> c_int;
        const JVMTI_CLASS_STATUS_INITIALIZED: jint = 4;
        let mut status: jint = 0;
        // SAFETY: valid env and class reference.
        unsafe {
            check(
                "GetClassStatus",
                slot!(self, F_GET_CLASS_STATUS, F)(self.0, class, &mut status),
            )?
        };
        Ok(status & JVMTI_CLASS_STATUS_INITIALIZED != 0)
    }

    /// Whether the class was defined by the boot loader (GetClassLoader gives null). A
    /// non-null loader reference is a local reference of the calling frame and is freed.
    pub fn is_boot_class(&self, jni: *mut JNIEnv, class: jclass) -> Result<bool, Error> {
        type F = unsafe extern "C" fn(RawEnv, jclass, *mut jobject) -> c_int;
        let mut loader: jobject = ptr::null_mut();
        // SAFETY: valid env and class reference; `jni` is the calling thread's env or null.
        unsafe {
            check(
                "GetClassLoader",
                slot!(self, F_GET_CLASS_LOADER, F)(self.0, class, &mut loader),
            )?;
            if loader.is_null() {
                return Ok(true);
            }
            if !jni.is_null() {
                if let Some(del) = (**jni).DeleteLocalRef {
                    del(jni, loader);
                }
            }
        }
        Ok(false)
    }

    /// The class's constant pool in class-file format: (entry count, bytes).
    pub fn constant_pool(&self, class: jclass) -> Result<(u16, Vec<u8>), Error> {
        type F =
            unsafe extern "C" fn(RawEnv, jclass, *mut jint, *mut jint, *mut *mut c_uchar) -> c_int;
        let (mut count, mut len): (jint, jint) = (0, 0);
        let mut bytes: *mut c_uchar = ptr::null_mut();
        // SAFETY: valid env; the bytes are JVMTI-allocated and freed after copying.
        unsafe {
            check(
                "GetConstantPool",
                slot!(self, F_GET_CONSTANT_POOL, F)(
                    self.0, class, &mut count, &mut len, &mut bytes,
                ),
            )?;
            let v = if bytes.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(bytes, len.max(0) as usize).to_vec()
            };
            self.deallocate(bytes);
            Ok((count.clamp(0, u16::MAX as jint) as u16, v))
        }
    }

    /// A method's (declaring class signature, name, descriptor). `jni` (null in the primordial
    /// phase) frees the class reference GetMethodDeclaringClass makes: in NativeMethodBind,
    /// called for every native the JVM binds, those would pile up in the thread's frame.
    pub fn method_names(
        &self,
        jni: *mut JNIEnv,
        method: jmethodID,
    ) -> Result<(String, String, String), Error> {
        type Decl = unsafe extern "C" fn(RawEnv, jmethodID, *mut jclass) -> c_int;
        type Name = unsafe extern "C" fn(
            RawEnv,
            jmethodID,
            *mut *mut c_char,
            *mut *mut c_char,
            *mut *mut c_char,
        ) -> c_int;
        let mut class: jclass = ptr::null_mut();
        let (mut name, mut sig): (*mut c_char, *mut c_char) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: valid env and method; the strings are JVMTI-allocated and freed here. The
        // class is a local reference of the calling (event) frame.
        unsafe {
            check(
                "GetMethodDeclaringClass",
                slot!(self, F_GET_METHOD_DECLARING_CLASS, Decl)(self.0, method, &mut class),
            )?;
            let owner = self.class_signature(class);
            if !jni.is_null() && !class.is_null() {
                if let Some(del) = (**jni).DeleteLocalRef {
                    del(jni, class);
                }
            }
            let owner = owner?;
            check(
                "GetMethodName",
                slot!(self, F_GET_METHOD_NAME, Name)(
                    self.0,
                    method,
                    &mut name,
                    &mut sig,
                    ptr::null_mut(),
                ),
            )?;
            let n = CStr::from_ptr(name).to_string_lossy().into_owned();
            let s = CStr::from_ptr(sig).to_string_lossy().into_owned();
            self.deallocate(name as *mut c_uchar);
            self.deallocate(sig as *mut c_uchar);
            Ok((owner, n, s))
        }
    }

    /// The calling thread's frames from `start` (0: the innermost) into `buf`; returns how
    /// many were filled (fewer than `buf.len()` at the bottom of the stack).
    pub fn own_stack(&self, start: jint, buf: &mut [FrameInfo]) -> Result<usize, Error> {
        type F =
            unsafe extern "C" fn(RawEnv, jthread, jint, jint, *mut FrameInfo, *mut jint) -> c_int;
        let mut n: jint = 0;
        // SAFETY: valid env; a null thread is the current one; `buf` holds `len` frames.
        unsafe {
            check(
                "GetStackTrace",
                slot!(self, F_GET_STACK_TRACE, F)(
                    self.0,
                    ptr::null_mut(),
                    start,
                    buf.len() as jint,
                    buf.as_mut_ptr(),
                    &mut n,
                ),
            )?
        };
        Ok(n.max(0) as usize)
    }

    /// Whether `method` is a native method.
    pub fn is_native(&self, method: jmethodID) -> Result<bool, Error> {
        type F = unsafe extern "C" fn(RawEnv, jmethodID, *mut u8) -> c_int;
        let mut native: u8 = 0;
        // SAFETY: valid env and method; jboolean is one byte.
        unsafe {
            check(
                "IsMethodNative",
                slot!(self, F_IS_METHOD_NATIVE, F)(self.0, method, &mut native),
            )?
        };
        Ok(native != 0)
    }

    /// The class declaring `method`, as a local reference of the calling frame.
    pub fn declaring_class(&self, method: jmethodID) -> Result<jclass, Error> {
        type F = unsafe extern "C" fn(RawEnv, jmethodID, *mut jclass) -> c_int;
        let mut class: jclass = ptr::null_mut();
        // SAFETY: valid env and method.
        unsafe {
            check(
                "GetMethodDeclaringClass",
                slot!(self, F_GET_METHOD_DECLARING_CLASS, F)(self.0, method, &mut class),
            )?
        };
        Ok(class)
    }

    /// The object's tag (0: none). Needs `can_tag_objects`.
    pub fn tag(&self, object: jobject) -> Result<jlong, Error> {
        type F = unsafe extern "C" fn(RawEnv, jobject, *mut jlong) -> c_int;
        let mut t: jlong = 0;
        // SAFETY: valid env and object reference.
        unsafe { check("GetTag", slot!(self, F_GET_TAG, F)(self.0, object, &mut t))? };
        Ok(t)
    }

    pub fn set_tag(&self, object: jobject, tag: jlong) -> Result<(), Error> {
        type F = unsafe extern "C" fn(RawEnv, jobject, jlong) -> c_int;
        // SAFETY: valid env and object reference.
        unsafe { check("SetTag", slot!(self, F_SET_TAG, F)(self.0, object, tag)) }
    }

    pub fn retransform_classes(&self, classes: &[jclass]) -> Result<(), Error> {
        type F = unsafe extern "C" fn(RawEnv, jint, *const jclass) -> c_int;
        // SAFETY: valid env and class references.
        unsafe {
            check(
                "RetransformClasses",
                slot!(self, F_RETRANSFORM_CLASSES, F)(
                    self.0,
                    classes.len() as jint,
                    classes.as_ptr(),
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_bits_land_where_the_c_bitfield_puts_them() {
        let c = Capabilities::default()
            .with(Capabilities::CAN_GENERATE_ALL_CLASS_HOOK_EVENTS)
            .with(Capabilities::CAN_GET_CONSTANT_POOL)
            .with(Capabilities::CAN_RETRANSFORM_CLASSES);
        assert_eq!(c.0, [1 << 26, (1 << 3) | (1 << 5), 0, 0]);
        assert_eq!(std::mem::size_of::<Capabilities>(), 16);
    }

    #[test]
    fn callbacks_are_indexed_from_event_50() {
        unsafe extern "C" fn start(_: RawEnv, _: *mut JNIEnv) {}
        let mut cb = Callbacks::default();
        cb.vm_start(start);
        assert!(!cb.0[7].is_null());
        assert_eq!(cb.0.iter().filter(|p| !p.is_null()).count(), 1);
    }
}
