//! `replay hunt`: record a flaky program until it fails, keep that recording, drop the rest.

use super::launch::{self, Common, Dest};
use super::recordings;
use crate::log::{Fail, Res};

const EXIT_USAGE: u8 = 2;
/// No run failed.
const EXIT_NOT_FOUND: u8 = 1;

#[derive(clap::Args)]
#[command(
    about = "Record a program again and again until it fails; keep the failing recording",
    after_help = "Examples:
  replay hunt -- ./flaky                       # until it exits with a non-zero status
  replay hunt -n 500 --exit 3 -- node test.js  # until it exits with status 3
  replay hunt --match 'assertion failed' -- java -cp build Main

Each run is recorded like `replay record` (into the recordings directory); the recordings
of runs that pass are deleted. When a run fails, its recording is kept (and is the latest,
so `replay replay -- CMD` replays it), and the line says how many runs it took.

Exits 0 when a failing run was recorded, 1 when none of the N runs failed, 2 on usage
errors."
)]
pub struct Args {
    /// Give up after this many runs
    #[arg(short = 'n', long = "runs", value_name = "N", default_value_t = 100)]
    runs: u32,
    /// A failure is this exit status (default: any non-zero status)
    #[arg(long = "exit", value_name = "CODE", conflicts_with = "pattern")]
    exit: Option<u8>,
    /// A failure is output (stdout or stderr) matching this regular expression
    #[arg(long = "match", value_name = "REGEX")]
    pattern: Option<String>,
    #[command(flatten)]
    common: Common,
}

pub fn run(a: Args) -> Res<u8> {
    if a.runs == 0 {
        return Err(Fail::new(EXIT_USAGE, "-n: at least one run"));
    }
    let re = match &a.pattern {
        Some(p) => Some(regex::bytes::Regex::new(p).map_err(|e| {
            Fail::new(EXIT_USAGE, format!("--match: {}", one_line(&e.to_string())))
        })?),
        None => None,
    };
    let program = launch::program_name(&a.common.cmd);
    for n in 1..=a.runs {
        if re.is_some() {
            *launch::CAPTURE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
        }
        let (code, dest) = launch::record_into(&a.common, None, false)?;
        let out = launch::CAPTURE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let failed = match (&re, a.exit) {
            (Some(re), _) => out.is_some_and(|o| re.is_match(&o)),
            (None, Some(c)) => code == c,
            (None, None) => code != 0,
        };
        let Dest::Dir(dir) = &dest else {
            unreachable!("hunt records into directories")
        };
        if failed {
            let r = recordings::Recording::read(dir);
            eprintln!(
                "replay: {program} failed on run {n} of at most {} (exit status {code}): kept {} ({} events, {}); replay it with `replay replay -- {}`",
                a.runs,
                dir.display(),
                r.events(),
                recordings::human_size(r.size()),
                crate::cmd::info::shell_words(
                    &a.common
                        .cmd
                        .iter()
                        .map(|x| x.to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                )
            );
            return Ok(0);
        }
        let _ = std::fs::remove_dir_all(dir);
    }
    eprintln!(
        "replay: {program} did not fail in {} runs; nothing kept",
        a.runs
    );
    Ok(EXIT_NOT_FOUND)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
