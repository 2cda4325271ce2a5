//! `replay info`: what a log says about its run, what it holds, and how it ended.

use crate::log::{self, Res, Status, EXIT_OK, EXIT_PROBLEM};
use crate::outln;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(
    about = "Show a log's header, totals (per kind and thread) and whether it is complete",
    after_help = "Examples:
  replay info app.replay
  replay info app.replay --json | jq .kinds

The status is `complete`, `cut at offset N: <why>` or `corrupt at offset N: <why>`.
A cut or corrupt log is still summarised (what was readable), and the exit code is 1."
)]
pub struct Args {
    /// The log file, or a recording directory (lists its processes)
    #[arg(value_name = "LOG|DIR")]
    log: PathBuf,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Res<u8> {
    // A recording directory (`replay record`): its processes, then each log on its own.
    if a.log.is_dir() {
        return crate::cmd::recordings::info_dir(&a.log, a.json);
    }
    let mut reader = log::open(&a.log)?;
    // Per kind id (ids are dense string-table indices): a vector, not a map per event.
    let mut per_kind: Vec<u64> = Vec::new();
    let mut threads: BTreeMap<u32, u64> = BTreeMap::new();
    let mut error = None;
    'read: loop {
        match reader.next_chunk() {
            Ok(Some(c)) => {
                let at = c.offset;
                for mut run in c.runs {
                    *threads.entry(run.thread).or_default() += u64::from(run.len());
                    loop {
                        match run.next_event() {
                            Ok(Some(e)) => {
                                let k = e.kind as usize;
                                if k >= per_kind.len() {
                                    per_kind.resize(k + 1, 0);
                                }
                                per_kind[k] += 1;
                            }
                            Ok(None) => break,
                            Err(why) => {
                                error = Some(replay_core::LogError::Corrupt {
                                    offset: at,
                                    why: format!("thread run: {why}"),
                                });
                                break 'read;
                            }
                        }
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let status = Status::of(&reader, error.as_ref());
    let kinds: BTreeMap<u32, u64> = per_kind
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (k as u32, *n))
        .collect();
    let size = std::fs::metadata(&a.log).map(|m| m.len()).unwrap_or(0);
    let events = reader.events_read();
    let chunks = reader.chunks_read();
    let strings = reader.strings();
    // Most frequent first; ties by name so the order is stable.
    let mut kind_rows: Vec<(&str, u64)> =
        kinds.iter().map(|(k, n)| (strings.name(*k), *n)).collect();
    kind_rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    // Every declared thread, including those that recorded nothing.
    let thread_rows: Vec<(u32, String, u64)> = reader
        .threads()
        .keys()
        .map(|id| {
            (
                *id,
                reader.thread_name(*id),
                threads.get(id).copied().unwrap_or(0),
            )
        })
        .collect();
    let h = reader.header();
    // The program's exit status, when the front end told the recorder (a clean close only).
    let (exit, files) = match reader.end() {
        Some(replay_core::End::Complete(t)) => (t.exit_status, t.files.clone()),
        _ => (None, Vec::new()),
    };
    let per_event = (events > 0).then(|| size as f64 / events as f64);

    let mut out = log::stdout();
    if a.json {
        let j = serde_json::json!({
            "log": a.log.display().to_string(),
            "status": status.json(),
            "header": {
                "format_version": h.format_version,
                "min_reader_version": h.min_reader_version,
                "runtime": h.runtime,
                "runtime_version": h.runtime_version,
                "program": h.program,
                "argv": h.argv,
                "cwd": h.cwd,
                "host": h.host,
                "pid": h.pid,
                "start_time": log::iso8601(h.start_time_unix_ns),
                "start_time_unix_ns": h.start_time_unix_ns,
                "recorder_version": h.recorder_version,
                "options": h.options.iter().map(|(k, v)| serde_json::json!([k, v])).collect::<Vec<_>>(),
            },
            "exit_status": exit,
            "files_written": files,
            "events": events,
            "chunks": chunks,
            "file_size": size,
            "bytes_per_event": per_event,
            "kinds": kind_rows.iter().map(|(k, n)| serde_json::json!({"kind": k, "events": n})).collect::<Vec<_>>(),
            "threads": thread_rows.iter().map(|(id, name, n)| serde_json::json!({"id": id, "name": name, "events": n})).collect::<Vec<_>>(),
        });
        outln!(out, "{j}")?;
    } else {
        let opts: Vec<String> = h.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
        outln!(out, "log:       {}", a.log.display())?;
        outln!(out, "status:    {}", status.text())?;
        outln!(out, "runtime:   {} {}", h.runtime, h.runtime_version)?;
        if !h.program.is_empty() {
            outln!(out, "program:   {}", h.program)?;
        }
        outln!(out, "argv:      {}", shell_words(&h.argv))?;
        outln!(out, "cwd:       {}", h.cwd)?;
        outln!(out, "host:      {}", h.host)?;
        outln!(out, "pid:       {}", h.pid)?;
        outln!(out, "started:   {}", log::iso8601(h.start_time_unix_ns))?;
        outln!(
            out,
            "recorder:  {} (format {}, needs reader {})",
            h.recorder_version,
            h.format_version,
            h.min_reader_version
        )?;
        outln!(
            out,
            "options:   {}",
            if opts.is_empty() {
                "-".to_string()
            } else {
                opts.join(" ")
            }
        )?;
        if let Some(code) = exit {
            outln!(out, "exit:      {code}")?;
        }
        if !files.is_empty() {
            outln!(out, "written:   {} files (compared in replay)", files.len())?;
            for f in &files {
                outln!(
                    out,
                    "  {:>10}  {} (crc32c {:08x})",
                    f.bytes,
                    f.path,
                    f.crc32c
                )?;
            }
        }
        outln!(out, "events:    {events}")?;
        outln!(out, "chunks:    {chunks}")?;
        match per_event {
            Some(b) => outln!(out, "size:      {size} bytes ({b:.1} bytes/event)")?,
            None => outln!(out, "size:      {size} bytes")?,
        }
        outln!(out, "kinds:     {}", kind_rows.len())?;
        for (k, n) in &kind_rows {
            outln!(out, "  {n:>10}  {k}")?;
        }
        outln!(out, "threads:   {}", thread_rows.len())?;
        for (id, name, n) in &thread_rows {
            outln!(out, "  {n:>10}  t{id} {name}")?;
        }
    }
    log::WriteExt::done(&mut out)?;
    Ok(if status.is_complete() {
        EXIT_OK
    } else {
        EXIT_PROBLEM
    })
}

/// argv as a person would type it: words with spaces or quotes are single-quoted.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
