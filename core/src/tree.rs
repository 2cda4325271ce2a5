//! Process trees: every recorded process of one run gets its own log in one recording
//! directory, named by its place in the tree, so that replay finds each process's log again.
//!
//! The launcher (`replay record -- CMD`) puts three variables into CMD's environment, which
//! every descendant inherits:
//!
//! - [`ENV_TREE`]: the recording directory, or a log file `NAME.replay` (`replay record -o
//!   NAME.replay`): then the first top-level process writes that file and the others
//!   `NAME.<id>-<program>.replay` beside it;
//! - [`ENV_CLAIMS`]: a directory private to this one run (record or replay), where each
//!   process claims its place with an exclusive file create;
//! - [`ENV_ID`]: unset at the top; each recorded process sets it in its own environment to
//!   its own id, so that the processes it starts know their parent.
//!
//! An id is the path of sibling indexes from the top, `1`, `1.2`, `1.2.1`: the second process
//! recorded under the first top-level one is `1.2`. The log is `DIR/<id>-<program>.replay`
//! (the program only for a person reading the directory).
//!
//! Record numbers a parent's children in the order they start (the first free index). Replay
//! matches by what the child is rather than by arrival, since siblings that run at the same
//! time may start in another order: it takes the first unclaimed sibling log recorded by the
//! same program with the same arguments, else by the same program. Two concurrent siblings
//! of one program with the same arguments can still swap logs; that is the one case this
//! scheme cannot tell apart.
//!
//! Processes that are not recorded (a shell running a script) are transparent: their
//! children see the same [`ENV_ID`] as they do, so a shell script that runs `java` twice
//! makes two top-level processes, `1` and `2`.

use crate::format::HeaderInfo;
use crate::options::Mode;
use crate::reader::LogReader;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The recording directory of the tree.
pub const ENV_TREE: &str = "REPLAY_TREE";
/// This run's claims directory.
pub const ENV_CLAIMS: &str = "REPLAY_TREE_CLAIMS";
/// The id of the nearest recorded ancestor.
pub const ENV_ID: &str = "REPLAY_TREE_ID";

/// Where the launcher puts recordings (read by the launcher only).
pub const ENV_RECORDINGS: &str = "REPLAY_DIR";

/// The stdin the launcher gives the program and records (`device:inode`): a process of the
/// tree whose fd 0 is another records its stdin reads itself (cli/src/cmd/inputs.rs).
pub const ENV_STDIN: &str = "REPLAY_STDIN";

/// Whether an environment variable belongs to the tree or the launcher (not an option of the
/// core, and not one a front end should warn about).
pub fn is_tree_var(name: &str) -> bool {
    name == ENV_TREE
        || name == ENV_CLAIMS
        || name == ENV_ID
        || name == ENV_RECORDINGS
        || name == ENV_STDIN
}

/// The log file name of process `id` running `program`.
pub fn log_name(id: &str, program: &str) -> String {
    format!("{id}-{}.replay", sanitize(program))
}

/// `(id, program)` of a process log's file name, `None` for any other file.
pub fn parse_name(name: &str) -> Option<(&str, &str)> {
    let stem = name.strip_suffix(".replay")?;
    let (id, program) = stem.split_once('-')?;
    let valid = !id.is_empty()
        && id
            .split('.')
            .all(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()));
    valid.then_some((id, program))
}

/// The process logs in `dir`, as `(id, path)` in tree order (parents before their
/// children, siblings by index).
pub fn logs(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    Tree::of(dir).logs()
}

/// Where a tree's logs are: a directory, or a top log file and its siblings.
pub struct Tree {
    dir: PathBuf,
    /// `NAME.` for a file tree, else empty.
    prefix: String,
    /// The file name of process `1` in a file tree.
    top: Option<String>,
}

impl Tree {
    /// The tree [`ENV_TREE`] names: a directory (the launcher makes it before the program
    /// runs), else a log file.
    pub fn of(path: &Path) -> Tree {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let stem = name.strip_suffix(".replay").unwrap_or(name);
        match stem {
            stem if !path.is_dir() && !stem.is_empty() => Tree {
                dir: path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .to_path_buf(),
                prefix: format!("{stem}."),
                top: Some(name.to_string()),
            },
            _ => Tree {
                dir: path.to_path_buf(),
                prefix: String::new(),
                top: None,
            },
        }
    }

    /// The log of process `id` running `program`.
    pub fn path(&self, id: &str, program: &str) -> PathBuf {
        match &self.top {
            Some(top) if id == "1" => self.dir.join(top),
            _ => self
                .dir
                .join(format!("{}{}", self.prefix, log_name(id, program))),
        }
    }

    /// The process logs, as `(id, path)` in tree order.
    pub fn logs(&self) -> std::io::Result<Vec<(String, PathBuf)>> {
        let mut v = Vec::new();
        for e in fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if self.top.as_deref() == Some(name) {
                v.push(("1".to_string(), e.path()));
            } else if let Some((id, _)) =
                name.strip_prefix(self.prefix.as_str()).and_then(parse_name)
            {
                v.push((id.to_string(), e.path()));
            }
        }
        v.sort_by_key(|(id, _)| id_key(id));
        Ok(v)
    }
}

fn id_key(id: &str) -> Vec<u64> {
    id.split('.')
        .map(|c| c.parse().unwrap_or(u64::MAX))
        .collect()
}

/// A file name part for `program`: its file name, with anything but letters, digits, `.`,
/// `_` and `-` made `_`.
fn sanitize(program: &str) -> String {
    let base = program.rsplit('/').next().unwrap_or(program);
    let s: String = base
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("p{s}")
    } else {
        s
    }
}

/// Who the process is, for choosing its log.
pub struct Me<'a> {
    pub runtime: &'a str,
    pub program: &'a str,
    /// The arguments as the header records them (agent options left out by the caller).
    pub argv: &'a [String],
}

/// The log of this process when it belongs to a tree ([`ENV_TREE`] set), claiming its place
/// and setting [`ENV_ID`] for its children; `Ok(None)` outside a tree.
pub fn resolve(mode: Mode, me: &Me<'_>) -> Result<Option<PathBuf>, crate::session::StartError> {
    let Some(dir) = std::env::var_os(ENV_TREE).filter(|d| !d.is_empty()) else {
        return Ok(None);
    };
    let tree = Tree::of(Path::new(&dir));
    let claims = std::env::var_os(ENV_CLAIMS)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| format!("{ENV_TREE} is set but {ENV_CLAIMS} is not"))?;
    let parent = std::env::var(ENV_ID).unwrap_or_default();
    let program = if me.program.is_empty() {
        me.runtime
    } else {
        me.program
    };
    let (id, path) = match mode {
        Mode::Record => claim_next(&tree, &claims, &parent, program)?,
        // A top-level process the recording does not hold is another program than the one
        // recorded (or one more run of it): refused in one line, as a log of another program
        // is, rather than run live and compared with output it never made. A child that
        // did not run when recorded runs live (its parent's replay says what it did).
        Mode::Replay => claim_recorded(&tree, &claims, &parent, program, me.argv).map_err(|e| {
            if parent.is_empty() {
                crate::session::StartError {
                    message: format!("{}{e}", crate::session::REFUSED),
                    exit: Some(crate::session::EXIT_WRONG_LOG),
                }
            } else {
                e.into()
            }
        })?,
        Mode::Off => return Ok(None),
    };
    // Read by the processes this one starts (fork/exec, Node's process.env, and the JVM's
    // ProcessEnvironment, which copies the environment after the agent has loaded).
    std::env::set_var(ENV_ID, &id);
    let _ = MY_CLAIM.set(claims.join(&id));
    Ok(Some(path))
}

/// This process's claim file in the run's claims directory, once it has its place.
static MY_CLAIM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Replay: this process diverged; `line` is the first line of its report. Written into its
/// claim file, where the launcher finds it after the run: a child whose stderr went to a
/// pipe or a file nobody shows (a forked worker, a build tool's helper) must not leave the
/// replay looking faithful. Best effort: a failure to write is not the program's problem.
pub fn note_divergence(line: &str) {
    if let Some(p) = MY_CLAIM.get() {
        let _ = std::fs::write(p, line.as_bytes());
    }
}

/// The processes of a run that noted a divergence ([`note_divergence`]): (id, first line).
pub fn divergences(claims: &Path) -> Vec<(String, String)> {
    let Ok(dir) = std::fs::read_dir(claims) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = dir
        .flatten()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            let line = text.lines().next()?.trim().to_string();
            (!line.is_empty()).then(|| (e.file_name().to_string_lossy().into_owned(), line))
        })
        .collect();
    out.sort();
    out
}

fn child_id(parent: &str, index: u32) -> String {
    if parent.is_empty() {
        index.to_string()
    } else {
        format!("{parent}.{index}")
    }
}

/// Claims `id` for this run: true if no other process had.
fn claim(claims: &Path, id: &str) -> Result<bool, String> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(claims.join(id))
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(format!(
            "cannot claim a place in the process tree under {}: {e}",
            claims.display()
        )),
    }
}

/// Record: the parent's first free child index.
fn claim_next(
    tree: &Tree,
    claims: &Path,
    parent: &str,
    program: &str,
) -> Result<(String, PathBuf), String> {
    for index in 1..=100_000 {
        let id = child_id(parent, index);
        if claim(claims, &id)? {
            let path = tree.path(&id, program);
            return Ok((id, path));
        }
    }
    Err(format!(
        "too many processes under {parent:?} in {}",
        claims.display()
    ))
}

/// Replay: the first unclaimed sibling log of this program, with the same arguments if one
/// has them.
fn claim_recorded(
    tree: &Tree,
    claims: &Path,
    parent: &str,
    program: &str,
    argv: &[String],
) -> Result<(String, PathBuf), String> {
    let dir = &tree.dir;
    let all = tree
        .logs()
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let mine = name(program);
    let siblings: Vec<(String, PathBuf, Option<HeaderInfo>)> = all
        .into_iter()
        .filter(|(id, _)| match id.rsplit_once('.') {
            Some((p, _)) => p == parent,
            None => parent.is_empty(),
        })
        .map(|(id, path)| {
            let h = LogReader::open(&path).ok().map(|r| r.header().clone());
            (id, path, h)
        })
        .collect();
    let same_program = |h: &HeaderInfo| h.program.is_empty() || name(&h.program) == mine;
    let same_args = |h: &HeaderInfo| comparable(&h.argv) == comparable(argv);
    for exact in [true, false] {
        for (id, path, h) in &siblings {
            let Some(h) = h else { continue };
            if same_program(h) && (!exact || same_args(h)) && claim(claims, id)? {
                return Ok((id.clone(), path.clone()));
            }
        }
    }
    let under = if parent.is_empty() {
        "at the top of the tree".to_string()
    } else {
        format!("under process {parent}")
    };
    Err(format!(
        "{} has no recorded process {mine} {under} left to replay (it did not run, or ran more often, when recorded)",
        dir.display()
    ))
}

fn comparable(argv: &[String]) -> Vec<&str> {
    argv.iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("-agentpath:") && !a.starts_with("-agentlib:"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_in_tree_order() {
        assert_eq!(log_name("1.2", "/opt/app/child.js"), "1.2-child.js.replay");
        assert_eq!(parse_name("1.2-child.js.replay"), Some(("1.2", "child.js")));
        assert_eq!(log_name("3", "my prog"), "3-my_prog.replay");
        assert_eq!(parse_name("output.replay"), None);
        assert_eq!(parse_name("1..2-x.replay"), None);
        assert_eq!(parse_name("a-x.replay"), None);
        let d = tempfile::tempdir().unwrap();
        for n in [
            "1.10-a.replay",
            "2-b.replay",
            "1-a.replay",
            "1.2-c.replay",
            "x.txt",
        ] {
            fs::write(d.path().join(n), "").unwrap();
        }
        let ids: Vec<String> = logs(d.path()).unwrap().into_iter().map(|x| x.0).collect();
        assert_eq!(ids, ["1", "1.2", "1.10", "2"]);
    }

    #[test]
    fn record_claims_the_first_free_index() {
        let d = tempfile::tempdir().unwrap();
        let c = d.path().join("claims");
        fs::create_dir(&c).unwrap();
        let t = Tree::of(d.path());
        let (a, pa) = claim_next(&t, &c, "", "java").unwrap();
        let (b, _) = claim_next(&t, &c, "", "node").unwrap();
        let (x, px) = claim_next(&t, &c, "2", "child.js").unwrap();
        assert_eq!((a.as_str(), b.as_str(), x.as_str()), ("1", "2", "2.1"));
        assert_eq!(pa, d.path().join("1-java.replay"));
        assert_eq!(px, d.path().join("2.1-child.js.replay"));
        // A file tree: the first top-level process writes the file itself.
        let f = Tree::of(&d.path().join("app.replay"));
        assert_eq!(f.path("1", "java"), d.path().join("app.replay"));
        assert_eq!(f.path("1.1", "x.js"), d.path().join("app.1.1-x.js.replay"));
        fs::write(d.path().join("app.replay"), "").unwrap();
        fs::write(d.path().join("app.1.1-x.js.replay"), "").unwrap();
        let ids: Vec<String> = f.logs().unwrap().into_iter().map(|x| x.0).collect();
        assert_eq!(ids, ["1", "1.1"]);
        let g = Tree::of(&d.path().join("app.log"));
        assert_eq!(g.path("1", "c"), d.path().join("app.log"));
        assert_eq!(g.path("2", "c"), d.path().join("app.log.2-c.replay"));
    }
}
