//! `replay diff`: the first event where two recordings differ.

use crate::log::{self, Res, Status, EXIT_OK, EXIT_PROBLEM};
use crate::outln;
use replay_core::report::format_event;
use replay_core::{Event, FieldValue, Ordered, Payload, Record};
use std::collections::VecDeque;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(
    about = "Compare two logs event by event and show the first difference",
    after_help = "Examples:
  replay diff run1.replay run2.replay
  replay diff --context 10 good.replay bad.replay

Events are compared in sequence order by number, thread, kind, call site, input digest
and payload. Header differences (runtime, argv, ...) are listed as notes and do not
count as a difference. Exit 0 if the event streams are identical, 1 if they differ
(or a corrupt chunk stops either log before its end), 3 if a log cannot be read.
A cut log is compared as far as it goes (a note says it was cut); the same events in a
complete and a cut log exit 1, since the cut one may have lost events."
)]
pub struct Args {
    /// The first log
    #[arg(value_name = "A")]
    a: PathBuf,
    /// The second log
    #[arg(value_name = "B")]
    b: PathBuf,
    /// How many common events to show before the difference
    #[arg(long, value_name = "K", default_value_t = 5)]
    context: usize,
}

/// Equality as a person means it: a float NaN equals itself (the bits are compared).
fn payload_eq(a: &Payload, b: &Payload) -> bool {
    match (a, b) {
        (Payload::Float { value: x }, Payload::Float { value: y }) => x.to_bits() == y.to_bits(),
        (Payload::Record { record: x }, Payload::Record { record: y }) => record_eq(x, y),
        _ => a == b,
    }
}

fn record_eq(a: &Record, b: &Record) -> bool {
    a.fields.len() == b.fields.len()
        && a.fields.iter().zip(&b.fields).all(|(x, y)| {
            x.name == y.name
                && match (&x.value, &y.value) {
                    (FieldValue::Float(p), FieldValue::Float(q)) => p.to_bits() == q.to_bits(),
                    (FieldValue::Record(p), FieldValue::Record(q)) => record_eq(p, q),
                    (p, q) => p == q,
                }
        })
}

struct Side {
    it: Ordered,
    name: String,
}

impl Side {
    fn kind(&self, e: &Event) -> String {
        self.it.reader.strings().name(e.kind).to_string()
    }

    fn site(&self, e: &Event) -> String {
        if e.site == 0 {
            "-".into()
        } else {
            self.it.reader.strings().name(e.site).to_string()
        }
    }

    fn line(&self, e: &Event) -> String {
        format_event(
            e,
            self.it.reader.strings(),
            &self.it.reader.thread_name(e.thread),
        )
    }
}

/// The fields in which two events with the same number differ, as (field, A, B).
fn differences(a: &Side, ea: &Event, b: &Side, eb: &Event) -> Vec<(&'static str, String, String)> {
    let mut d = Vec::new();
    if ea.thread != eb.thread {
        d.push((
            "thread",
            format!("t{}", ea.thread),
            format!("t{}", eb.thread),
        ));
    }
    let (ka, kb) = (a.kind(ea), b.kind(eb));
    if ka != kb {
        d.push(("kind", ka, kb));
    }
    let (sa, sb) = (a.site(ea), b.site(eb));
    if sa != sb {
        d.push(("site", sa, sb));
    }
    if ea.digest != eb.digest {
        let h = |x: Option<u64>| x.map_or("-".into(), log::hex_digest);
        d.push(("digest", h(ea.digest), h(eb.digest)));
    }
    if !payload_eq(&ea.payload, &eb.payload) {
        d.push(("payload", ea.payload.summary(), eb.payload.summary()));
    }
    d
}

pub fn run(args: Args) -> Res<u8> {
    let mut a = Side {
        it: Ordered::new(log::open(&args.a)?),
        name: args.a.display().to_string(),
    };
    let mut b = Side {
        it: Ordered::new(log::open(&args.b)?),
        name: args.b.display().to_string(),
    };
    let mut out = log::stdout();
    outln!(out, "A: {}", a.name)?;
    outln!(out, "B: {}", b.name)?;
    header_notes(&mut out, &a, &b)?;

    let mut recent: VecDeque<String> = VecDeque::with_capacity(args.context + 1);
    let mut common = 0u64;
    let found = loop {
        let (ea, eb) = (a.it.next(), b.it.next());
        match (ea, eb) {
            (None, None) => break None,
            (Some(ea), Some(eb)) if ea.seq == eb.seq => {
                let d = differences(&a, &ea, &b, &eb);
                if d.is_empty() {
                    common += 1;
                    if args.context > 0 {
                        if recent.len() == args.context {
                            recent.pop_front();
                        }
                        recent.push_back(a.line(&ea));
                    }
                    continue;
                }
                let mut text = vec![format!("first difference at event #{}:", ea.seq)];
                for (field, x, y) in d {
                    text.push(format!("  {field:<8} A: {x}"));
                    text.push(format!("  {:<8} B: {y}", ""));
                }
                text.push(format!("  A: {}", a.line(&ea)));
                text.push(format!("  B: {}", b.line(&eb)));
                break Some(text);
            }
            (Some(ea), Some(eb)) => {
                // A number one log lacks (lost in a crash): the streams differ there.
                let (missing, side, other, e) = if ea.seq < eb.seq {
                    (ea.seq, "B", &a, &ea)
                } else {
                    (eb.seq, "A", &b, &eb)
                };
                break Some(vec![
                    format!("first difference at event #{missing}: {side} has no event #{missing}"),
                    format!(
                        "  {}: {}",
                        if side == "B" { "A" } else { "B" },
                        other.line(e)
                    ),
                ]);
            }
            (Some(ea), None) => {
                break Some(vec![
                    format!(
                        "first difference at event #{}: B ends after {common} events, A goes on",
                        ea.seq
                    ),
                    format!("  A: {}", a.line(&ea)),
                ])
            }
            (None, Some(eb)) => {
                break Some(vec![
                    format!(
                        "first difference at event #{}: A ends after {common} events, B goes on",
                        eb.seq
                    ),
                    format!("  B: {}", b.line(&eb)),
                ])
            }
        }
    };
    // A difference found early leaves the rest unread: only a log read to its end has a status.
    let mut corrupt = false;
    let mut complete = [true, true];
    if found.is_none() {
        for (i, s) in [&a, &b].into_iter().enumerate() {
            match Status::of(&s.it.reader, s.it.error()) {
                Status::Complete { .. } => {}
                st @ Status::Cut { .. } => {
                    complete[i] = false;
                    outln!(
                        out,
                        "note: {}: {} (compared the events before it)",
                        s.name,
                        st.text()
                    )?
                }
                st @ Status::Corrupt { .. } => {
                    corrupt = true;
                    outln!(
                        out,
                        "note: {}: {} (nothing after it could be compared)",
                        s.name,
                        st.text()
                    )?;
                }
            }
        }
    }
    let code = match found {
        None if corrupt => EXIT_PROBLEM,
        // Same events, but one recording was cut and the other closed cleanly: the cut one
        // may have lost events after its last chunk, so they are not known to be identical.
        None if complete[0] != complete[1] => {
            outln!(
                out,
                "same {common} events, but only one of the logs is complete"
            )?;
            EXIT_PROBLEM
        }
        None => {
            outln!(out, "identical: {common} events")?;
            EXIT_OK
        }
        Some(text) => {
            if !recent.is_empty() {
                outln!(out, "common events before it ({common} in all):")?;
                for l in &recent {
                    outln!(out, "  {l}")?;
                }
            }
            for l in text {
                outln!(out, "{l}")?;
            }
            EXIT_PROBLEM
        }
    };
    log::WriteExt::done(&mut out)?;
    Ok(code)
}

fn header_notes(mut out: impl std::io::Write, a: &Side, b: &Side) -> Res<()> {
    let (ha, hb) = (a.it.reader.header(), b.it.reader.header());
    let pairs = [
        (
            "runtime",
            format!("{} {}", ha.runtime, ha.runtime_version),
            format!("{} {}", hb.runtime, hb.runtime_version),
        ),
        (
            "argv",
            crate::cmd::info::shell_words(&ha.argv),
            crate::cmd::info::shell_words(&hb.argv),
        ),
        ("cwd", ha.cwd.clone(), hb.cwd.clone()),
        ("host", ha.host.clone(), hb.host.clone()),
        (
            "recorder",
            ha.recorder_version.clone(),
            hb.recorder_version.clone(),
        ),
        (
            "options",
            format!("{:?}", ha.options),
            format!("{:?}", hb.options),
        ),
    ];
    for (what, x, y) in pairs {
        if x != y {
            outln!(out, "note: header {what} differs: A: {x}  B: {y}")?;
        }
    }
    Ok(())
}
