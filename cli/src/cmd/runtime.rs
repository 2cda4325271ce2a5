//! What the launcher puts into a program's environment so that every supported runtime in
//! it records or replays: the JVM agent through `JAVA_TOOL_OPTIONS`, the Node addon through
//! `NODE_OPTIONS=--require`, the C header through `REPLAY_MODE`/`REPLAY_LOG`.
//!
//! All three are set whatever the command is: a JVM or Node started anywhere below it (a
//! shell script that runs `java`, `node` spawning `node`, `jshell` starting its remote JVM)
//! inherits them and is recorded as a process of the tree. What the command itself is
//! ([`Kind`]) decides only which part must be present and what is said.
//!
//! # Where the parts come from
//!
//! `cargo build --release --workspace` puts `libreplay.so` (the JVM agent) and
//! `libreplay_node.so` (the Node addon) next to the `replay` binary; an installation keeps
//! them together (or in `../lib` beside a `bin/`). The Node addon's JavaScript (index.js and
//! lib/) is compiled into this binary (`build.rs`), so it needs no source tree and no npm:
//! on first use it is written, with a copy of the addon named `replay_node.node` where
//! index.js loads it from, into a per-user cache directory named by the version and a hash
//! of the files and of the addon (so a rebuild gets a fresh directory, and a running program
//! never sees its files replaced). A copy and not a link: Node resolves a linked addon to
//! its real name, whose `.so` extension it does not load as an addon.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/node_files.rs"));

/// What the command runs, as far as the launcher can tell before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Java,
    Node,
    /// Anything else: a C program linked with the C header reads the environment; any other
    /// program has only its output and exit status recorded.
    Other,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Java => "java",
            Kind::Node => "node",
            Kind::Other => "native",
        }
    }
}

/// JDK tools that run a JVM (the agent loads into all of them through JAVA_TOOL_OPTIONS).
const JAVA_TOOLS: &[&str] = &[
    "java", "javac", "jshell", "jar", "javadoc", "javap", "jdb", "jlink", "jpackage", "kotlin",
    "kotlinc", "scala", "groovy", "mvn", "gradle", "sbt", "lein", "clojure",
];

/// The executable `cmd` names: itself if it has a `/`, else the first match on `PATH`.
pub fn which(cmd: &OsStr) -> Option<PathBuf> {
    let p = Path::new(cmd);
    if p.as_os_str().as_encoded_bytes().contains(&b'/') {
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(cmd))
        .find(|c| c.is_file())
}

/// What `cmd` is: by its name, or for a script by its `#!` line and the words it runs.
pub fn detect(cmd: &OsStr) -> Kind {
    let by_name = |n: &str| {
        if JAVA_TOOLS.contains(&n) {
            Some(Kind::Java)
        } else if n == "node" || n == "nodejs" || n.starts_with("node-") {
            Some(Kind::Node)
        } else {
            None
        }
    };
    let name = Path::new(cmd)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(k) = by_name(&name) {
        return k;
    }
    let Some(path) = which(cmd) else {
        return Kind::Other;
    };
    // A link to a runtime (`/usr/bin/java` -> .../bin/java).
    if let Some(k) = fs::canonicalize(&path)
        .ok()
        .and_then(|r| r.file_name().map(|n| n.to_string_lossy().into_owned()))
        .and_then(|n| by_name(&n))
    {
        return k;
    }
    let mut head = Vec::new();
    if fs::File::open(&path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut head))
        .is_err()
        || !head.starts_with(b"#!")
    {
        return Kind::Other;
    }
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next().unwrap_or("");
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '/'))
            .filter(|w| !w.is_empty())
            .map(|w| w.rsplit('/').next().unwrap_or(w).to_string())
            .collect()
    };
    if let Some(k) = words(first).iter().find_map(|w| by_name(w)) {
        return k;
    }
    // A shell script: what it runs. `$JAVA_HOME/bin/java` and `exec java` both name java.
    let runs: Vec<String> = text.lines().skip(1).flat_map(words).collect();
    if runs
        .iter()
        .any(|w| JAVA_TOOLS.contains(&w.as_str()) || w == "JAVA_HOME")
    {
        Kind::Java
    } else if runs.iter().any(|w| w == "node") {
        Kind::Node
    } else {
        Kind::Other
    }
}

/// The directories a runtime part is looked for in: the binary's own, then `../lib` and
/// `../lib/replay` (a `bin/` + `lib/` installation).
fn lib_dirs() -> Vec<PathBuf> {
    let Some(exe) = std::env::current_exe()
        .ok()
        .and_then(|e| fs::canonicalize(e).ok())
    else {
        return Vec::new();
    };
    let Some(dir) = exe.parent() else {
        return Vec::new();
    };
    let mut v = vec![dir.to_path_buf()];
    if let Some(up) = dir.parent() {
        v.push(up.join("lib"));
        v.push(up.join("lib").join("replay"));
    }
    v
}

pub fn find_lib(name: &str) -> Option<PathBuf> {
    lib_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub const AGENT: &str = "libreplay.so";
pub const NODE_ADDON: &str = "libreplay_node.so";

/// Where per-user files that can be made again go: `$XDG_CACHE_HOME/replay`,
/// `~/.cache/replay`, else a per-user directory under the temporary directory.
fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("replay");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(h).join(".cache").join("replay");
    }
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("replay-{uid}"))
}

/// Where the package sits in its cache directory: under `node_modules`, as an installed
/// package does, so that coverage tools (`node --test --experimental-test-coverage`, c8)
/// leave its files out of the program's report as they do every installed package's (its
/// rows differed between record and replay: a divergence with the world unchanged).
const PACKAGE_PATH: [&str; 2] = ["node_modules", "replay-node"];

/// The directory whose index.js `--require` loads: the embedded files and a copy of `addon`.
pub fn node_dir(addon: &Path) -> Result<PathBuf, String> {
    let meta = fs::metadata(addon).map_err(|e| format!("{}: {e}", addon.display()))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    NODE_FILES.hash(&mut h);
    PACKAGE_PATH.hash(&mut h);
    (meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()).hash(&mut h);
    let name = format!("node-{}-{:016x}", env!("CARGO_PKG_VERSION"), h.finish());
    let base = cache_dir();
    let top = base.join(&name);
    let dir = PACKAGE_PATH.iter().fold(top.clone(), |d, p| d.join(p));
    if dir.join("replay_node.node").is_file() {
        return Ok(dir);
    }
    let fail = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    fs::create_dir_all(&base).map_err(|e| fail(&base, e))?;
    // Written under a temporary name and renamed whole: a program started at the same time
    // sees either no directory or a complete one.
    let tmp = base.join(format!(".{name}.{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let pkg = PACKAGE_PATH.iter().fold(tmp.clone(), |d, p| d.join(p));
    let write = || -> Result<(), String> {
        for (rel, text) in NODE_FILES {
            let p = pkg.join(rel);
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent).map_err(|e| fail(parent, e))?;
            }
            fs::write(&p, text).map_err(|e| fail(&p, e))?;
        }
        let dest = pkg.join("replay_node.node");
        fs::copy(addon, &dest).map_err(|e| fail(&dest, e))?;
        Ok(())
    };
    let r = write().and_then(|()| match fs::rename(&tmp, &top) {
        Ok(()) => Ok(()),
        // Another launcher got there first.
        Err(_) if dir.join("replay_node.node").is_file() => Ok(()),
        Err(e) => Err(fail(&dir, e)),
    });
    let _ = fs::remove_dir_all(&tmp);
    r.map(|()| dir)
}

/// Appends `opt` to the space-separated options variable `var` of `env`, which may be set.
pub fn append_opt(var: &str, opt: &str, env: &mut Vec<(OsString, OsString)>) {
    let old = env
        .iter()
        .rev()
        .find(|(k, _)| k == var)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty());
    let v = match old {
        Some(mut o) => {
            o.push(" ");
            o.push(opt);
            o
        }
        None => OsString::from(opt),
    };
    env.retain(|(k, _)| k != var);
    env.push((var.into(), v));
}

/// An option value for NODE_OPTIONS, quoted if it has spaces (Node splits on them).
pub fn node_quote(p: &Path) -> String {
    let s = p.display().to_string();
    if s.contains([' ', '\t', '"', '\\']) {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name_and_script() {
        assert_eq!(detect(OsStr::new("java")), Kind::Java);
        assert_eq!(detect(OsStr::new("/opt/jdk/bin/javac")), Kind::Java);
        assert_eq!(detect(OsStr::new("node")), Kind::Node);
        let d = tempfile::tempdir().unwrap();
        let w = |n: &str, t: &str| {
            let p = d.path().join(n);
            fs::write(&p, t).unwrap();
            p
        };
        let s = w(
            "run.sh",
            "#!/bin/sh\nset -e\nexec \"$JAVA_HOME/bin/java\" -cp . Main\n",
        );
        assert_eq!(detect(s.as_os_str()), Kind::Java);
        let s = w("tool", "#!/usr/bin/env node\nconsole.log(1)\n");
        assert_eq!(detect(s.as_os_str()), Kind::Node);
        let s = w("n.sh", "#!/bin/bash\nnode app.js \"$@\"\n");
        assert_eq!(detect(s.as_os_str()), Kind::Node);
        let s = w("c.sh", "#!/bin/sh\n./app\n");
        assert_eq!(detect(s.as_os_str()), Kind::Other);
        assert_eq!(detect(OsStr::new("/nonexistent/prog")), Kind::Other);
    }

    #[test]
    fn the_node_files_are_embedded() {
        let names: Vec<&str> = NODE_FILES.iter().map(|(n, _)| *n).collect();
        assert!(names.contains(&"index.js"), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("lib/")), "{names:?}");
    }
}
