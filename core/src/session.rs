//! One process-wide record or replay session, as front ends use it: start from options,
//! record or replay calls, apply the divergence policy, shut down.

use crate::event::Event;
use crate::format::{HeaderInfo, PayloadRef};
use crate::options::{expand_path, Mode, Options, Policy};
use crate::recorder::{RecordConfig, Recorder};
use crate::replayer::{ReplayConfig, Replayer};
use crate::report::{Divergence, DivergenceKind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

pub enum Session {
    Record(Recorder),
    Replay(Replayer),
}

/// Result of asking replay for a call's value.
pub enum Replayed {
    /// The recorded event: return its payload instead of running the call.
    Event(Event),
    /// Run the real call (replay went live under the `warn-live` policy, or there is no
    /// recorded value to give under `warn-continue`).
    Live,
}

pub struct Core {
    pub options: Options,
    pub session: Session,
    pub log: PathBuf,
    divergences: AtomicU64,
}

impl Core {
    /// Starts a session, or returns `Ok(None)` in mode `off`. `default_log` is used when no
    /// log was given (record only; the path is announced on stderr). Errors are one line.
    pub fn start(
        options: Options,
        runtime: &str,
        runtime_version: &str,
        default_log: &str,
    ) -> Result<Option<Core>, String> {
        let log = match (&options.log, options.mode) {
            (_, Mode::Off) => return Ok(None),
            (Some(l), _) => expand_path(l),
            (None, Mode::Record) => {
                let l = expand_path(default_log);
                eprintln!("replay: recording to {l} (set the log option to choose the file)");
                l
            }
            (None, Mode::Replay) => return Err("replay mode needs a log to replay: set the log option (REPLAY_LOG=FILE or log=FILE)".into()),
        };
        let path = PathBuf::from(&log);
        let session = match options.mode {
            Mode::Record => {
                let header =
                    HeaderInfo::for_this_process(runtime, runtime_version, options.describe());
                let cfg = RecordConfig {
                    path: path.clone(),
                    header,
                    sync: options.sync,
                    flush: options.flush,
                    main_thread: "main".into(),
                    compress: options.compress,
                };
                Session::Record(
                    Recorder::open(cfg).map_err(|e| format!("cannot create log {log}: {e}"))?,
                )
            }
            Mode::Replay => {
                let cfg = ReplayConfig {
                    path: path.clone(),
                    order: options.order,
                    timeout: options.timeout,
                };
                Session::Replay(
                    Replayer::open(cfg).map_err(|e| format!("cannot replay {log}: {e}"))?,
                )
            }
            Mode::Off => unreachable!(),
        };
        Ok(Some(Core {
            options,
            session,
            log: path,
            divergences: AtomicU64::new(0),
        }))
    }

    pub fn mode(&self) -> Mode {
        match self.session {
            Session::Record(_) => Mode::Record,
            Session::Replay(_) => Mode::Replay,
        }
    }

    pub fn intern(&self, text: &str) -> u32 {
        match &self.session {
            Session::Record(r) => r.intern(text),
            Session::Replay(r) => r.intern(text),
        }
    }

    pub fn name_thread(&self, name: &str) {
        match &self.session {
            Session::Record(r) => r.name_thread(name),
            Session::Replay(r) => r.name_thread(name),
        }
    }

    #[inline]
    pub fn record(&self, kind: u32, site: u32, digest: Option<u64>, payload: PayloadRef<'_>) {
        if let Session::Record(r) = &self.session {
            r.record(kind, site, digest, payload);
        }
    }

    /// Replays one call, applying the policy to a divergence. `context` gives front-end
    /// detail (a stack) for the report; it is only called when there is a divergence.
    pub fn replay(
        &self,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        context: &dyn Fn() -> Option<String>,
    ) -> Replayed {
        let Session::Replay(r) = &self.session else {
            return Replayed::Live;
        };
        if r.is_live() {
            return Replayed::Live;
        }
        match r.next(kind, site, digest) {
            Ok(e) => Replayed::Event(e),
            Err(d) => {
                let d = match context() {
                    Some(c) => d.with_context(c),
                    None => d,
                };
                let expected = d.expected.clone();
                let stalled = matches!(d.kind, DivergenceKind::Stalled { .. });
                self.diverged(&d);
                match (self.options.policy, expected) {
                    (Policy::WarnContinue, Some(e)) if !stalled => Replayed::Event(e),
                    _ => Replayed::Live,
                }
            }
        }
    }

    /// Reports a divergence and applies the policy: `abort` exits the process with
    /// [`crate::EXIT_DIVERGENCE`]; `warn-live` switches replay to live calls.
    pub fn diverged(&self, d: &Divergence) {
        self.divergences.fetch_add(1, Ordering::Relaxed);
        let mut text = d.render();
        match self.options.policy {
            Policy::Abort => {
                text += &format!(
                    "  (policy abort: exiting with status {})\n",
                    crate::EXIT_DIVERGENCE
                );
                eprint!("{text}");
                std::process::exit(crate::EXIT_DIVERGENCE);
            }
            Policy::WarnLive => {
                text += "  (policy warn-live: the program now runs live)\n";
                eprint!("{text}");
                if let Session::Replay(r) = &self.session {
                    r.go_live();
                }
            }
            Policy::WarnContinue => {
                text += "  (policy warn-continue: replay goes on)\n";
                eprint!("{text}");
                if matches!(d.kind, DivergenceKind::Stalled { .. }) {
                    if let Session::Replay(r) = &self.session {
                        r.go_live();
                    }
                }
            }
        }
    }

    pub fn divergences(&self) -> u64 {
        self.divergences.load(Ordering::Relaxed)
    }

    /// Record: flush and close the log. Replay: check that every recorded event was used
    /// (leftovers are a divergence, handled by the policy). Errors are one line.
    pub fn shutdown(&self) -> Result<(), String> {
        match &self.session {
            Session::Record(r) => {
                let dropped = r.dropped();
                r.finish()
                    .map(|_| ())
                    .map_err(|e| format!("log {}: {e}", self.log.display()))?;
                if dropped > 0 {
                    eprintln!(
                        "replay: {dropped} events came after the log was closed and are not in it"
                    );
                }
                Ok(())
            }
            Session::Replay(r) => {
                if let Err(d) = r.finish() {
                    self.diverged(&d);
                }
                if self.divergences() > 0 {
                    return Err(format!("replay diverged {} time(s)", self.divergences()));
                }
                Ok(())
            }
        }
    }
}
