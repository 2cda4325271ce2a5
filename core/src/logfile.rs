//! Claiming a log: one process, one log, and no file but our own is ever written.
//!
//! Recording: the log is written into a new file (`O_CREAT|O_EXCL`, mode 0600, in the log's
//! directory, so no symlink or existing file is ever opened for writing), locked with
//! `flock` for the life of the recording, given its magic line and header, and only then put
//! at the log's path with a rename that never replaces a name (`RENAME_NOREPLACE`, or
//! `link` where the file system lacks it). The log stays at its path while recording, so a
//! killed recorder leaves a log that reads back to its last flush. A name already at the
//! path is replaced only when it is an old log of ours: a regular file owned by our user
//! that no process holds locked. It is locked first, checked to still be at the path, and
//! unlinked; then the rename is tried again. Whoever else tries at the same time either
//! finds it locked (taken) or loses the rename: of two siblings exactly one gets the path.
//! A symbolic link, a non-regular file or another user's file at the path is refused.
//!
//! Replay: the log is locked shared (a recorder's exclusive lock means the log is still
//! being written), and an open-file-description lock on byte `pid` says "process `pid`
//! replays this log". A process whose ancestor holds such a byte inherited the replay
//! environment from it: it must not consume the log, so it runs live (with one line).

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The log is recorded or replayed by another process: the caller runs without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// A live recorder holds it (or, when `replaying`, a replay does).
    Recorded,
    Replayed,
    /// An ancestor of this process replays it: this process inherited the replay settings.
    ReplayedByAncestor(u32),
}

impl fmt::Display for Taken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Taken::Recorded => f.write_str("is being recorded by another process"),
            Taken::Replayed => f.write_str("is being replayed by another process"),
            Taken::ReplayedByAncestor(p) => {
                write!(f, "is being replayed by process {p}, a parent of this one")
            }
        }
    }
}

impl std::error::Error for Taken {}

/// Whether `e` says the log is taken (see [`Taken`]).
pub fn taken(e: &io::Error) -> Option<&Taken> {
    e.get_ref().and_then(|i| i.downcast_ref::<Taken>())
}

fn taken_err(t: Taken) -> io::Error {
    io::Error::new(io::ErrorKind::ResourceBusy, t)
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} {why}: a log is only written to a new file of its own (remove it or choose another log)",
            path.display()
        ),
    )
}

/// How often a rename lost to another process is tried again before the log counts as
/// taken. Each round means another process put a file at the path and it went again.
const ROUNDS: usize = 16;

/// Creates the log at `path` as described in the module doc: `init` gets the new, locked
/// file before it is at `path` (to write the header), and its result is returned once the
/// file is there. The lock lasts as long as the file (or a clone of it) stays open.
pub fn create<T>(path: &Path, init: impl FnOnce(File) -> io::Result<T>) -> io::Result<T> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the log path names no file"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Said before anything is created: the usual refusals cost no temporary file.
    examine(path, false)?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    // tempfile creates with O_CREAT|O_EXCL (never through a symlink) and mode 0600, and its
    // no-clobber persist is renameat2(RENAME_NOREPLACE) with link+unlink as the fallback.
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(dir)?;
    lock(tmp.as_file(), libc::LOCK_EX)?;
    let value = init(tmp.as_file().try_clone()?)?;
    let mut tmp = tmp;
    for _ in 0..ROUNDS {
        match tmp.persist_noclobber(path) {
            Ok(_) => return Ok(value),
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                tmp = e.file;
                examine(path, true)?;
            }
            Err(e) => return Err(e.error),
        }
    }
    Err(taken_err(Taken::Recorded))
}

/// Checks what is at `path`: nothing, or an old log of ours that no one holds. With
/// `remove`, that old log is unlinked (locked and checked to be still there first);
/// without, only its kind and owner are checked.
fn examine(path: &Path, remove: bool) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(refused(path, "is a symbolic link"));
    }
    if !ft.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    // The early check locks nothing (see below), so it says nothing about "taken".
    if !remove {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(refused(
            path,
            &format!("belongs to another user (uid {})", meta.uid()),
        ));
    }
    // O_NONBLOCK: should a FIFO take the file's place meanwhile, opening it does not wait.
    let old = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        // Gone or replaced by a symlink meanwhile: the next round sees what is there now.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refused(path, "is a symbolic link"))
        }
        Err(e) => return Err(e),
    };
    let opened = old.metadata()?;
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Ok(());
    }
    if let Err(e) = lock(&old, libc::LOCK_EX) {
        if e.kind() != io::ErrorKind::WouldBlock {
            return Err(e);
        }
        // Told apart by the replays' marks, not by probing with another flock: a probe's
        // lock, however short, would make a racing sibling misjudge the file in turn.
        let t = if marked(&old, None)? {
            Taken::Replayed
        } else {
            Taken::Recorded
        };
        return Err(taken_err(t));
    }
    // Locked by us: no process following this protocol unlinks it or renames over it now,
    // so the name still being this file means the unlink removes this file.
    match std::fs::symlink_metadata(path) {
        Ok(m) if (m.dev(), m.ino()) == (meta.dev(), meta.ino()) => match std::fs::remove_file(path)
        {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        },
        _ => Ok(()),
    }
}

fn lock(f: &File, how: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock on an open descriptor.
        if unsafe { libc::flock(f.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A replay's hold on its log: kept open for the session (the locks go with it).
#[derive(Debug)]
pub struct ReplayClaim {
    _file: Option<File>,
}

/// Claims `path` for a replay by this process: refuses ([`Taken`]) a log being recorded
/// and a log that an ancestor of this process replays.
pub fn claim_replay(path: &Path) -> io::Result<ReplayClaim> {
    let f = match File::open(path) {
        Ok(f) => f,
        // The replayer's own open says what is wrong, in its words.
        Err(_) => return Ok(ReplayClaim { _file: None }),
    };
    if let Err(e) = lock(&f, libc::LOCK_SH) {
        return match e.kind() {
            io::ErrorKind::WouldBlock => Err(taken_err(Taken::Recorded)),
            // A file system without flock: replay goes on without the claim.
            _ => Ok(ReplayClaim { _file: Some(f) }),
        };
    }
    for pid in ancestors() {
        if marked(&f, Some(pid))? {
            return Err(taken_err(Taken::ReplayedByAncestor(pid)));
        }
    }
    mark(&f)?;
    Ok(ReplayClaim { _file: Some(f) })
}

fn ofd(
    f: &File,
    cmd: libc::c_int,
    ty: libc::c_int,
    start: u32,
    len: u32,
) -> io::Result<Option<libc::flock>> {
    // SAFETY: flock is plain data; zero is a valid value for every field.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = ty as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = libc::off_t::from(start);
    fl.l_len = libc::off_t::from(len);
    // SAFETY: fcntl with a valid descriptor and a flock the kernel reads and fills in.
    if unsafe { libc::fcntl(f.as_raw_fd(), cmd, &mut fl) } == 0 {
        return Ok(Some(fl));
    }
    let e = io::Error::last_os_error();
    // Kernels or file systems without OFD locks: no marks to set or find.
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) => Ok(None),
        _ => Err(e),
    }
}

/// Marks the file as replayed by this process: an OFD read lock on byte `pid` (OFD locks
/// belong to the open file, so the replayer closing its own descriptors of the log does
/// not drop it, as it would a POSIX lock).
fn mark(f: &File) -> io::Result<()> {
    ofd(f, libc::F_OFD_SETLK, libc::F_RDLCK, std::process::id(), 1).map(drop)
}

/// Whether process `pid` marked the file as replayed by it (exactly its byte: a whole-file
/// lock, as NFS emulates flock with, is no replay's mark), or with None, any process.
fn marked(f: &File, pid: Option<u32>) -> io::Result<bool> {
    let (start, len) = match pid {
        Some(p) => (p, 1),
        None => (0, 0),
    };
    let fl = match ofd(f, libc::F_OFD_GETLK, libc::F_WRLCK, start, len)? {
        Some(fl) => fl,
        None => return Ok(false),
    };
    if fl.l_type == libc::F_UNLCK as _ {
        return Ok(false);
    }
    Ok(match pid {
        Some(p) => fl.l_start == libc::off_t::from(p) && fl.l_len == 1,
        None => fl.l_len == 1,
    })
}

/// This process's ancestors, parent first, up to (not including) init.
fn ancestors() -> Vec<u32> {
    let mut out = Vec::new();
    // SAFETY: getppid has no preconditions.
    let mut pid = unsafe { libc::getppid() } as u32;
    while pid > 1 && out.len() < 64 {
        out.push(pid);
        match parent_of(pid) {
            Some(p) => pid = p,
            None => break,
        }
    }
    out
}

/// The parent of `pid` from /proc (field 4 of `stat`, after the parenthesized name, which
/// may itself hold spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(PathBuf::from(format!("/proc/{pid}/stat"))).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    use std::sync::{Arc, Barrier};

    fn make(path: &Path, text: &str) -> io::Result<File> {
        create(path, |mut f| {
            f.write_all(text.as_bytes())?;
            Ok(f)
        })
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn a_new_log_is_0600_and_at_its_path_with_its_header() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.replay");
        let f = make(&p, "head").unwrap();
        assert_eq!(read(&p), "head");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // No temporary file is left.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        drop(f);
    }

    #[test]
    fn a_live_log_is_taken_and_an_old_one_replaced() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.replay");
        let live = make(&p, "first").unwrap();
        let e = make(&p, "second").unwrap_err();
        assert_eq!(taken(&e), Some(&Taken::Recorded), "{e}");
        assert_eq!(read(&p), "first");
        drop(live);
        let _again = make(&p, "third").unwrap();
        assert_eq!(read(&p), "third");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_is_neither_followed_nor_replaced() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("precious");
        std::fs::write(&target, "keep").unwrap();
        let p = d.path().join("a.replay");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let e = make(&p, "log").unwrap_err();
        assert!(taken(&e).is_none());
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(read(&target), "keep");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_symlink());
        // A dangling one too: creating through it would make a file where it points.
        let q = d.path().join("b.replay");
        std::os::unix::fs::symlink(d.path().join("nowhere"), &q).unwrap();
        assert!(make(&q, "log").is_err());
        assert!(!d.path().join("nowhere").exists());
    }

    #[test]
    fn a_directory_or_fifo_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("dir.replay");
        std::fs::create_dir(&p).unwrap();
        let e = make(&p, "log").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let q = d.path().join("fifo.replay");
        let c = std::ffi::CString::new(q.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = make(&q, "log").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn another_users_file_is_not_written_or_replaced() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root to give a file to another user");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.replay");
        std::fs::write(&p, "theirs").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        let e = make(&p, "log").unwrap_err();
        assert!(e.to_string().contains("another user (uid 65534)"), "{e}");
        assert_eq!(read(&p), "theirs");
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!((m.uid(), m.permissions().mode() & 0o777), (65534, 0o666));
    }

    #[test]
    fn of_siblings_racing_for_an_old_log_exactly_one_wins() {
        for round in 0..40 {
            let d = tempfile::tempdir().unwrap();
            let p = Arc::new(d.path().join("a.replay"));
            std::fs::write(&*p, "old").unwrap();
            let n = 4;
            let barrier = Arc::new(Barrier::new(n));
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let (p, b) = (p.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        b.wait();
                        make(&p, &format!("sibling {i}"))
                    })
                })
                .collect();
            let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let winners: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
            assert_eq!(winners.len(), 1, "round {round}: {results:?}");
            for r in &results {
                if let Err(e) = r {
                    assert_eq!(taken(e), Some(&Taken::Recorded), "round {round}: {e}");
                }
            }
            // The winner's file is the one at the path.
            let mut w = winners[0].as_ref().unwrap().try_clone().unwrap();
            let mut text = String::new();
            use std::io::Seek;
            w.rewind().unwrap();
            let _ = w.read_to_string(&mut text);
            let at_path = read(&p);
            assert!(at_path.starts_with("sibling "), "{at_path}");
            let ino = |f: &File| f.metadata().unwrap().ino();
            assert_eq!(
                ino(winners[0].as_ref().unwrap()),
                std::fs::metadata(&*p).unwrap().ino()
            );
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        }
    }

    #[test]
    fn of_siblings_racing_for_a_free_path_exactly_one_wins() {
        for round in 0..40 {
            let d = tempfile::tempdir().unwrap();
            let p = Arc::new(d.path().join("a.replay"));
            let n = 4;
            let barrier = Arc::new(Barrier::new(n));
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let (p, b) = (p.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        b.wait();
                        make(&p, &format!("sibling {i}"))
                    })
                })
                .collect();
            let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(
                results.iter().filter(|r| r.is_ok()).count(),
                1,
                "round {round}: {results:?}"
            );
        }
    }

    #[test]
    fn a_replay_refuses_a_log_being_recorded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.replay");
        let live = make(&p, "log").unwrap();
        let e = claim_replay(&p).unwrap_err();
        assert_eq!(taken(&e), Some(&Taken::Recorded));
        drop(live);
        let claim = claim_replay(&p).unwrap();
        // A replayed log is not replaced by a recorder meanwhile.
        let e = make(&p, "new").unwrap_err();
        assert_eq!(taken(&e), Some(&Taken::Replayed), "{e}");
        // Another replay in this process (no ancestor holds it) may read it too.
        let _second = claim_replay(&p).unwrap();
        drop(claim);
    }

    #[test]
    fn the_ancestor_chain_ends_before_init() {
        let a = ancestors();
        assert!(!a.is_empty());
        assert!(a.iter().all(|&p| p > 1));
        // SAFETY: getppid has no preconditions.
        assert_eq!(a[0], unsafe { libc::getppid() } as u32);
    }
}
