//! `replay dump`: the events of a log in sequence order, as text or JSON Lines.

use crate::log::{self, Fail, Res, Status, EXIT_OK, EXIT_PROBLEM};
use crate::outln;
use replay_core::reader::Strings;
use replay_core::report::format_event;
use replay_core::{Event, Ordered, Payload};
use serde::Serialize;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(
    about = "Print the events of a log in sequence order (text or JSON Lines)",
    after_help = "Examples:
  replay dump app.replay
  replay dump app.replay --around 1234          # events #1224..#1244, #1234 marked '>'
  replay dump app.replay --thread worker-1 --kind Date.now --limit 20
  replay dump app.replay --json | jq -c 'select(.kind == \"c.custom\")'

Text lines: `#SEQ     tTHREAD NAME       KIND [SITE] = PAYLOAD`.
JSON lines: {\"seq\",\"thread\",\"thread_name\",\"kind\",\"site\",\"digest\",\"payload\"}.
If the log is cut or corrupt, a line on stderr says where, after the readable events,
and the exit code is 1 (only when dump read that far: --around and --limit stop early)."
)]
pub struct Args {
    /// The log file
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// One JSON object per line (JSON Lines) instead of text
    #[arg(long)]
    json: bool,
    /// Only the events around event number N (see --context)
    #[arg(long, value_name = "N")]
    around: Option<u64>,
    /// With --around: how many events before and after N
    #[arg(long, value_name = "K", default_value_t = 10, requires = "around")]
    context: u64,
    /// Only events of this logical thread: its id (`3` or `t3`) or its name
    #[arg(long, value_name = "T")]
    thread: Option<String>,
    /// Only events whose kind contains this text (an exact kind name matches itself)
    #[arg(long, value_name = "K")]
    kind: Option<String>,
    /// Stop after printing N events
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
}

/// One event as a JSON Lines record. Field names are part of the documented format.
#[derive(Serialize)]
pub struct JsonEvent<'a> {
    pub seq: u64,
    pub thread: u32,
    pub thread_name: &'a str,
    pub kind: &'a str,
    pub site: Option<&'a str>,
    pub digest: Option<String>,
    pub payload: &'a Payload,
}

impl<'a> JsonEvent<'a> {
    pub fn new(e: &'a Event, strings: &'a Strings, thread_name: &'a str) -> Self {
        JsonEvent {
            seq: e.seq,
            thread: e.thread,
            thread_name,
            kind: strings.name(e.kind),
            site: (e.site != 0).then(|| strings.name(e.site)),
            digest: e.digest.map(log::hex_digest),
            payload: &e.payload,
        }
    }
}

enum ThreadSel {
    Id(u32),
    Name(String),
}

fn thread_sel(t: &str) -> ThreadSel {
    let digits = t.strip_prefix('t').unwrap_or(t);
    match digits.parse::<u32>() {
        Ok(id) => ThreadSel::Id(id),
        Err(_) => ThreadSel::Name(t.to_string()),
    }
}

pub fn run(a: Args) -> Res<u8> {
    let reader = log::open(&a.log)?;
    let mut it = Ordered::new(reader);
    let sel = a.thread.as_deref().map(thread_sel);
    let (from, to) = match a.around {
        Some(n) => (n.saturating_sub(a.context), n.saturating_add(a.context)),
        None => (0, u64::MAX),
    };
    let mut out = log::stdout();
    let mut printed = 0u64;
    let mut last_seq = None;
    let mut reached_end = true;
    while let Some(e) = it.next() {
        last_seq = Some(e.seq);
        if e.seq > to {
            reached_end = false;
            break;
        }
        if e.seq < from {
            continue;
        }
        let r = &it.reader;
        let name = r.thread_name(e.thread);
        let keep_thread = match &sel {
            None => true,
            Some(ThreadSel::Id(id)) => e.thread == *id || name == a.thread.as_deref().unwrap_or(""),
            Some(ThreadSel::Name(n)) => name == *n,
        };
        if !keep_thread
            || a.kind
                .as_deref()
                .is_some_and(|k| !r.strings().name(e.kind).contains(k))
        {
            continue;
        }
        if a.json {
            let j = JsonEvent::new(&e, r.strings(), &name);
            let line = serde_json::to_string(&j)
                .map_err(|err| Fail::new(log::EXIT_OUTPUT, format!("event #{}: {err}", e.seq)))?;
            outln!(out, "{line}")?;
        } else {
            let mark = match a.around {
                Some(n) if n == e.seq => "> ",
                Some(_) => "  ",
                None => "",
            };
            outln!(out, "{mark}{}", format_event(&e, r.strings(), &name))?;
        }
        printed += 1;
        if a.limit.is_some_and(|l| printed >= l) {
            reached_end = false;
            break;
        }
    }
    log::WriteExt::done(&mut out)?;
    drop(out);
    let what = a.log.display();
    if reached_end {
        let status = Status::of(&it.reader, it.error());
        if !status.is_complete() {
            eprintln!(
                "replay: {what}: {} ({} events readable)",
                status.text(),
                it.reader.events_read()
            );
            return Ok(EXIT_PROBLEM);
        }
    }
    if let Some(n) = a.around {
        if last_seq.is_none_or(|s| s < n) {
            let have = match last_seq {
                Some(s) => format!("the last event is #{s}"),
                None => "the log has no events".into(),
            };
            return Err(Fail::new(
                EXIT_PROBLEM,
                format!("{what}: no event #{n}: {have}"),
            ));
        }
    }
    Ok(EXIT_OK)
}
