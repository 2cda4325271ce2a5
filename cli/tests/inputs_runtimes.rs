//! What every program gets from the launcher comes back in replay, whatever its runtime:
//! its environment and its stdin (a pipe, a file, /dev/null). Real `node`, `java` and C
//! programs are recorded, then replayed with another environment and other input (or
//! none): they print what they printed. A variable whose name marks a secret is not in
//! the log. Needs `java`, `javac`, `node` and `cc`, and `cargo build --release --workspace`.

mod common;
use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// What the program's stdin is in one run.
enum In<'a> {
    /// A pipe the test writes these chunks into, pausing between them.
    Pipe(&'a [&'a str]),
    File(&'a Path),
    Null,
}

/// The launcher in `dir` with `GREETING=greeting`, `API_TOKEN=token` and `stdin`.
fn run(dir: &Path, greeting: &str, token: &str, stdin: In<'_>, args: &[&str]) -> Out {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env("REPLAY_DIR", dir.join("recs"))
        .env("GREETING", greeting)
        .env("API_TOKEN", token)
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("NODE_OPTIONS")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match &stdin {
        In::Pipe(_) => c.stdin(Stdio::piped()),
        In::File(f) => c.stdin(std::fs::File::open(f).unwrap()),
        In::Null => c.stdin(Stdio::null()),
    };
    let mut child = c.spawn().expect("run replay");
    if let In::Pipe(chunks) = stdin {
        let mut w = child.stdin.take().unwrap();
        for (i, ch) in chunks.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            // The program may have stopped reading (a divergence): not the test's concern.
            let _ = w.write_all(ch.as_bytes());
            let _ = w.flush();
        }
    }
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Prints each chunk it reads from stdin as it comes, then `GREETING` and whether it has a
/// token.
const NODE: &str = r#"
process.stdin.on('data', c => console.log('chunk', JSON.stringify(String(c))));
process.stdin.on('end', () => console.log('end', process.env.GREETING, 'API_TOKEN' in process.env));
"#;

const JAVA: &str = r#"
public class Inputs {
    public static void main(String[] a) throws Exception {
        if (a.length > 0) {
            // Another stream on FileDescriptor.in, read whole (jline reads stdin so).
            byte[] all = new java.io.FileInputStream(java.io.FileDescriptor.in).readAllBytes();
            if (all.length > 0) System.out.println("chunk " + new String(all));
        } else {
            byte[] b = new byte[65536];
            int n;
            while ((n = System.in.read(b)) > 0) System.out.println("chunk " + new String(b, 0, n));
        }
        System.out.println("end " + System.getenv("GREETING") + " " + (System.getenv("API_TOKEN") != null));
    }
}
"#;

const C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    char b[65536];
    ssize_t n;
    while ((n = read(0, b, sizeof b)) > 0) printf("chunk %.*s\n", (int)n, b);
    printf("end %s\n", getenv("GREETING"));
    return 0;
}
"#;

/// Records `cmd` with a pipe that gets two chunks, replays with other input and another
/// environment: the same output, chunk for chunk. Returns the recording.
fn pipe_comes_back(dir: &Path, name: &str, cmd: &[&str]) -> String {
    let rec = dir.join(name);
    let mut args = vec!["record", "-o", p(&rec), "--"];
    args.extend(cmd);
    let r = run(
        dir,
        "recorded",
        "s3cr3t-value",
        In::Pipe(&["first\n", "second\n"]),
        &args,
    );
    assert_eq!(r.code, 0, "record: {}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("first"), "{}", r.stdout);
    assert!(r.stdout.contains("end recorded"), "{}", r.stdout);
    let mut args = vec!["replay", p(&rec), "--"];
    args.extend(cmd);
    let again = run(dir, "changed", "other", In::Pipe(&["other input\n"]), &args);
    assert_eq!(again.code, 0, "replay: {}\n{}", again.stdout, again.stderr);
    assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    // No input at all: the recording's still comes.
    let none = run(dir, "changed", "other", In::Null, &args);
    assert_eq!(none.code, 0, "replay: {}\n{}", none.stdout, none.stderr);
    assert_eq!(none.stdout, r.stdout, "{}", none.stderr);
    // The secret's value is not in the log, the greeting's is.
    let dump = replay(&["dump", "--json", p(&rec.join("output.replay"))]);
    assert!(dump.stdout.contains("recorded"), "{}", dump.stdout);
    assert!(!dump.stdout.contains("s3cr3t-value"), "{}", dump.stdout);
    r.stdout
}

#[test]
fn node_gets_its_recorded_environment_and_stdin() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("inputs.js"), NODE).unwrap();
    let out = pipe_comes_back(dir, "rec", &["node", "inputs.js"]);
    // Two chunks, as the pipe gave them, and the token is there: taken from this machine.
    assert_eq!(
        out,
        "chunk \"first\\n\"\nchunk \"second\\n\"\nend recorded true\n"
    );
}

#[test]
fn java_gets_its_recorded_environment_and_stdin() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("Inputs.java"), JAVA).unwrap();
    let c = Command::new("javac")
        .current_dir(dir)
        .arg("Inputs.java")
        .status()
        .unwrap();
    assert!(c.success());
    let out = pipe_comes_back(dir, "rec", &["java", "-cp", ".", "Inputs"]);
    assert_eq!(out, "chunk first\n\nchunk second\n\nend recorded true\n");
}

/// A JVM whose stdin is not the launcher's (a script's `java ... < file`, `cat file | java`)
/// reads input the launcher does not see: the agent records `System.in` itself, and replay
/// gives the recorded bytes with the file changed or gone. The launcher's own stdin (a pipe,
/// the test's) is recorded by the launcher alone.
#[test]
fn a_jvm_in_a_script_gets_its_recorded_stdin() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("Inputs.java"), JAVA).unwrap();
    let c = Command::new("javac")
        .current_dir(dir)
        .arg("Inputs.java")
        .status()
        .unwrap();
    assert!(c.success());
    for (name, script) in [
        ("redirect", "java -cp . Inputs < data.txt"),
        ("pipe", "cat data.txt | java -cp . Inputs"),
        ("descriptor", "java -cp . Inputs fd < data.txt"),
    ] {
        std::fs::write(dir.join("data.txt"), "from the file\n").unwrap();
        let rec = dir.join(name);
        let args = ["record", "-o", p(&rec), "--", "sh", "-c", script];
        let r = run(dir, "g", "", In::Pipe(&["launcher's own\n"]), &args);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert_eq!(r.stdout, "chunk from the file\n\nend g true\n", "{name}");
        let events = replay(&["dump", p(&rec.join("1-Inputs.replay"))]).stdout;
        assert!(events.contains("java.lang.System.in"), "{name}: {events}");
        std::fs::write(dir.join("data.txt"), "edited after the recording\n").unwrap();
        let args = ["replay", p(&rec), "--", "sh", "-c", script];
        let again = run(dir, "g", "", In::Null, &args);
        assert_eq!(
            (again.code, again.stdout.as_str()),
            (0, r.stdout.as_str()),
            "{name}: {}",
            again.stderr
        );
        assert!(
            !again.stderr.contains("DIVERGENCE"),
            "{name}: {}",
            again.stderr
        );
    }
    // The launcher's stdin given straight to the JVM: no event of the agent's.
    let rec = dir.join("direct");
    let args = ["record", "-o", p(&rec), "--", "java", "-cp", ".", "Inputs"];
    let r = run(dir, "g", "", In::Pipe(&["piped\n"]), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let events = replay(&["dump", p(&rec.join("1-Inputs.replay"))]).stdout;
    assert!(events.contains("java.lang.System"), "{events}");
    assert!(!events.contains("java.lang.System.in"), "{events}");
}

/// The same for Node in a script: `process.stdin` (a file stream on the redirect, a pipe
/// from `cat`) and `fs.readFileSync(0)`.
#[test]
fn node_in_a_script_gets_its_recorded_stdin() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("inputs.js"), NODE).unwrap();
    std::fs::write(
        dir.join("whole.js"),
        "console.log('whole', JSON.stringify(require('fs').readFileSync(0, 'utf8')));",
    )
    .unwrap();
    for (name, script, want) in [
        (
            "redirect",
            "node inputs.js < data.txt",
            "chunk \"from the file\\n\"\nend g true\n",
        ),
        (
            "pipe",
            "cat data.txt | node inputs.js",
            "chunk \"from the file\\n\"\nend g true\n",
        ),
        (
            "whole",
            "cat data.txt | node whole.js",
            "whole \"from the file\\n\"\n",
        ),
    ] {
        std::fs::write(dir.join("data.txt"), "from the file\n").unwrap();
        let rec = dir.join(name);
        let args = ["record", "-o", p(&rec), "--", "sh", "-c", script];
        let r = run(dir, "g", "", In::Pipe(&["launcher's own\n"]), &args);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, want),
            "{name}: {}",
            r.stderr
        );
        assert!(
            !r.stderr.contains("unknown variable"),
            "{name}: {}",
            r.stderr
        );
        std::fs::write(dir.join("data.txt"), "edited after the recording\n").unwrap();
        let args = ["replay", p(&rec), "--", "sh", "-c", script];
        let again = run(dir, "g", "", In::Null, &args);
        assert_eq!(
            (again.code, again.stdout.as_str()),
            (0, want),
            "{name}: {}",
            again.stderr
        );
    }
}

#[test]
fn a_c_program_gets_its_recorded_environment_and_stdin() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    compile_c(dir, "inputs", C);
    let out = pipe_comes_back(dir, "rec", &["./inputs"]);
    assert_eq!(out, "chunk first\n\nchunk second\n\nend recorded\n");
}

#[test]
fn a_file_or_dev_null_on_stdin_comes_back_as_one() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let input = dir.join("input.txt");
    std::fs::write(&input, "from a file\n").unwrap();
    // `test -f /dev/stdin`: still a regular file in replay.
    let script = "if [ -f /dev/stdin ]; then echo file; fi; cat; echo \"$GREETING\"";
    let args = ["record", "-o", "rec", "--", "sh", "-c", script];
    let r = run(dir, "recorded", "", In::File(&input), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "file\nfrom a file\nrecorded\n");
    std::fs::write(&input, "changed\n").unwrap();
    let args = ["replay", "rec", "--", "sh", "-c", script];
    let again = run(dir, "changed", "", In::File(&input), &args);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, r.stdout.as_str()),
        "{}",
        again.stderr
    );
    let none = run(dir, "changed", "", In::Null, &args);
    assert_eq!(
        (none.code, none.stdout.as_str()),
        (0, r.stdout.as_str()),
        "{}",
        none.stderr
    );

    // /dev/null comes back as /dev/null whatever replay's stdin is.
    let args = ["record", "-o", "null", "--", "sh", "-c", "cat; echo done"];
    let r = run(dir, "x", "", In::Null, &args);
    assert_eq!((r.code, r.stdout.as_str()), (0, "done\n"), "{}", r.stderr);
    let args = ["replay", "null", "--", "sh", "-c", "cat; echo done"];
    let again = run(dir, "x", "", In::Pipe(&["unexpected\n"]), &args);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, "done\n"),
        "{}",
        again.stderr
    );
}

#[test]
fn a_replay_in_another_directory_says_so() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let r = run(
        dir,
        "g",
        "",
        In::Null,
        &["record", "-o", "rec", "--", "sh", "-c", "echo hi"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{}", r.stderr);
    let same = run(
        dir,
        "g",
        "",
        In::Null,
        &["replay", "rec", "--", "sh", "-c", "echo hi"],
    );
    assert_eq!(same.code, 0, "{}", same.stderr);
    assert!(
        !same.stderr.contains("another directory"),
        "{}",
        same.stderr
    );
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let rec = dir.join("rec");
    let args = ["replay", p(&rec), "--", "sh", "-c", "echo hi"];
    let other = run(&sub, "g", "", In::Null, &args);
    assert_eq!(
        (other.code, other.stdout.as_str()),
        (0, "hi\n"),
        "{}",
        other.stderr
    );
    assert!(
        other.stderr.contains(&format!(
            "replay: note: recorded in {}, replaying in another directory",
            dir.display()
        )),
        "{}",
        other.stderr
    );
}
