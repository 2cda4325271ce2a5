//! `replay timeline`: a Chrome trace / Perfetto JSON file with one track per logical thread
//! and one instant event per recorded event. Written as it is read, never held whole.

use crate::log::{self, Fail, Res, EXIT_OK, EXIT_OUTPUT, EXIT_PROBLEM};
use replay_core::Ordered;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(
    about = "Write a Chrome trace / Perfetto JSON timeline of a log (one track per thread)",
    after_help = "Examples:
  replay timeline app.replay -o trace.json      # open in https://ui.perfetto.dev
  replay timeline app.replay -o - | jq '.traceEvents | length'

Each event is an instant event (\"ph\":\"i\") named by its kind, on the track of its
logical thread (pid 1, tid = thread id + 1), with args seq, site, payload and time. Event
ORDER is exact. A clock read (nanoTime, hrtime, performance.now, clock_gettime, Date.now...)
is placed at the time it read (args time \"clock\"); other events are interpolated by
sequence number between those and the log's per-chunk time marks (time \"interpolated\").
A cut or corrupt log still gives a valid file of what was readable, and exit code 1."
)]
pub struct Args {
    /// The log file
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Where to write the trace (`-` for stdout)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

/// What anchored the times, for `otherData.note`.
fn note(a: &Ahead) -> String {
    let mut n = String::from("event order is exact; ");
    if a.used.is_empty() {
        n.push_str("no clock read anchored a time: times are interpolated between the log's per-chunk time marks");
    } else {
        let kinds: Vec<String> = a.used.iter().map(|(k, c)| format!("{k} {c}")).collect();
        n.push_str(&format!(
            "events with args.time \"clock\" are at the time their recorded clock value says ({}), other events are interpolated between those and the log's per-chunk time marks",
            kinds.join(", ")
        ));
    }
    if a.dropped > 0 {
        n.push_str(&format!(
            "; {} clock reads disagreed with the marks and were not used",
            a.dropped
        ));
    }
    n
}

/// A JSON string literal.
fn js(s: &str) -> String {
    // Serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Nanoseconds as trace microseconds, exact to the nanosecond (no float rounding).
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

pub fn run(a: Args) -> Res<u8> {
    let reader = log::open(&a.log)?;
    let (sink, what): (Box<dyn Write>, String) = if a.output.as_os_str() == "-" {
        (Box::new(io::stdout().lock()), "stdout".into())
    } else {
        // Like a log: a new 0600 file, never through a symlink nor into another's file.
        let f = replay_core::logfile::create(&a.output, Ok).map_err(|e| {
            Fail::new(
                EXIT_OUTPUT,
                format!("{}: cannot create: {e}", a.output.display()),
            )
        })?;
        (Box::new(f), a.output.display().to_string())
    };
    let mut out = BufWriter::with_capacity(1 << 16, sink);
    // Pass 1 (offsets of the clocks) and pass 2's reader ahead read the log on their own.
    let offsets = estimate_offsets(log::open(&a.log)?);
    let ahead = Ahead::new(log::open(&a.log)?, offsets);
    let status = write_trace(&mut out, reader, ahead, &a).map_err(|e| Fail::output(&what, e))?;
    if !status.is_complete() {
        eprintln!(
            "replay: {}: {} (the timeline holds the events before it)",
            a.log.display(),
            status.text()
        );
        return Ok(EXIT_PROBLEM);
    }
    Ok(EXIT_OK)
}

fn write_trace(
    out: &mut impl Write,
    reader: replay_core::LogReader,
    mut ahead: Ahead,
    a: &Args,
) -> io::Result<log::Status> {
    let h = reader.header();
    let process = format!(
        "{} {}",
        h.runtime,
        h.argv.first().map(String::as_str).unwrap_or("")
    )
    .trim()
    .to_string();
    writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    writeln!(
        out,
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{{\"name\":{}}}}}",
        js(&process)
    )?;
    let mut s = Ordered::new(reader);
    while let Some(e) = s.next() {
        let (t, exact) = ahead.time_of(e.seq);
        let strings = s.reader.strings();
        let site = if e.site == 0 {
            "null".to_string()
        } else {
            js(strings.name(e.site))
        };
        writeln!(
            out,
            ",{{\"name\":{},\"cat\":\"replay\",\"ph\":\"i\",\"s\":\"t\",\"ts\":{},\"pid\":1,\"tid\":{},\"args\":{{\"seq\":{},\"site\":{site},\"payload\":{},\"time\":\"{}\"}}}}",
            js(strings.name(e.kind)),
            micros(t),
            u64::from(e.thread) + 1,
            e.seq,
            js(&e.payload.summary()),
            if exact { "clock" } else { "interpolated" },
        )?;
    }
    // Thread names last: only now is every thread (and its final name) known, and trace
    // viewers accept metadata events anywhere in the array.
    for id in s.reader.threads().keys() {
        writeln!(
            out,
            ",{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{},\"args\":{{\"name\":{}}}}}",
            u64::from(*id) + 1,
            js(&s.reader.thread_name(*id))
        )?;
    }
    let status = log::Status::of_ordered(&s);
    writeln!(
        out,
        "],\"otherData\":{{\"log\":{},\"status\":{},\"events\":{},\"note\":{}}}}}",
        js(&a.log.display().to_string()),
        js(&status.text()),
        s.emitted,
        js(&note(&ahead)),
    )?;
    out.flush()?;
    Ok(status)
}
// ---------------------------------------------------------------------------------------
// Clock anchors: the recorded values of clock reads are exact times the log already holds.

/// How far (ns) a clock read may lie before the mark that precedes its number: a front end
/// numbers an event a little after the call read the clock (Node's hooks publish to a
/// buffer the flusher numbers at its next round, just before it takes its mark).
const TOL: i128 = 200_000;

/// Which clock a kind reads, and so which offset turns its values into the marks' time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Clock {
    /// CLOCK_MONOTONIC in ns: Java `System.nanoTime`, Node `process.hrtime[.bigint]`
    /// (libuv's `uv_hrtime`); the marks are `Instant`s, the same clock.
    Mono,
    /// Wall clock (Unix epoch): `currentTimeMillis`, `Date.now`, `new Date()`, `gettimeofday`.
    Wall,
    /// Node `performance.now()`: ms since the process's time origin (monotonic).
    Perf,
}

/// A kind's clock and its value's resolution in ns, by kind name.
fn clock_of(kind: &str) -> Option<(Clock, i128)> {
    Some(match kind {
        "java.lang.System.nanoTime" | "node.process.hrtime" | "node.process.hrtime.bigint" => {
            (Clock::Mono, 1)
        }
        "java.lang.System.currentTimeMillis" | "node.Date.now" | "node.Date" => {
            (Clock::Wall, 1_000_000)
        }
        "c.gettimeofday" => (Clock::Wall, 1_000),
        "node.performance.now" => (Clock::Perf, 1_000),
        // The clock id is not recorded: told apart by the value below.
        "c.clock_gettime" => (Clock::Mono, 1),
        _ => return None,
    })
}

/// The value of a clock event in ns of its clock, if it is one and its payload is whole.
fn value_ns(kind: &str, p: &replay_core::Payload) -> Option<i128> {
    use replay_core::Payload as P;
    let v = match (kind, p) {
        (
            "java.lang.System.currentTimeMillis" | "node.Date.now" | "node.Date",
            P::Int { value },
        ) => i128::from(*value) * 1_000_000,
        (_, P::Int { value }) => i128::from(*value),
        (_, P::Uint { value }) => i128::from(*value),
        ("node.performance.now", P::Float { value }) if value.is_finite() => {
            (value * 1e6).round() as i128
        }
        // timespec / timeval out-parameter (two native longs) of a call that returned 0.
        (
            "c.clock_gettime" | "c.gettimeofday",
            P::Ret {
                ret: 0,
                data: Some(d),
                ..
            },
        ) if d.len() == 16 => {
            let sec = i64::from_ne_bytes(d[..8].try_into().ok()?);
            let sub = i64::from_ne_bytes(d[8..].try_into().ok()?);
            let unit = if kind == "c.gettimeofday" { 1_000 } else { 1 };
            i128::from(sec) * 1_000_000_000 + i128::from(sub) * unit
        }
        _ => return None,
    };
    Some(v)
}

/// Kind ids are the log's string ids; names are looked up once per kind.
#[derive(Default)]
struct Kinds {
    by_id: HashMap<u32, Option<(Clock, i128)>>,
}

impl Kinds {
    fn clock(
        &mut self,
        strings: &replay_core::reader::Strings,
        e: &replay_core::Event,
    ) -> Option<(Clock, i128, i128)> {
        let name = strings.name(e.kind);
        let c = *self.by_id.entry(e.kind).or_insert_with(|| clock_of(name));
        let (clock, res) = c?;
        let v = value_ns(name, &e.payload)?;
        // A C timespec past 2001 in ns is CLOCK_REALTIME; below, CLOCK_MONOTONIC (or a CPU
        // clock, which the vote on offsets and the check against the marks leave out).
        let clock = if clock == Clock::Mono
            && name == "c.clock_gettime"
            && v >= 1_000_000_000_000_000_000
        {
            Clock::Wall
        } else {
            clock
        };
        Some((clock, res, v))
    }
}

/// A window being gathered: its lower mark's seq, its bounds, min and max value, resolution.
type Window = (u64, i128, Option<i128>, i128, i128, i128);

/// Pass 1: per clock, the offset from its values to the marks' time. Each read at `seq`
/// happened between the marks around `seq`, so its offset lies in `[v - t_hi, v + res -
/// t_lo]`; reads of one clock in one mark window share one interval (their intersection).
/// The offset taken is the middle of the range most windows agree on, so a wall clock
/// stepped once (NTP) or one bad value does not move it.
fn estimate_offsets(reader: replay_core::LogReader) -> HashMap<Clock, i128> {
    let mut s = Ordered::new(reader);
    let mut kinds = Kinds::default();
    // Per clock: the window being gathered (its lower mark's seq, bounds, min and max value).
    let mut open: HashMap<Clock, Window> = HashMap::new();
    let mut spans: HashMap<Clock, Vec<(i128, i128)>> = HashMap::new();
    let mut unbounded: HashMap<Clock, Vec<(i128, i128)>> = HashMap::new();
    let close = |spans: &mut HashMap<Clock, Vec<(i128, i128)>>,
                 unbounded: &mut HashMap<Clock, Vec<(i128, i128)>>,
                 c: Clock,
                 (_, lo, hi, min, max, res): Window| {
        // A window whose upper mark is not known when its reads are (it lies in a later
        // batch, or the log ends) only bounds the offset from one side: such windows vote
        // only for a clock that has no other (`unbounded`), or their open ends would
        // outvote the windows that say something.
        let v = if hi.is_some() {
            spans.entry(c).or_default()
        } else {
            unbounded.entry(c).or_default()
        };
        let hi_of = |x: i128| hi.map_or(i128::MIN / 4, |h| x - h);
        if hi_of(max) <= min + res - lo + TOL {
            v.push((hi_of(max), min + res - lo + TOL));
        } else {
            // The clock went back or jumped within one window: two separate votes.
            v.push((hi_of(min), min + res - lo + TOL));
            v.push((hi_of(max), max + res - lo + TOL));
        }
    };
    while let Some(e) = s.next() {
        let Some((clock, res, v)) = kinds.clock(s.reader.strings(), &e) else {
            continue;
        };
        let Some(((ms, lo), hi)) = s.window_of(e.seq) else {
            continue;
        };
        let (lo, hi) = (i128::from(lo), hi.map(|m| i128::from(m.1)));
        match open.get_mut(&clock) {
            Some(w) if w.0 == ms => {
                w.3 = w.3.min(v);
                w.4 = w.4.max(v);
            }
            _ => {
                if let Some(w) = open.insert(clock, (ms, lo, hi, v, v, res)) {
                    close(&mut spans, &mut unbounded, clock, w);
                }
            }
        }
    }
    for (c, w) in open {
        close(&mut spans, &mut unbounded, c, w);
    }
    for (c, v) in unbounded {
        spans.entry(c).or_insert(v);
    }
    spans
        .into_iter()
        .filter_map(|(c, v)| Some((c, best_point(v)?)))
        .collect()
}

/// The middle of the first range covered by the most intervals.
fn best_point(spans: Vec<(i128, i128)>) -> Option<i128> {
    let mut ends: Vec<(i128, i32)> = Vec::with_capacity(spans.len() * 2);
    for (a, b) in spans {
        ends.push((a, 0)); // starts sort before ends at one point: closed intervals
        ends.push((b, 1));
    }
    ends.sort_unstable();
    let (mut n, mut best, mut at) = (0, 0, None);
    for (i, &(x, end)) in ends.iter().enumerate() {
        if end == 0 {
            n += 1;
            if n > best {
                best = n;
                at = Some((x, ends.get(i + 1).map_or(x, |e| e.0)));
            }
        } else {
            n -= 1;
        }
    }
    at.map(|(a, b)| a + (b - a) / 2)
}

/// A known time: a mark (before event `seq`: position 2 seq - 1) or a clock read (at event
/// `seq`: position 2 seq), in ns since the recording started.
#[derive(Clone, Copy)]
struct Anchor {
    pos: u128,
    t: u64,
    clock: bool,
    /// A read of a clock coarser than [`TOL`] (milliseconds): its time is only known to
    /// within its resolution, so a finer read after it may pull it back.
    coarse: bool,
}

/// Pass 2's second reader, running ahead of the one that writes: it yields the anchors in
/// position order, marks and the clock reads that agree with them (inside the window of
/// their marks and not before the previous anchor; others are left out as outliers).
struct Ahead {
    s: Ordered,
    kinds: Kinds,
    offsets: HashMap<Clock, i128>,
    /// Anchors found and not yet passed by the writer, in position order.
    queue: VecDeque<Anchor>,
    last_mark: Option<u64>,
    /// The last mark seen after the last event (given at the end).
    tail: Option<(u64, u64)>,
    last_t: u64,
    /// The latest time of a mark or a fine clock read: what a fine read must not precede.
    last_fine_t: u64,
    done: bool,
    /// Clock reads used as anchors and left out, per kind name.
    used: BTreeMap<String, u64>,
    dropped: u64,
}

impl Ahead {
    fn new(reader: replay_core::LogReader, offsets: HashMap<Clock, i128>) -> Self {
        Ahead {
            s: Ordered::new(reader),
            kinds: Kinds::default(),
            offsets,
            queue: VecDeque::new(),
            last_mark: None,
            tail: None,
            last_t: 0,
            last_fine_t: 0,
            done: false,
            used: BTreeMap::new(),
            dropped: 0,
        }
    }

    fn push(&mut self, a: Anchor) {
        if !a.coarse {
            // A millisecond clock's reads are placed at the middle of their millisecond, so
            // one of them can lie up to half a millisecond past a nanosecond read that came
            // after it: the finer read wins. The front anchor stays (the writer may have
            // interpolated from it already); the queue stays in time order.
            for q in self.queue.iter_mut().skip(1) {
                if q.coarse && q.t > a.t {
                    q.t = a.t;
                }
            }
            let mut prev = 0;
            for q in self.queue.iter_mut() {
                q.t = q.t.max(prev);
                prev = q.t;
            }
            self.last_t = prev;
            self.last_fine_t = self.last_fine_t.max(a.t);
        }
        self.last_t = self.last_t.max(a.t);
        self.queue.push_back(Anchor {
            t: self.last_t,
            ..a
        });
    }

    fn mark(&mut self, (seq, t): (u64, u64)) {
        if self.last_mark.is_some_and(|m| m >= seq) {
            return;
        }
        self.last_mark = Some(seq);
        let pos = (u128::from(seq) * 2).saturating_sub(1);
        self.push(Anchor {
            pos,
            t,
            clock: false,
            coarse: false,
        });
    }

    /// Reads on until an anchor lies past `pos` (or the log ends).
    fn fill(&mut self, pos: u128) {
        while !self.done && self.queue.back().is_none_or(|a| a.pos <= pos) {
            let Some(e) = self.s.next() else {
                self.done = true;
                if let Some(m) = self.tail {
                    self.mark(m);
                }
                break;
            };
            let Some(((ms, lo), hi)) = self.s.window_of(e.seq) else {
                continue;
            };
            self.mark((ms, lo));
            self.tail = hi;
            let Some((clock, res, v)) = self.kinds.clock(self.s.reader.strings(), &e) else {
                continue;
            };
            let Some(off) = self.offsets.get(&clock) else {
                continue;
            };
            let t = v + res / 2 - off;
            let (lo, hi) = (i128::from(lo), hi.map(|m| i128::from(m.1)));
            let coarse = res > TOL;
            // A coarse read may lie half its resolution either side of its true time.
            let slack = if coarse { TOL + res / 2 } else { TOL };
            let after = if coarse {
                self.last_t
            } else {
                self.last_fine_t
            };
            let ok = t >= lo - slack
                && hi.is_none_or(|h| t <= h + slack)
                && t >= i128::from(after) - slack;
            if !ok {
                self.dropped += 1;
                continue;
            }
            let t = t.clamp(lo, hi.unwrap_or(i128::MAX)).max(0);
            *self
                .used
                .entry(self.s.reader.strings().name(e.kind).to_string())
                .or_default() += 1;
            self.push(Anchor {
                pos: u128::from(e.seq) * 2,
                t: u64::try_from(t).unwrap_or(u64::MAX),
                clock: true,
                coarse,
            });
        }
    }

    /// The time of event `seq` and whether a clock read gave it exactly.
    fn time_of(&mut self, seq: u64) -> (u64, bool) {
        let pos = u128::from(seq) * 2;
        self.fill(pos);
        while self.queue.len() >= 2 && self.queue[1].pos <= pos {
            self.queue.pop_front();
        }
        let Some(a) = self.queue.front().copied() else {
            return (0, false);
        };
        if a.pos >= pos {
            return (a.t, a.pos == pos && a.clock);
        }
        match self.queue.get(1) {
            Some(b) => {
                let dt = u128::from(b.t - a.t) * (pos - a.pos) / (b.pos - a.pos);
                (a.t + dt as u64, false)
            }
            None => (a.t, false),
        }
    }
}
