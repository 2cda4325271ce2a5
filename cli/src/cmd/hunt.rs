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
  replay hunt --chaos -- ./racy                # perturb the schedule, a new seed each run

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
    /// Record with chaos=SEED (rare thread interleavings show up sooner), a new seed each
    /// run starting from SEED (default: a random one); the kept run's seed is in its log
    /// header (`replay info`)
    #[arg(long = "chaos", value_name = "SEED", num_args = 0..=1, default_missing_value = "random")]
    chaos: Option<String>,
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
    let first_seed = match a.chaos.as_deref() {
        None => None,
        Some("random") => Some(replay_core::options::random_seed()),
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            Fail::new(
                EXIT_USAGE,
                format!("--chaos: a seed is a number, not '{s}'"),
            )
        })?),
    };
    for n in 1..=a.runs {
        let seed = first_seed.map(|s| s.wrapping_add(u64::from(n - 1)));
        let common = match seed {
            Some(s) => a.common.with_key(&format!("chaos={s}")),
            None => a.common.clone(),
        };
        if re.is_some() {
            *launch::CAPTURE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
        }
        let (code, dest, _) = launch::record_into(&common, None, false)?;
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
            let chaos = seed
                .map(|s| format!(", chaos seed {s}"))
                .unwrap_or_default();
            eprintln!(
                "replay: {program} failed on run {n} of at most {}{chaos} (exit status {code}): kept {} ({} events, {}); replay it with `replay replay -- {}`",
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
