//! Divergence reports, written for a person: what the recording expected, what the program
//! did, the events just before, and the next command to run.

use crate::event::Event;
use crate::reader::{LogReader, Ordered};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// The call the program made when the divergence was found.
#[derive(Clone, Debug)]
pub struct Actual {
    pub kind: u32,
    pub site: u32,
    pub digest: Option<u64>,
    /// Front-end context, such as the Java stack of the call.
    pub context: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DivergenceKind {
    /// The thread's next recorded event is a different call (kind or inputs differ).
    Mismatch,
    /// The thread asked for more events than it recorded.
    /// `of_kind`: the count is of the call's kind only (front ends that replay each kind in
    /// its own order, and kinds served out of turn).
    Exhausted { recorded: u64, of_kind: bool },
    /// The program ended with recorded events not replayed.
    Leftover { left: u64, total: u64 },
    /// Strict order: the cursor did not move for the bound while this thread waited.
    Stalled { cursor: u64, waited: Duration },
    /// What the program wrote to `stream` differs from the recording at byte `offset` (line
    /// `line`, from 1): `recorded` and `replayed` are that line as each run wrote it (a
    /// phrase in parentheses when one run wrote nothing more).
    Output {
        stream: String,
        offset: u64,
        line: u64,
        recorded: String,
        replayed: String,
    },
    /// Threads' writes to `stream` come in another order than recorded: this thread began
    /// one (`replayed`, the line it writes) while thread `first` had not yet written what
    /// the recording has before it (`recorded`).
    OutputOrder {
        stream: String,
        first: String,
        recorded: String,
        replayed: String,
    },
    /// The program ended with another exit status than the recording's.
    Exit { recorded: i32, replayed: i32 },
    /// What the program wrote into the file `path` differs from the recording's writes:
    /// `recorded` and `replayed` bytes in all (`None`: that run wrote nothing there).
    File {
        path: String,
        recorded: Option<u64>,
        replayed: Option<u64>,
    },
    /// The log was cut (the recorder was killed) and the program went past its last event.
    Cut { offset: u64, why: String },
    /// A lock's recorded order of acquisitions can no longer be followed: `lock` names it,
    /// `why` says who holds or waits for it (a front end's lock macros, e.g. C's
    /// `REPLAY_MUTEX_LOCK`).
    Lock { lock: String, why: String },
}

#[derive(Clone, Debug)]
pub struct ThreadState {
    pub id: u32,
    pub name: String,
    /// A thread of the replayed program is bound to this recorded thread.
    pub present: bool,
    pub consumed: u64,
    pub recorded_so_far: u64,
    pub waiting_for: Option<(u64, String)>,
}

#[derive(Clone, Debug)]
pub struct Divergence {
    pub kind: DivergenceKind,
    /// Sequence number of the event in question (the expected event, or the cursor).
    pub seq: u64,
    pub thread: u32,
    pub thread_name: String,
    pub expected: Option<Event>,
    pub expected_kind: Option<String>,
    pub expected_site: Option<String>,
    pub actual: Actual,
    pub actual_kind: String,
    pub actual_site: String,
    pub threads: Vec<ThreadState>,
    pub log: PathBuf,
    /// What ran live by rule during the replay (class loading, children, ...), per kind, as
    /// the front ends counted it: where to look when replay is faithful to every hooked call
    /// and the program still went another way.
    pub live: Vec<(String, u64)>,
}

impl Divergence {
    /// A divergence that is not about one call (the program's output, its exit status): no
    /// expected event, no actual call; the fields a report shows for it are filled in.
    pub fn at(
        kind: DivergenceKind,
        seq: u64,
        thread: u32,
        thread_name: String,
        log: PathBuf,
    ) -> Self {
        Divergence {
            kind,
            seq,
            thread,
            thread_name,
            expected: None,
            expected_kind: None,
            expected_site: None,
            actual: Actual {
                kind: 0,
                site: 0,
                digest: None,
                context: None,
            },
            actual_kind: String::new(),
            actual_site: String::new(),
            threads: Vec::new(),
            log,
            live: Vec::new(),
        }
    }

    pub fn with_seq(mut self: Box<Self>, seq: u64) -> Box<Self> {
        self.seq = seq;
        self
    }

    pub fn with_context(mut self: Box<Self>, ctx: String) -> Box<Self> {
        self.actual.context = Some(ctx);
        self
    }

    /// One line: what went wrong, where.
    pub fn headline(&self) -> String {
        let t = format!("thread {} \"{}\"", self.thread_display(), self.thread_name);
        match &self.kind {
            DivergenceKind::Mismatch => format!("event #{} in {t}: the program made a different call than the recording", self.seq),
            DivergenceKind::Exhausted { recorded, of_kind } => {
                if *recorded == 0 && self.thread >= u32::MAX / 2 {
                    format!("{t} made a call, but the recording has no such thread")
                } else if *of_kind {
                    format!(
                        "{t} made a {} call after its {recorded} recorded calls of that kind ran out",
                        self.actual_kind
                    )
                } else {
                    format!("{t} made a call after its {recorded} recorded events ran out")
                }
            }
            DivergenceKind::Leftover { left, total } => {
                format!("the program ended with {left} of {total} recorded events not replayed (first: #{})", self.seq)
            }
            DivergenceKind::Stalled { cursor, waited } => format!(
                "no progress for {:.1}s: {t} waits for its turn at event #{}, but event #{cursor} was never replayed",
                waited.as_secs_f64(),
                self.seq
            ),
            DivergenceKind::Output {
                stream, offset, line, ..
            } => {
                // Threads' output is compared apart: name the thread unless it is the main one.
                let whose = if self.thread == 0 {
                    String::new()
                } else {
                    format!(" as {t} wrote it")
                };
                format!(
                    "the program's {stream}{whose} differs from the recording at byte {offset} (line {line})"
                )
            }
            DivergenceKind::OutputOrder { stream, first, .. } => format!(
                "the program's {stream} interleaves differently from the recording: thread {} \"{}\" wrote before {first} did",
                self.thread_display(),
                self.thread_name
            ),
            DivergenceKind::Exit { recorded, replayed } => format!(
                "the program exited with status {replayed}; the recording exited with {recorded}"
            ),
            DivergenceKind::File {
                path,
                recorded,
                replayed,
            } => match (recorded, replayed) {
                (Some(r), Some(p)) if r == p => format!(
                    "the program wrote other bytes into {path} than the recording ({p} bytes, as recorded, with another checksum)"
                ),
                (Some(r), Some(p)) => format!(
                    "the program wrote {p} bytes into {path}; the recording wrote {r}"
                ),
                (Some(r), None) => format!(
                    "the program wrote nothing into {path}; the recording wrote {r} bytes"
                ),
                (None, p) => format!(
                    "the program wrote {} bytes into {path}, which the recording never wrote",
                    p.unwrap_or(0)
                ),
            },
            DivergenceKind::Cut { .. } => format!(
                "the recording ends at event #{}: the recorder was killed or cut there, and the program went on past it",
                self.seq
            ),
            DivergenceKind::Lock { lock, why } => format!(
                "{t} cannot take {lock} in its recorded turn (event #{}): {why}",
                self.seq
            ),
        }
    }

    /// The one-line form of a [`DivergenceKind::Cut`]: the whole report of a cut log, since
    /// nothing went wrong in the replay itself.
    pub fn cut_line(&self) -> Option<String> {
        let DivergenceKind::Cut { offset, why } = &self.kind else {
            return None;
        };
        Some(format!(
            "replay: the recording ends at event #{} (thread \"{}\" went on): the recorder was killed or cut ({} cut at byte {offset}: {why})",
            self.seq,
            self.thread_name,
            self.log.display(),
        ))
    }

    fn thread_display(&self) -> String {
        if self.thread >= u32::MAX / 2 {
            "(new)".into()
        } else {
            self.thread.to_string()
        }
    }

    /// The whole report. Re-reads the log for the events before the divergence.
    pub fn render(&self) -> String {
        if let Some(line) = self.cut_line() {
            return line + "\n";
        }
        let mut s = String::new();
        let _ = writeln!(s, "replay: DIVERGENCE: {}", self.headline());
        if let DivergenceKind::Output {
            recorded, replayed, ..
        }
        | DivergenceKind::OutputOrder {
            recorded, replayed, ..
        } = &self.kind
        {
            let _ = writeln!(s, "  recorded: {recorded}");
            let _ = writeln!(s, "  replayed: {replayed}");
        }
        let digest = |d: Option<u64>| d.map(|d| format!(" [inputs {d:016x}]")).unwrap_or_default();
        let site = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!(" at {s}")
            }
        };
        match &self.expected {
            Some(e) => {
                let _ = writeln!(
                    s,
                    "  expected: {}{}{} -> {}",
                    self.expected_kind.as_deref().unwrap_or("?"),
                    site(self.expected_site.as_deref().unwrap_or("")),
                    digest(e.digest),
                    e.payload.summary()
                );
            }
            None if matches!(self.kind, DivergenceKind::Exhausted { .. }) => {
                let _ = writeln!(s, "  expected: (end of this thread's recording)");
            }
            None => {}
        }
        if !self.actual_kind.is_empty() {
            let _ = writeln!(
                s,
                "  actual:   {}{}{}",
                self.actual_kind,
                site(&self.actual_site),
                digest(self.actual.digest)
            );
        }
        if let Some(ctx) = &self.actual.context {
            for line in ctx.lines() {
                let _ = writeln!(s, "            {line}");
            }
        }
        let (before, at) = events_before(&self.log, self.seq, 5);
        if let (DivergenceKind::Leftover { .. }, Some(at)) = (&self.kind, at) {
            // Which call was never made, and on which thread (the headline gives only its
            // number).
            let _ = writeln!(s, "  first not replayed: {at}");
        }
        if !before.is_empty() {
            let _ = writeln!(s, "  recorded events before #{}:", self.seq);
            for l in before {
                let _ = writeln!(s, "    {l}");
            }
        }
        // Side-record threads (`[child processes]`, `[modules]`...) are the front ends' own,
        // bound to no program thread: nothing to say about them.
        let threads: Vec<_> = self
            .threads
            .iter()
            .filter(|t| !t.name.starts_with('['))
            .collect();
        if !threads.is_empty() {
            let _ = writeln!(s, "  threads:");
            for t in threads {
                let state = match (&t.waiting_for, t.present) {
                    (Some((w, k)), _) => format!("waits for its turn at #{w} ({k})"),
                    (None, false) => "never started in this run".into(),
                    (None, true) if t.consumed < t.recorded_so_far => {
                        "running, or blocked outside replay".into()
                    }
                    (None, true) => "done with its events".into(),
                };
                let _ = writeln!(
                    s,
                    "    t{} {:<16} {state}; replayed {} of {} events read so far",
                    t.id, t.name, t.consumed, t.recorded_so_far
                );
            }
        }
        if !self.live.is_empty() {
            let list: Vec<String> = self.live.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let _ = writeln!(s, "  ran live by rule in this replay: {}", list.join(", "));
        }
        let _ = writeln!(
            s,
            "  next: replay dump {} --around {}",
            shell_quote(&self.log.display().to_string()),
            self.seq
        );
        s
    }
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Up to `n` events before `seq`, and the event `seq` itself if the log has it, one line
/// each, as `replay dump` prints them.
fn events_before(log: &std::path::Path, seq: u64, n: u64) -> (Vec<String>, Option<String>) {
    let Ok(reader) = LogReader::open(log) else {
        return (Vec::new(), None);
    };
    let mut it = Ordered::new(reader);
    let from = seq.saturating_sub(n);
    let mut out = Vec::new();
    while let Some(e) = it.next() {
        if e.seq >= seq {
            let at = (e.seq == seq)
                .then(|| format_event(&e, it.reader.strings(), &it.reader.thread_name(e.thread)));
            return (out, at);
        }
        if e.seq >= from {
            out.push(format_event(
                &e,
                it.reader.strings(),
                &it.reader.thread_name(e.thread),
            ));
        }
    }
    (out, None)
}

/// Event `seq` of a log and its kind's name, read from the file.
pub fn event_at(log: &std::path::Path, seq: u64) -> Option<(String, Event)> {
    let reader = LogReader::open(log).ok()?;
    let mut it = Ordered::new(reader);
    while let Some(e) = it.next() {
        if e.seq == seq {
            return Some((it.reader.strings().name(e.kind).to_string(), e));
        }
        if e.seq > seq {
            return None;
        }
    }
    None
}

/// One event as a line of text (the format of `replay dump`).
pub fn format_event(e: &Event, strings: &crate::reader::Strings, thread_name: &str) -> String {
    let site = if e.site != 0 {
        format!(" {}", strings.name(e.site))
    } else {
        String::new()
    };
    format!(
        "#{:<8} t{} {:<10} {}{} = {}",
        e.seq,
        e.thread,
        thread_name,
        strings.name(e.kind),
        site,
        e.payload.summary()
    )
}
