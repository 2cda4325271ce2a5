//! Signals sent to the launcher reach the program it runs, exactly once.
//!
//! A harness that started `replay record -- CMD` knows the launcher's pid, not the program's:
//! `kill PID`, Python's `Popen.terminate()`, `timeout` and a supervisor's stop all signal the
//! launcher. Before, SIGTERM killed the launcher and left the program running unrecorded
//! beside a log without its summary. Now the launcher passes the signal on and waits for the
//! program's status, as a shell's `exec` would have let the program get it directly.
//!
//! The same signal must not arrive twice: a group kill (`kill -TERM -PGID`, a terminal's
//! Ctrl-C, a shell's SIGHUP at logout) reaches every process of the group, the program too.
//! - Not run from a terminal's foreground: the program gets its own process group, so a group
//!   kill meant for the launcher reaches the program only through the launcher. If the
//!   launcher is killed outright (SIGKILL), the kernel kills the program after it
//!   (`PR_SET_PDEATHSIG`), as the group kill would have.
//! - Run from a terminal's foreground (job control needs the program in the terminal's group):
//!   the program shares the group, and what the terminal driver sends (Ctrl-C, Ctrl-\, hang-up)
//!   or the shell sends to the job (the launcher's parent) already reached it. Only a signal
//!   from another process, sent to the launcher alone, is passed on.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The signals a program's user sends to stop or poke it.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

static CHILD: AtomicI32 = AtomicI32::new(0);
static SHARED_GROUP: AtomicBool = AtomicBool::new(false);
static PARENT: AtomicI32 = AtomicI32::new(0);

/// Whether the launcher runs in the foreground of its terminal (interactive job control).
fn foreground() -> bool {
    // SAFETY: plain queries on fd 0 and this process.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Prepares `cmd`: its own process group unless the launcher runs in a terminal's
/// foreground, and death with the launcher.
pub fn prepare(cmd: &mut Command) {
    let shared = foreground();
    SHARED_GROUP.store(shared, Ordering::Relaxed);
    if !shared {
        cmd.process_group(0);
        // SAFETY: prctl is async-signal-safe; it runs in the child between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
}

extern "C" fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let child = CHILD.load(Ordering::Relaxed);
    if child <= 0 {
        return;
    }
    if SHARED_GROUP.load(Ordering::Relaxed) {
        // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
        let (code, from) = unsafe { ((*info).si_code, (*info).si_pid()) };
        // Sent by the terminal driver or the kernel, or by the shell that runs the job: it
        // went to the whole group, the program included.
        if code != libc::SI_USER && code != libc::SI_QUEUE || from == PARENT.load(Ordering::Relaxed)
        {
            return;
        }
    }
    // SAFETY: kill is async-signal-safe.
    unsafe {
        libc::kill(child, sig);
    }
}

/// From now on, the signals above sent to the launcher go to `child` (spawned after
/// [`prepare`]). Called once the child has exec'd, so it started with default dispositions.
pub fn start(child: u32) {
    CHILD.store(child as i32, Ordering::Relaxed);
    // SAFETY: getppid has no preconditions; sigaction installs a handler that only reads
    // atomics and calls kill (async-signal-safe).
    unsafe {
        PARENT.store(libc::getppid(), Ordering::Relaxed);
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = pass_on as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        for sig in FORWARDED {
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// Signals sent to the launcher are no longer passed on: the program was reaped (its pid may
/// be reused), or this is a forked copier of the launcher.
pub fn stop() {
    CHILD.store(0, Ordering::Relaxed);
}
