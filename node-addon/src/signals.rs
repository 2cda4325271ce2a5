//! SIGTERM, SIGINT and SIGHUP while recording: a program with no handler of its own dies of
//! them at once, so the log is completed first. The signal handler only writes the signal's
//! number to a pipe (async-signal-safe); a thread of ours reads it, takes what the JS side
//! published ([`crate::drain`]), records the status the shell reports (128 + the signal),
//! closes the log, and then lets the signal do what it would have done: the handler is
//! reset to the default and the signal raised again, so the process ends as it would have
//! without replay (exit 143 for SIGTERM, 130 for SIGINT, as a shell shows it).
//!
//! Node itself handles SIGTERM and SIGINT at start (it resets the terminal, then dies of the
//! signal): that handler is kept and run afterwards, as the default would be. Ignored
//! signals (SIGHUP under nohup) stay ignored. A program that listens for one (`process.on('SIGTERM')`)
//! replaces this handler with Node's own: its handler runs, and if it exits, the log is
//! completed at 'exit' as always. The signal itself is recorded as the JS thread's last
//! completion (`signal SIGTERM (default action)`), where replay raises it again
//! (lib/signals.js).

use replay_core::Recorder;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

const SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The pipe's write end, for the handler.
static PIPE: AtomicI32 = AtomicI32::new(-1);

/// The actions our handler replaced, per entry of [`SIGNALS`].
static OLD: Mutex<Vec<(libc::c_int, libc::sigaction)>> = Mutex::new(Vec::new());

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; a full pipe loses only a repeat.
        unsafe { libc::write(fd, &b as *const u8 as *const libc::c_void, 1) };
    }
}

/// Installs the handlers (once per process).
pub(crate) fn install(rec: Recorder) {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: plain libc calls on memory we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let (rd, wr) = (fds[0], fds[1]);
    PIPE.store(wr, Ordering::Relaxed);
    let spawned = std::thread::Builder::new()
        .name("replay-signals".into())
        .spawn(move || wait(rd, rec));
    if spawned.is_err() {
        return;
    }
    for sig in SIGNALS {
        // SAFETY: sigaction with zeroed structs we own; the handler only writes to a pipe.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            if libc::sigaction(sig, &act, std::ptr::null_mut()) == 0 {
                OLD.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((sig, old));
            }
        }
    }
}

/// Record: puts our handler back for `sig` after the program removed its last listener of it
/// (libuv then set the default action): a program that re-raises the signal on itself to die
/// of it (npm and npx do, after their child died of it) still completes its log. No-op
/// before [`install`] and for a signal whose action is no longer the default.
pub(crate) fn reinstall(sig: libc::c_int) {
    if PIPE.load(Ordering::Relaxed) < 0 || !SIGNALS.contains(&sig) {
        return;
    }
    // SAFETY: sigaction with zeroed structs we own; the handler only writes to a pipe.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut now) != 0
            || now.sa_sigaction != libc::SIG_DFL
        {
            return;
        }
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut());
    }
}

fn signal_name(sig: libc::c_int) -> Option<&'static str> {
    match sig {
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGINT => Some("SIGINT"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

fn wait(rd: libc::c_int, rec: Recorder) {
    let mut b = 0u8;
    loop {
        // SAFETY: reads one byte into `b`.
        let n = unsafe { libc::read(rd, &mut b as *mut u8 as *mut libc::c_void, 1) };
        if n == 1 {
            break;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
    let sig = libc::c_int::from(b);
    {
        let mut g = crate::drain::lock();
        if let Some(st) = g.as_mut() {
            let _ = st.consume_published();
            st.checkpoint();
            // The signal is the last completion of the JS thread (lib/signals.js): replay
            // raises it again at that turn.
            if let (Some(app), Some(name)) = (st.appender.as_ref(), signal_name(sig)) {
                let json = format!(
                    "{{\"v\":{{\"k\":\"signal {name} (default action)\",\"v\":{{\"t\":\"s\"}}}}}}"
                );
                let kind = rec.intern("node.done");
                let seq = app.seq_counter().fetch_add(1, Ordering::Relaxed);
                let record = crate::events::value_record(json, std::iter::empty());
                app.record_owned_at(seq, kind, 0, None, record);
            }
        }
        // Nothing the JS thread does after the signal is recorded (it runs on for the moment
        // the log takes to close): the signal stays its last event, where replay ends.
        *g = None;
    }
    rec.set_exit_status(128 + sig);
    if let Err(e) = rec.finish() {
        eprintln!("replay: {e}");
    }
    // SAFETY: back to the action we replaced (Node's, or the default), then the signal
    // again: the process ends as it would have without us.
    unsafe {
        let old = OLD.lock().unwrap_or_else(|p| p.into_inner());
        match old.iter().find(|(s, _)| *s == sig) {
            Some((_, act)) => {
                libc::sigaction(sig, act, std::ptr::null_mut());
            }
            None => {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        drop(old);
        libc::kill(libc::getpid(), sig);
    }
}
