//! One process, one log, and no file but a new one of its own is ever written: children
//! that inherit the recording's or the replay's settings (C fork+exec, Node child_process
//! with NODE_OPTIONS, a JVM started with the agent in JAVA_TOOL_OPTIONS) run without the log
//! and say so in one line (a Node child is not started again on replay: the parent serves
//! what it wrote), while the parent's log verifies and replays; a symlink or another
//! user's file at the log path is left as it was.

use replay_tests::jvm::{jdk_homes, Jdk};
use replay_tests::{command, compile_c, node_package, release_artifact, replay_command, run};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

/// `replay verify LOG` passes.
fn verifies(log: &Path) {
    let v = run(Command::new(release_artifact("replay"))
        .arg("verify")
        .arg(log));
    assert_eq!(v.code(), 0, "verify {}:\n{}", log.display(), v.stderr);
}

/// The lines of `stderr` that mention `what`.
fn lines_with<'a>(stderr: &'a str, what: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.contains(what)).collect()
}

const RECORDED_ELSEWHERE: &str = "is being recorded by another process";
const REPLAYED_BY_PARENT: &str = "a parent of this one";

#[test]
fn c_child_inheriting_the_environment_leaves_the_parents_log_alone() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("inherit", "inherit", dir.path(), &[]);
    let log = dir.path().join("inherit.replay");
    let rec = run(&mut replay_command(&exe, "record", &log));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let out = rec.stdout_text();
    assert!(out.starts_with("child: mode 0, live\n"), "{out}");
    assert!(out.contains("child exit 0"), "{out}");
    let taken = lines_with(&rec.stderr, RECORDED_ELSEWHERE);
    assert_eq!(taken.len(), 1, "{}", rec.stderr);
    assert!(
        taken[0].contains(&log.display().to_string()),
        "{}",
        taken[0]
    );
    assert!(taken[0].contains("runs unrecorded"), "{}", taken[0]);
    assert_eq!(rec.stderr_lines().len(), 1, "{}", rec.stderr);
    verifies(&log);

    let rep = run(&mut replay_command(&exe, "replay", &log));
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout_text(), out);
    let live = lines_with(&rep.stderr, REPLAYED_BY_PARENT);
    assert_eq!(live.len(), 1, "{}", rep.stderr);
    assert!(live[0].contains("runs live, unchecked"), "{}", live[0]);
    // The parent's replay says a child ran out of its sight.
    assert_eq!(
        lines_with(&rep.stderr, "1 forked child process").len(),
        1,
        "{}",
        rep.stderr
    );
    // The child consumed nothing: the log replays again, the same.
    let again = run(&mut replay_command(&exe, "replay", &log));
    assert_eq!(again.code(), 0, "{}", again.stderr);
    assert_eq!(again.stdout_text(), out);
    verifies(&log);
}

#[test]
fn c_an_independent_replay_of_the_same_log_is_not_refused() {
    // The ancestor check must not make a second, unrelated replay run live.
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("forks", "forks", dir.path(), &[]);
    let log = dir.path().join("fork.replay");
    let rec = run(&mut replay_command(&exe, "record", &log));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let reps: Vec<_> = (0..2)
        .map(|_| {
            let mut c = replay_command(&exe, "replay", &log);
            c.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for r in reps {
        let o = r.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert_eq!(o.stdout, rec.stdout, "{err}");
        assert!(!err.contains("another process"), "{err}");
    }
}

#[test]
fn c_a_symlink_at_the_log_path_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("forks", "forks", dir.path(), &[]);
    let target = dir.path().join("precious");
    std::fs::write(&target, "root's own file\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&target).unwrap();
    let log = dir.path().join("planted.replay");
    std::os::unix::fs::symlink(&target, &log).unwrap();
    let rec = run(&mut replay_command(&exe, "record", &log));
    // Refused in one line; replay_init_from_env says it failed (forks.c exits 3 on that).
    assert_eq!(rec.code(), 3, "{}", rec.stderr);
    assert_eq!(rec.stderr_lines().len(), 1, "{}", rec.stderr);
    assert!(rec.stderr.contains("is a symbolic link"), "{}", rec.stderr);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "root's own file\n"
    );
    let after = std::fs::metadata(&target).unwrap();
    assert_eq!(
        (after.ino(), after.mode(), after.mtime_nsec(), after.len()),
        (
            before.ino(),
            before.mode(),
            before.mtime_nsec(),
            before.len()
        )
    );
    assert!(std::fs::symlink_metadata(&log).unwrap().is_symlink());
}

#[test]
fn c_another_users_file_is_not_written_and_a_new_log_is_0600() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("forks", "forks", dir.path(), &[]);
    let log = dir.path().join("theirs.replay");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } == 0 {
        std::fs::write(&log, "their data\n").unwrap();
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        std::os::unix::fs::chown(&log, Some(65534), Some(65534)).unwrap();
        let rec = run(&mut replay_command(&exe, "record", &log));
        assert_eq!(rec.code(), 3, "{}", rec.stderr);
        assert_eq!(rec.stderr_lines().len(), 1, "{}", rec.stderr);
        assert!(
            rec.stderr.contains("belongs to another user (uid 65534)"),
            "{}",
            rec.stderr
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "their data\n");
        let m = std::fs::metadata(&log).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o777), (65534, 0o666));
    } else {
        eprintln!("not root: the other-user part is skipped");
    }
    // With umask 0, a new log is still 0600, and an old log of ours is replaced by one.
    let mine = dir.path().join("mine.replay");
    std::fs::write(&mine, "an old log\n").unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut sh = command(Path::new("sh"));
    sh.arg("-c")
        .arg("umask 0; exec \"$0\"")
        .arg(&exe)
        .env("REPLAY_MODE", "record")
        .env("REPLAY_LOG", &mine);
    let rec = run(&mut sh);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    assert_eq!(
        std::fs::metadata(&mine).unwrap().mode() & 0o777,
        0o600,
        "{}",
        rec.stderr
    );
    verifies(&mine);
    // Nothing but the two logs (no temporary file left behind).
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".replay") || n.ends_with(".tmp"))
        .collect();
    names.sort();
    let mut want = vec!["mine.replay"];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } == 0 {
        want.push("theirs.replay");
    }
    assert_eq!(names, want);
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

const NODE_SCRIPT: &str = r#"
const { execFileSync } = require('child_process');
const a = Math.random();
if (process.argv[2] === 'child') {
  console.log('child ran', typeof a);
} else {
  console.log('parent before', a, Date.now());
  execFileSync(process.execPath, [__filename, 'child'], { stdio: 'inherit' });
  console.log('parent after', Math.random(), Date.now());
}
"#;

#[test]
fn node_child_inheriting_node_options_leaves_the_parents_log_alone() {
    if !have("node", "--version") {
        eprintln!("no node: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = node_package(dir.path());
    let script = dir.path().join("spawn.js");
    std::fs::write(&script, NODE_SCRIPT).unwrap();
    let log = dir.path().join("node.replay");
    let node = |mode: &str| {
        let mut c = replay_command(Path::new("node"), mode, &log);
        c.env("NODE_OPTIONS", format!("--require {}", pkg.display()))
            .arg(&script);
        run(&mut c)
    };
    let rec = node("record");
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let out = rec.stdout_text();
    assert!(out.contains("\nchild ran number\nparent after"), "{out}");
    let taken = lines_with(&rec.stderr, RECORDED_ELSEWHERE);
    assert_eq!(taken.len(), 1, "{}", rec.stderr);
    assert!(taken[0].contains("runs unrecorded"), "{}", taken[0]);
    assert_eq!(rec.stderr_lines().len(), 1, "{}", rec.stderr);
    verifies(&log);

    let rep = node("replay");
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout_text(), out, "{}", rep.stderr);
    // The child is not started again: the parent replays what it wrote, so its one line
    // comes back byte for byte, the recorded child's pid included; the end of the replay
    // says the child did not run.
    let (note, rest): (Vec<&str>, Vec<&str>) = rep.stderr.lines().partition(|l| {
        l.starts_with("replay: note: not run, answered from the recording: 1 child process;")
    });
    assert_eq!(note.len(), 1, "{}", rep.stderr);
    assert_eq!(rest.join("\n") + "\n", rec.stderr);
    assert!(lines_with(&rep.stderr, REPLAYED_BY_PARENT).is_empty());
    verifies(&log);
}

const JAVA_SPAWN: &str = r#"
import java.io.File;

public class Spawn {
    public static void main(String[] args) throws Exception {
        long t = System.currentTimeMillis();
        if (args.length > 0) {
            System.out.println("child ran " + (t > 0));
            return;
        }
        System.out.println("parent before " + t + " " + Math.random());
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "Spawn", "child")
            .inheritIO().start();
        int code = p.waitFor();
        System.out.println("parent after " + System.currentTimeMillis() + " child exit " + code);
    }
}
"#;

#[test]
fn jvm_child_inheriting_java_tool_options_leaves_the_parents_log_alone() {
    let agent = release_artifact("libreplay.so");
    for home in jdk_homes() {
        let jdk = Jdk::compile_source(&home, "Spawn", JAVA_SPAWN);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("jvm.replay");
        let java = |mode: &str| {
            let mut c = command(&jdk.home.join("bin/java"));
            c.current_dir(dir.path())
                .env(
                    "JAVA_TOOL_OPTIONS",
                    format!(
                        "-agentpath:{}={mode},log={}",
                        agent.display(),
                        log.display()
                    ),
                )
                .env_remove("JDK_JAVA_OPTIONS")
                .arg("-cp")
                .arg(&jdk.classes)
                .arg("Spawn");
            run(&mut c)
        };
        let rec = java("record");
        let name = home.display();
        assert_eq!(rec.code(), 0, "{name}: {}", rec.stderr);
        let out = rec.stdout_text();
        assert!(
            out.contains("\nchild ran true\nparent after"),
            "{name}: {out}"
        );
        assert!(out.contains("child exit 0"), "{name}: {out}");
        let taken = lines_with(&rec.stderr, RECORDED_ELSEWHERE);
        assert_eq!(taken.len(), 1, "{name}: {}", rec.stderr);
        // Besides the JVMs' own "Picked up JAVA_TOOL_OPTIONS" lines, that one line only.
        let others: Vec<_> = rec
            .stderr_lines()
            .into_iter()
            .filter(|l| !l.starts_with("Picked up JAVA_TOOL_OPTIONS"))
            .collect();
        assert_eq!(others.len(), 1, "{name}: {}", rec.stderr);
        verifies(&log);

        // The child (its output inherited) is replayed from the parent's side
        // (jvm-agent/src/children.rs): it does not run, and what it printed, its line about
        // the log included, comes back from the recording.
        let rep = java("replay");
        assert_eq!(rep.code(), 0, "{name}: {}", rep.stderr);
        assert_eq!(rep.stdout_text(), out, "{name}: {}", rep.stderr);
        assert_eq!(
            lines_with(&rep.stderr, RECORDED_ELSEWHERE),
            taken,
            "{name}: {}",
            rep.stderr
        );
        assert!(
            lines_with(&rep.stderr, REPLAYED_BY_PARENT).is_empty(),
            "{name}: {}",
            rep.stderr
        );
        verifies(&log);
    }
}
