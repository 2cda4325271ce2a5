//! `replay verify`: is the log complete and intact? Reads every chunk, checks every
//! checksum (the reader does) and that sequence numbers are dense (this command does).

use crate::log::{self, Res, Status, EXIT_OK, EXIT_PROBLEM};
use crate::outln;
use replay_core::{Ordered, SeqProblem};
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(
    about = "Check that a log is complete and intact (exit 0) or say where it is cut or corrupt (exit 1)",
    after_help = "Examples:
  replay verify app.replay
  replay verify app.replay && replay replay --log app.replay -- ./app

Prints one line:
  LOG: ok: N events, M chunks, T threads, complete                 exit 0
  LOG: cut at offset N: <why>; events after #S are lost (K events readable)   exit 1
  LOG: corrupt at offset N: <why>                                  exit 1
  LOG: bad sequence: event #S appears twice (chunk at offset N)    exit 1
  LOG: bad sequence: event #S is out of order (chunk at offset N, ...) exit 1
  LOG: bad sequence: event #S is missing (G numbers missing)       exit 1
A log that cannot be opened at all is an error on stderr with exit 3."
)]
pub struct Args {
    /// The log file
    #[arg(value_name = "LOG")]
    log: PathBuf,
}

pub fn run(a: Args) -> Res<u8> {
    let reader = log::open(&a.log)?;
    let mut s = Ordered::new(reader);
    for _ in s.by_ref() {}
    let status = Status::of_ordered(&s);
    let what = a.log.display();
    let mut out = log::stdout();
    // Corruption first: it is the cause of anything odd after it. A duplicate next: no
    // crash explains one. A cut log usually lacks some numbers, so gaps only count in a
    // log that claims to be complete.
    let code = match (&status, &s.first_problem) {
        (Status::Corrupt { .. }, _) => {
            outln!(out, "{what}: {}", status.text())?;
            EXIT_PROBLEM
        }
        (_, Some(SeqProblem::Duplicate { seq, chunk })) => {
            outln!(
                out,
                "{what}: bad sequence: event #{seq} appears twice (chunk at offset {chunk})"
            )?;
            EXIT_PROBLEM
        }
        (_, Some(SeqProblem::Late { seq, chunk })) => {
            outln!(
                out,
                "{what}: bad sequence: event #{seq} is out of order (chunk at offset {chunk}, far after its place)"
            )?;
            EXIT_PROBLEM
        }
        (Status::Cut { .. }, _) => {
            // What the cut took: every number after the last one read (and any missing
            // before it, lost with chunks that were never written).
            let lost = match s.next_seq() {
                0 => "every event is lost".to_string(),
                n if s.gaps > 0 => format!(
                    "events after #{} are lost, and {} numbers before it",
                    n - 1,
                    s.gaps
                ),
                n => format!("events after #{} are lost", n - 1),
            };
            outln!(
                out,
                "{what}: {}; {lost} ({} events readable)",
                status.text(),
                s.emitted
            )?;
            EXIT_PROBLEM
        }
        (Status::Complete { .. }, Some(SeqProblem::Missing { seq })) => {
            outln!(
                out,
                "{what}: bad sequence: event #{seq} is missing ({} numbers missing)",
                s.gaps
            )?;
            EXIT_PROBLEM
        }
        (
            Status::Complete {
                trailer_events,
                chunks,
            },
            None,
        ) => {
            outln!(
                out,
                "{what}: ok: {trailer_events} events, {chunks} chunks, {} threads, complete",
                s.reader.threads().len()
            )?;
            EXIT_OK
        }
    };
    log::WriteExt::done(&mut out)?;
    Ok(code)
}
