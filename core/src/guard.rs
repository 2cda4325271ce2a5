//! The per-thread "inside a hook" guard.
//!
//! A hooked call made while the same thread is already inside a hooked call (a library's
//! own clock read inside an intercepted read, the JDK opening `/dev/urandom` inside
//! `UUID.randomUUID`) is not an event: in replay the outer call does not run its body, so
//! the inner call would not happen and replay would diverge. Front ends take the guard on
//! entry; a nested hook sees it held and calls through without recording.

use std::cell::Cell;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Held while the thread is inside an intercepted call.
pub struct HookGuard(());

impl HookGuard {
    /// `Some` when the thread was not inside a hook; `None` for a nested call.
    #[inline]
    pub fn enter() -> Option<HookGuard> {
        DEPTH.with(|d| {
            if d.get() != 0 {
                None
            } else {
                d.set(1);
                Some(HookGuard(()))
            }
        })
    }

    /// For C-style callers that cannot hold a Rust value across a call: returns whether the
    /// guard was taken; pair with [`HookGuard::leave`].
    #[inline]
    pub fn try_enter_raw() -> bool {
        DEPTH.with(|d| {
            if d.get() != 0 {
                false
            } else {
                d.set(1);
                true
            }
        })
    }

    #[inline]
    pub fn leave() {
        DEPTH.with(|d| d.set(0));
    }

    #[inline]
    pub fn is_inside() -> bool {
        DEPTH.with(|d| d.get() != 0)
    }
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        HookGuard::leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_enter_is_refused_until_outer_leaves() {
        let g = HookGuard::enter().expect("outer");
        assert!(HookGuard::enter().is_none());
        assert!(HookGuard::is_inside());
        drop(g);
        assert!(!HookGuard::is_inside());
        assert!(HookGuard::enter().is_some());
    }
}
