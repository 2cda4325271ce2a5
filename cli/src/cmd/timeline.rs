//! `replay timeline`: a Chrome trace / Perfetto JSON file with one track per logical thread
//! and one instant event per recorded event. Written as it is read, never held whole.

use crate::log::{self, Fail, Res, EXIT_OK, EXIT_OUTPUT, EXIT_PROBLEM};
use replay_core::Ordered;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(
    about = "Write a Chrome trace / Perfetto JSON timeline of a log (one track per thread)",
    after_help = "Examples:
  replay timeline app.replay -o trace.json      # open in https://ui.perfetto.dev
  replay timeline app.replay -o - | jq '.traceEvents | length'

Each event is an instant event (\"ph\":\"i\") named by its kind, on the track of its
logical thread (pid 1, tid = thread id + 1), with args seq, site and payload. Event ORDER is
exact; event TIMES are approximate: the log keeps a time mark per written chunk, and an
event's time is interpolated linearly (by sequence number) between the marks around it.
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
    let status = write_trace(&mut out, reader, &a).map_err(|e| Fail::output(&what, e))?;
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
        let t = s.time_of(e.seq);
        let strings = s.reader.strings();
        let site = if e.site == 0 {
            "null".to_string()
        } else {
            js(strings.name(e.site))
        };
        writeln!(
            out,
            ",{{\"name\":{},\"cat\":\"replay\",\"ph\":\"i\",\"s\":\"t\",\"ts\":{},\"pid\":1,\"tid\":{},\"args\":{{\"seq\":{},\"site\":{site},\"payload\":{}}}}}",
            js(strings.name(e.kind)),
            micros(t),
            u64::from(e.thread) + 1,
            e.seq,
            js(&e.payload.summary()),
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
        "],\"otherData\":{{\"log\":{},\"status\":{},\"events\":{},\"note\":\"event order is exact; times are interpolated between the log's time marks\"}}}}",
        js(&a.log.display().to_string()),
        js(&status.text()),
        s.emitted
    )?;
    out.flush()?;
    Ok(status)
}
