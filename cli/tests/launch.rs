//! `replay record` / `replay replay`: the child gets REPLAY_MODE, REPLAY_TREE and
//! REPLAY_<KEY>, and the launcher exits with the child's status. Its stdout, stderr and
//! exit status are recorded into LOG.stdio and compared with it on replay.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The launcher run in `dir` (where logs without --log go) with extra environment; the
/// output as bytes, for byte-for-byte checks.
struct Raw {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

fn launch_in(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Raw {
    let o = Command::new(BIN)
        .current_dir(dir)
        // Recordings without -o go under the test's directory, never the user's.
        .env("REPLAY_DIR", dir.join("recs"))
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("run replay");
    Raw {
        code: o.status.code().unwrap_or(-1),
        stdout: o.stdout,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The program's own stderr: without the launcher's line saying where it records and its
/// summary line after the run (which follows the program's last byte, newline or not).
fn own(stderr: &str) -> String {
    let s = match stderr.split_once('\n') {
        Some((first, rest)) if first.starts_with("replay: recording") => rest,
        _ => stderr,
    };
    match s.rfind("replay: recorded ") {
        Some(i) if s[i..].lines().count() == 1 => s[..i].to_string(),
        _ => s.to_string(),
    }
}

/// The issue's program: its stdout depends on a file no hook covers (`sh` has no front end;
/// its environment and stdin would come back from the recording).
const ECHO_X: &str = "echo \"X=$(cat x.txt)\"; echo err >&2";

/// Sets what the programs above read: the file `x.txt` in `dir`.
fn x_is(dir: &Path, x: &str) {
    std::fs::write(dir.join("x.txt"), x).unwrap();
}

/// Makes the file `name` in `dir` hold `text` (`None`: removes it), for scripts that take
/// another path in replay: their environment would come back from the recording.
fn set(dir: &Path, name: &str, text: Option<&str>) {
    match text {
        Some(t) => std::fs::write(dir.join(name), t).unwrap(),
        None => {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
}

const SHOW: &str = "echo \"mode=$REPLAY_MODE tree=${REPLAY_TREE-unset} policy=${REPLAY_POLICY-unset} x=${REPLAY_MY_KEY-unset} log=${REPLAY_LOG-unset}\"";

/// The text of `s` with the digits of pids and times replaced by `N`.
fn digits_as_n(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('N') {
            out.push('N');
        }
    }
    out
}

#[test]
fn record_passes_environment_and_status() {
    let d = tempfile::tempdir().unwrap();
    let r = launch_in(
        d.path(),
        &[],
        &[
            "record",
            "--log",
            "out-%p.replay",
            "-k",
            "policy=warn-live",
            "-k",
            "my-key=1",
            "--",
            "sh",
            "-c",
            SHOW,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // %p is expanded by the launcher, so that the log and its .stdio are a pair. The program
    // gets the tree (absolute), not REPLAY_LOG: a child inheriting it would take its log.
    let out = String::from_utf8(r.stdout).unwrap();
    let tree = out
        .split(' ')
        .nth(1)
        .unwrap()
        .strip_prefix("tree=")
        .unwrap();
    assert!(Path::new(tree).is_absolute(), "{out}");
    assert_eq!(
        digits_as_n(&out.replace(tree, "TREE")),
        "mode=record tree=TREE policy=warn-live x=N log=unset\n"
    );
    assert!(tree.ends_with(".replay"), "{tree}");
    assert!(Path::new(&format!("{tree}.stdio")).is_file());
    // A shell is no recorded process: the line says only its output was recorded, and why.
    let log = Path::new(tree).file_name().unwrap().to_str().unwrap();
    let last = r.stderr.lines().last().unwrap();
    assert!(
        last.starts_with("replay: recorded only the program's environment, stdin and output (")
            && last.contains(&format!(") in {log}.stdio: no process opened a log")),
        "{}",
        r.stderr
    );
    // Without -o the recording is a new directory in the recordings directory, said before
    // and after the run.
    let r = launch_in(
        d.path(),
        &[],
        &["record", "--", "sh", "-c", &format!("{SHOW}; exit 7")],
    );
    assert_eq!(r.code, 7);
    let recs = d.path().join("recs");
    let made: Vec<_> = std::fs::read_dir(&recs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "latest")
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].starts_with("sh-"), "{made:?}");
    let dir = recs.join(&made[0]);
    assert_eq!(
        String::from_utf8(r.stdout).unwrap(),
        format!(
            "mode=record tree={} policy=unset x=unset log=unset\n",
            dir.display()
        )
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!("replay: recording into {}", dir.display()),
            format!(
                "replay: recorded only the program's environment, stdin and output ({:.1} KiB) in {}: no process \
                 opened a log (a C program records once it calls replay_init_from_env(); \
                 Java and Node ones do when this launcher starts them)",
                std::fs::metadata(dir.join("output.replay")).unwrap().len() as f64 / 1024.0,
                dir.display()
            )
        ],
        "{}",
        r.stderr
    );
    // With the output not recorded there is no output log, and still a recording.
    let r = launch_in(
        d.path(),
        &[],
        &["record", "-k", "verify-output=off", "--", "sh", "-c", SHOW],
    );
    assert!(
        String::from_utf8(r.stdout)
            .unwrap()
            .starts_with("mode=record tree=/"),
        "{}",
        r.stderr
    );
    // Without `--` too: everything from the program on is its own.
    let r = launch_in(
        d.path(),
        &[],
        &["record", "sh", "-c", "echo \"$0 $1\"", "-k", "x"],
    );
    assert_eq!((r.code, r.stdout.as_slice()), (0, &b"-k x\n"[..]));
}

#[test]
fn replay_checks_the_log_first() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let r = replay(&[
        "replay",
        "--log",
        p(&log),
        "-k",
        "timeout=30s",
        "--",
        "sh",
        "-c",
        "echo $REPLAY_MODE $REPLAY_TREE $REPLAY_TIMEOUT; exit 86",
    ]);
    assert_eq!(r.code, 86);
    assert_eq!(r.stdout, format!("replay {} 30s\n", p(&log)));
    let missing = d.path().join("none.replay");
    let r = replay(&["replay", "--log", p(&missing), "--", "sh", "-c", "echo ran"]);
    assert_eq!(r.code, 3);
    assert!(
        r.stdout.is_empty(),
        "the program must not run: {}",
        r.stdout
    );
    // Without a log: the latest recording, and there is none here.
    let r = launch_in(d.path(), &[], &["replay", "--", "true"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("replay: no recordings in "),
        "{}",
        r.stderr
    );
}

#[test]
fn signals_bad_keys_and_missing_programs() {
    let d = tempfile::tempdir().unwrap();
    let r = launch_in(
        d.path(),
        &[],
        &["record", "--", "sh", "-c", "kill -TERM $$"],
    );
    assert_eq!(r.code, 128 + 15);
    for bad in [
        "policy=explode",
        "noequals",
        "=1",
        "mode=replay",
        "log=x",
        "b@d=1",
    ] {
        let r = replay(&["record", "-k", bad, "--", "sh", "-c", "echo ran"]);
        assert_eq!(r.code, 2, "{bad}: {}", r.stderr);
        assert!(r.stdout.is_empty());
        assert!(
            r.stderr.starts_with(&format!("replay: -k {bad}: ")),
            "{}",
            r.stderr
        );
    }
    let d = tempfile::tempdir().unwrap();
    let r = launch_in(d.path(), &[], &["record", "--", "/no/such/program"]);
    assert_eq!(r.code, 127);
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "a program that cannot be found leaves no recording"
    );
    assert!(
        r.stderr
            .starts_with("replay: /no/such/program: cannot run: "),
        "{}",
        r.stderr
    );
    assert_eq!(replay(&["record"]).code, 2, "a program is required");
}

/// Records `script` under `sh -c` with `env` into `dir/a.replay(.stdio)`. `sh` has no front
/// end, so the program's own log is not written: only the launcher's output log.
fn record_sh(dir: &Path, env: &[(&str, &str)], script: &str) -> Raw {
    let r = launch_in(
        dir,
        env,
        &["record", "--log", "a.replay", "--", "sh", "-c", script],
    );
    assert!(dir.join("a.replay.stdio").is_file(), "{}", r.stderr);
    r
}

fn replay_sh(dir: &Path, env: &[(&str, &str)], keys: &[&str], script: &str) -> Raw {
    let mut args = vec!["replay", "--log", "a.replay"];
    for k in keys {
        args.extend(["-k", k]);
    }
    args.extend(["--", "sh", "-c", script]);
    launch_in(dir, env, &args)
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn output_that_depends_on_an_unhooked_input_diverges() {
    let d = tempfile::tempdir().unwrap();
    x_is(d.path(), "one");
    let rec = record_sh(d.path(), &[], ECHO_X);
    assert_eq!(rec.code, 0, "{}", rec.stderr);
    assert_eq!(rec.stdout, b"X=one\n", "the output passes through");
    assert_eq!(own(&rec.stderr), "err\n");
    let info = replay(&["info", p(&d.path().join("a.replay.stdio"))]);
    assert!(
        info.stdout.contains("runtime:   launcher "),
        "{}",
        info.stdout
    );
    assert!(info.stdout.contains("output.stdout"), "{}", info.stdout);

    let same = replay_sh(d.path(), &[], &[], ECHO_X);
    assert_eq!(same.code, 0, "{}", same.stderr);
    assert_eq!(same.stdout, rec.stdout);
    assert_eq!(same.stderr, "err\n", "nothing but the program's own stderr");

    x_is(d.path(), "two");
    let other = replay_sh(d.path(), &[], &[], ECHO_X);
    assert_eq!(other.code, 86, "{}", other.stderr);
    assert_eq!(
        other.stdout, b"X=two\n",
        "the program's output is still shown"
    );
    let e = &other.stderr;
    assert!(
        e.contains("replay: DIVERGENCE: the program's stdout differs from the recording at byte 2 (line 1)"),
        "{e}"
    );
    assert!(e.contains("  recorded: \"X=one\"\n"), "{e}");
    assert!(e.contains("  replayed: \"X=two\"\n"), "{e}");
    assert!(e.contains("(policy abort: exiting with status 86)"), "{e}");
    assert_eq!(count(e, "DIVERGENCE"), 1, "{e}");

    // Under warn-live the program runs to its end, and the launcher says replay diverged.
    let live = replay_sh(d.path(), &[], &["policy=warn-live"], ECHO_X);
    assert_eq!(live.code, 0, "{}", live.stderr);
    assert_eq!(live.stdout, b"X=two\n");
    assert!(live.stderr.contains("(policy warn-live"), "{}", live.stderr);
    assert!(
        live.stderr.contains("replay diverged 1 time(s)"),
        "{}",
        live.stderr
    );

    // The policy can come from the environment, as for the program's front end.
    let env = replay_sh(d.path(), &[("REPLAY_POLICY", "warn-continue")], &[], ECHO_X);
    assert_eq!(env.code, 0, "{}", env.stderr);
    assert!(
        env.stderr.contains("(policy warn-continue"),
        "{}",
        env.stderr
    );
}

#[test]
fn verify_output_off_compares_and_records_nothing() {
    let d = tempfile::tempdir().unwrap();
    x_is(d.path(), "one");
    record_sh(d.path(), &[], ECHO_X);
    // sh has no front end, so only a.replay.stdio exists: enough to replay, with or without
    // the output compared (it holds the program's environment and stdin too).
    x_is(d.path(), "two");
    let off = replay_sh(d.path(), &[], &["verify-output=off"], ECHO_X);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert_eq!(off.stdout, b"X=two\n");
    assert_eq!(off.stderr, "err\n");
    // A log there is no process to replay (sh has no front end) is said.
    standard(&d.path().join("a.replay"), None);
    let off = replay_sh(d.path(), &[], &["verify-output=off"], ECHO_X);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert_eq!(
        off.stderr,
        "err\nreplay: note: recorded process 1 (a.replay) did not run in this replay\n"
    );
    // Not recorded either: the launcher's log holds the environment and stdin only, and
    // replay says in one line that it cannot compare.
    let r = launch_in(
        d.path(),
        &[],
        &[
            "record",
            "--log",
            "b.replay",
            "-k",
            "verify-output=off",
            "--",
            "sh",
            "-c",
            "echo b",
        ],
    );
    assert_eq!((r.code, r.stdout.as_slice()), (0, &b"b\n"[..]));
    assert!(
        r.stderr
            .contains("replay: recorded only the program's environment and stdin ("),
        "{}",
        r.stderr
    );
    let r = launch_in(
        d.path(),
        &[],
        &["replay", "--log", "b.replay", "--", "sh", "-c", "echo b"],
    );
    assert_eq!(
        (r.code, r.stdout.as_slice()),
        (0, &b"b\n"[..]),
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr,
        "replay: note: b.replay.stdio holds no output of the program (recorded with \
         verify-output=off, or by an older version): output is not compared\n",
    );
}

#[test]
fn another_exit_status_diverges() {
    let d = tempfile::tempdir().unwrap();
    let script = "echo out; exit $(cat code)";
    set(d.path(), "code", Some("3"));
    assert_eq!(record_sh(d.path(), &[], script).code, 3);
    let same = replay_sh(d.path(), &[], &[], script);
    assert_eq!(same.code, 3, "{}", same.stderr);
    assert_eq!(same.stderr, "");
    set(d.path(), "code", Some("0"));
    let other = replay_sh(d.path(), &[], &[], script);
    assert_eq!(other.code, 86, "{}", other.stderr);
    assert!(
        other
            .stderr
            .contains("the program exited with status 0; the recording exited with 3"),
        "{}",
        other.stderr
    );
    // A signal is 128+N on both sides.
    let killed = "echo out; kill -TERM $$";
    assert_eq!(record_sh(d.path(), &[], killed).code, 128 + 15);
    assert_eq!(replay_sh(d.path(), &[], &[], killed).code, 128 + 15);
}

#[test]
fn output_passes_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    // No trailing line feeds, bytes that are not UTF-8, a long run and both streams.
    let script = "printf 'a\\nb'; printf '\\377\\001' >&2; head -c 300000 /dev/zero | tr '\\0' x; printf 'end'";
    let rec = record_sh(d.path(), &[], script);
    assert_eq!(rec.code, 0, "{}", rec.stderr);
    let mut want = b"a\nb".to_vec();
    want.extend(std::iter::repeat_n(b'x', 300_000));
    want.extend(b"end");
    assert!(
        rec.stdout == want,
        "stdout differs ({} bytes)",
        rec.stdout.len()
    );
    let raw = Command::new(BIN)
        .current_dir(d.path())
        .args(["replay", "--log", "a.replay", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(
        raw.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    assert!(
        raw.stdout == want,
        "stdout differs ({} bytes)",
        raw.stdout.len()
    );
    assert_eq!(raw.stderr, b"\xff\x01");
}

#[test]
fn more_or_less_output_than_recorded_diverges() {
    let d = tempfile::tempdir().unwrap();
    let script = "echo one; echo two; [ -f MORE ] && echo three; [ -f LESS ] || echo four; true";
    assert_eq!(record_sh(d.path(), &[], script).code, 0);
    assert_eq!(replay_sh(d.path(), &[], &[], script).code, 0);

    set(d.path(), "MORE", Some(""));
    let more = replay_sh(d.path(), &[], &[], script);
    set(d.path(), "MORE", None);
    assert_eq!(more.code, 86, "{}", more.stderr);
    assert!(
        more.stderr
            .contains("stdout differs from the recording at byte 8 (line 3)"),
        "{}",
        more.stderr
    );
    assert!(
        more.stderr
            .contains("  recorded: \"four\"\n  replayed: \"three\"\n"),
        "{}",
        more.stderr
    );

    set(d.path(), "LESS", Some(""));
    let less = replay_sh(d.path(), &[], &[], script);
    assert_eq!(less.code, 86, "{}", less.stderr);
    assert_eq!(less.stdout, b"one\ntwo\n");
    assert!(
        less.stderr
            .contains("stdout differs from the recording at byte 8 (line 3)"),
        "{}",
        less.stderr
    );
    assert!(
        less.stderr
            .contains("  recorded: \"four\"\n  replayed: (nothing: the program ended)"),
        "{}",
        less.stderr
    );

    // Past the recorded end of a stream.
    let d = tempfile::tempdir().unwrap();
    assert_eq!(record_sh(d.path(), &[], "echo one").code, 0);
    set(d.path(), "MORE", Some(""));
    let past = replay_sh(
        d.path(),
        &[],
        &[],
        "echo one; [ -f MORE ] && echo extra >&2; true",
    );
    assert_eq!(past.code, 86, "{}", past.stderr);
    assert!(
        past.stderr
            .contains("the program's stderr differs from the recording at byte 0 (line 1)"),
        "{}",
        past.stderr
    );
    assert!(
        past.stderr
            .contains("recorded: (nothing: the recorded stderr ends here)"),
        "{}",
        past.stderr
    );
}

#[test]
fn a_front_end_report_is_not_reported_twice() {
    let d = tempfile::tempdir().unwrap();
    // What the C, Node or JVM front end writes when it diverges in the program (REPORT):
    // the report on stderr, then exit 86. The launcher passes both through and adds nothing.
    // A front end's note (NOTE) in one run only is not a difference in the program's output.
    let script = r#"echo out
if [ -f REPORT ]; then
  echo 'replay: DIVERGENCE: event #3 in thread 0 "main": the program made a different call than the recording' >&2
  echo '  next: replay dump a.replay --around 3' >&2
  exit 86
fi
[ -f NOTE ] && echo 'replay: note: something the record run did not say' >&2
echo err >&2"#;
    assert_eq!(record_sh(d.path(), &[], script).code, 0);
    set(d.path(), "REPORT", Some(""));
    let r = replay_sh(d.path(), &[], &[], script);
    set(d.path(), "REPORT", None);
    assert_eq!(r.code, 86, "{}", r.stderr);
    assert_eq!(count(&r.stderr, "DIVERGENCE"), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .ends_with("  next: replay dump a.replay --around 3\n"),
        "{}",
        r.stderr
    );
    set(d.path(), "NOTE", Some(""));
    let r = replay_sh(d.path(), &[], &[], script);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "replay: note: something the record run did not say\nerr\n"
    );
}

/// The launcher in `dir` with stdout and stderr going to files (a file never waits for a
/// writer to go, unlike `output()`'s pipes): its status, how long it ran, and the files.
fn launch_to_files(dir: &Path, args: &[&str]) -> (i32, Duration, std::path::PathBuf) {
    let out = dir.join("launcher.out");
    let t = Instant::now();
    let status = Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(dir.join("launcher.err")).unwrap())
        .status()
        .unwrap();
    (status.code().unwrap_or(-1), t.elapsed(), out)
}

#[test]
fn the_launcher_exits_with_the_program_and_what_it_left_running_still_writes() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // The shell's background job keeps the output pipes open after the shell is killed
    // (diverged) or has exited (no divergence), and writes a line 2 s later.
    let script = "echo \"X=$(cat x.txt)\"; (sleep 2; echo late) & [ -f wait ] && wait; true";
    let record = ["record", "--log", "a.replay", "--", "sh", "-c", script];
    let replay = ["replay", "--log", "a.replay", "--", "sh", "-c", script];
    x_is(dir, "one");
    let (code, took, out) = launch_to_files(dir, &record);
    assert_eq!(code, 0);
    assert!(took < Duration::from_millis(1500), "{took:?}");
    // Without the launcher the job would write to the terminal: its line still comes (a
    // forked copier passes it on), after the launcher exited with the program's status.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "X=one\nlate\n");

    x_is(dir, "two");
    std::fs::write(dir.join("wait"), "").unwrap();
    let (code, took, _) = launch_to_files(dir, &replay);
    assert_eq!(code, 86);
    assert!(took < Duration::from_millis(1500), "{took:?}");

    x_is(dir, "one");
    std::fs::remove_file(dir.join("wait")).unwrap();
    let (code, took, out) = launch_to_files(dir, &replay);
    assert_eq!(
        code,
        0,
        "{}",
        std::fs::read_to_string(dir.join("launcher.err")).unwrap()
    );
    assert!(took < Duration::from_millis(1500), "{took:?}");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "X=one\nlate\n");
}

#[test]
fn an_output_log_of_another_program_is_refused() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(record_sh(d.path(), &[], "echo ran").code, 0);
    let r = launch_in(
        d.path(),
        &[],
        &[
            "replay", "--log", "a.replay", "--", "env", "sh", "-c", "echo ran",
        ],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "the program must not run");
    assert!(
        r.stderr.contains("recorded by launcher running sh"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_c_program_whose_output_depends_on_its_pid_diverges() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("pid.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <unistd.h>\n\
         int main(void) { printf(\"start\\npid %ld\\n\", (long)getpid()); \
         fprintf(stderr, \"no newline\"); return 0; }\n",
    )
    .unwrap();
    let exe = d.path().join("pid");
    let cc = Command::new("cc").arg(&src).arg("-o").arg(&exe).output();
    let cc = cc.expect("a C compiler (cc) is needed");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = |mode: &str| launch_in(d.path(), &[], &[mode, "--log", "pid.replay", "--", p(&exe)]);
    let rec = run("record");
    assert_eq!(rec.code, 0, "{}", rec.stderr);
    assert_eq!(own(&rec.stderr), "no newline");
    let rep = run("replay");
    assert_eq!(rep.code, 86, "{}", rep.stderr);
    let e = &rep.stderr;
    // The first differing digit of the two pids: past "start\npid ".
    let at = e
        .split("the program's stdout differs from the recording at byte ")
        .nth(1)
        .and_then(|r| r.split_once(" (line 2)"))
        .and_then(|(n, _)| n.parse::<u32>().ok());
    assert!(at.is_some_and(|n| n >= 10), "{e}");
    let recorded = String::from_utf8(rec.stdout).unwrap();
    let replayed = String::from_utf8(rep.stdout).unwrap();
    assert!(
        e.contains(&format!(
            "  recorded: {:?}\n",
            recorded.lines().nth(1).unwrap()
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "  replayed: {:?}\n",
            replayed.lines().nth(1).unwrap()
        )),
        "{e}"
    );
}

/// Counts the SIGTERMs it gets: after the first, it waits 0.5 s for a second, prints the
/// count and exits 3. Its pid goes to `pid`.
const COUNTS_TERMS: &str = "echo $$ > pid; n=0; trap 'n=$((n+1))' TERM; echo up; \
    while [ $n -eq 0 ]; do sleep 0.02; done; sleep 0.5; echo \"TERM x$n\"; exit 3";

/// Starts `replay record` on [`COUNTS_TERMS`] in its own process group (as a harness or a
/// non-interactive shell starts it), once the program runs.
fn record_counting(dir: &Path) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let _ = std::fs::remove_file(dir.join("pid"));
    let child = Command::new(BIN)
        .current_dir(dir)
        .args(["record", "-o", "t.replay", "--", "sh", "-c", COUNTS_TERMS])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !dir.join("pid").exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the program did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    child
}

/// Running, not a zombie left for a reaper that may be slow (or absent in a container).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

#[test]
fn signals_sent_to_the_launcher_reach_the_program_once() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // `kill LAUNCHER` (a harness's terminate()): the program gets it, the launcher waits for
    // its status and writes the recording's summary.
    // A group kill (`kill -TERM -PGID`, timeout(1)): the program gets it once, not twice.
    for group in [false, true] {
        let child = record_counting(dir);
        let target = if group {
            -(child.id() as i32)
        } else {
            child.id() as i32
        };
        // SAFETY: plain kill(2).
        unsafe { libc::kill(target, libc::SIGTERM) };
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "group={group} {err}");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "up\nTERM x1\n",
            "group={group}"
        );
        assert!(err.contains("replay: recorded "), "group={group} {err}");
        // The recording replays: the program's SIGTERM was its own doing (a trap), the
        // replayed sh gets none, so it waits for ever: only the log's reading is checked.
        let r = replay(&["verify", p(&dir.join("t.replay.stdio"))]);
        assert_eq!(r.code, 0, "group={group} {}", r.stderr);
    }
    // The launcher killed outright takes the program with it, as a group kill would have.
    let child = record_counting(dir);
    let pid: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    // SAFETY: plain kill(2).
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait_with_output();
    let t = Instant::now();
    while alive(pid) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the program outlived the launcher"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
