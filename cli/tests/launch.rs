//! `replay record` / `replay replay`: the child gets REPLAY_MODE, REPLAY_LOG and
//! REPLAY_<KEY>, and the launcher exits with the child's status.

mod common;
use common::*;

const SHOW: &str = "echo \"mode=$REPLAY_MODE log=${REPLAY_LOG-unset} policy=${REPLAY_POLICY-unset} x=${REPLAY_MY_KEY-unset}\"";

#[test]
fn record_passes_environment_and_status() {
    let r = replay(&[
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
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "mode=record log=out-%p.replay policy=warn-live x=1\n"
    );
    let r = replay(&["record", "--", "sh", "-c", &format!("{SHOW}; exit 7")]);
    assert_eq!(r.code, 7);
    assert_eq!(r.stdout, "mode=record log=unset policy=unset x=unset\n");
    // Without `--` too: everything from the program on is its own.
    let r = replay(&["record", "sh", "-c", "echo \"$0 $1\"", "-k", "x"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "-k x\n"));
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
        "echo $REPLAY_MODE $REPLAY_LOG $REPLAY_TIMEOUT; exit 86",
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
    assert_eq!(
        replay(&["replay", "--", "true"]).code,
        2,
        "--log is required"
    );
}

#[test]
fn signals_bad_keys_and_missing_programs() {
    let r = replay(&["record", "--", "sh", "-c", "kill -TERM $$"]);
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
    let r = replay(&["record", "--", "/no/such/program"]);
    assert_eq!(r.code, 127);
    assert!(
        r.stderr
            .starts_with("replay: /no/such/program: cannot run: "),
        "{}",
        r.stderr
    );
    assert_eq!(replay(&["record"]).code, 2, "a program is required");
}
