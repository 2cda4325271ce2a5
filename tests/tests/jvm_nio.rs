//! The JVM agent's NIO metadata and directory-stream hooks (issue 4): `Files.exists`,
//! `notExists`, `isDirectory`, `isRegularFile`, `size`, `getLastModifiedTime`,
//! `readAttributes`, `isReadable`/`isWritable`, and `Files.list`, `newDirectoryStream`,
//! `walk`, on every JDK present (17 and 25 here: their natives differ). Each test records
//! tests/java/NioMeta.java, changes the directory tree it looked at, replays and expects the
//! recorded output byte for byte, or a divergence report for a changed program.
//!
//! Needs `cargo build --release -p replay-jvm` first: the agent is a cdylib that tests cannot
//! depend on.

use replay_tests::jvm::{
    assert_replays, data_tree, java, jdks, name, ok, record, replay, Jdk, Recorded,
};

const ARGS: [&str; 2] = ["data", "gone.txt"];

/// Records NioMeta over [`data_tree`].
fn nio_record(jdk: &Jdk) -> Recorded {
    record(jdk, "NioMeta", &ARGS, data_tree)
}

fn is_jdk17(jdk: &Jdk) -> bool {
    name(jdk).contains("17")
}

#[test]
fn nio_metadata_and_directory_streams_replay_after_the_tree_changed() {
    for jdk in jdks() {
        let r = nio_record(jdk);
        for want in [
            "gone.txt: size NoSuchFileException(gone.txt)",
            "data: exists true notExists false dir true file false readable true nofollow true",
            "list a.txt,b.txt,sub",
            "glob *.txt [a.txt, b.txt]",
            "walk ,a.txt,b.txt,sub",
            "a.txt: file true dir false size 4 mtime 1577934245000 attrs [true false 4 1577934245000 key ",
            "b.txt: file true dir false size 7 ",
            "text [bbbbbb]",
            "sub: file false dir true ",
            "gone.txt: exists false notExists true dir false readable false \
             attrs NoSuchFileException(gone.txt) list NoSuchFileException(gone.txt)",
            "branch: no gone.txt",
        ] {
            assert!(r.out.contains(want), "{}: {want}:\n{}", name(jdk), r.out);
        }
        // JDK 17 answers isDirectory/isRegularFile with stat1 and exists with exists0; JDK 25
        // has neither and uses stat0 and access0.
        let mut expected = vec![
            "sun.nio.fs.UnixNativeDispatcher.stat",
            "sun.nio.fs.UnixNativeDispatcher.lstat",
            "sun.nio.fs.UnixNativeDispatcher.access",
            "sun.nio.fs.UnixNativeDispatcher.fdopendir",
            "sun.nio.fs.UnixNativeDispatcher.readdir",
        ];
        if is_jdk17(jdk) {
            expected.extend([
                "sun.nio.fs.UnixNativeDispatcher.stat1",
                "sun.nio.fs.UnixNativeDispatcher.exists",
            ]);
        }
        for k in expected {
            assert!(
                r.kinds.contains_key(k),
                "{}: no {k}: {:?}",
                name(jdk),
                r.kinds
            );
        }
        // Exactly the program's listings: four of data (".", "..", 3 entries, the end) and
        // walk's one of sub (".", "..", the end). Class loading lists nothing here.
        assert_eq!(
            r.kinds.get("sun.nio.fs.UnixNativeDispatcher.readdir"),
            Some(&27),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );
        assert_eq!(
            r.kinds.get("sun.nio.fs.UnixNativeDispatcher.fdopendir"),
            Some(&5),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );
        // closedir is bookkeeping, not an event.
        assert!(
            !r.kinds.keys().any(|k| k.contains("close")),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );

        // A file deleted, one edited, one added, the subdirectory removed, the missing file
        // made: a live run sees all of it, the replay (under -Xcheck:jni) none.
        let d = r.dir.path();
        let data = d.join("data");
        std::fs::remove_file(data.join("a.txt")).unwrap();
        std::fs::write(data.join("b.txt"), "more\n").unwrap();
        std::fs::write(data.join("c.txt"), "c\n").unwrap();
        std::fs::remove_dir(data.join("sub")).unwrap();
        std::fs::write(d.join("gone.txt"), "here\n").unwrap();
        let live = ok(&java(jdk, d, &[], None, "NioMeta", &ARGS), "live");
        assert!(live.contains("list b.txt,c.txt"), "{live}");
        assert!(live.contains("branch: found gone.txt"), "{live}");
        assert_replays(jdk, &r, &["-Xcheck:jni"], "NioMeta", &ARGS);

        // The whole directory gone and a file in its place: still the recorded tree.
        std::fs::remove_dir_all(&data).unwrap();
        std::fs::write(&data, "not a directory\n").unwrap();
        assert_replays(jdk, &r, &[], "NioMeta", &ARGS);
    }
}

#[test]
fn a_changed_program_gets_the_divergence_report_at_the_first_different_call() {
    for jdk in jdks() {
        let r = nio_record(jdk);
        // Another path: the first call (Files.size, a stat on both JDKs) asks about it.
        let o = replay(jdk, &r, &[], "NioMeta", &["data", "other.txt"]);
        assert_eq!(o.code(), 86, "{}: {}", name(jdk), o.stderr);
        assert!(o.stderr.contains("DIVERGENCE"), "{}", o.stderr);
        assert!(
            o.stderr
                .contains("expected: sun.nio.fs.UnixNativeDispatcher.stat "),
            "{}: {}",
            name(jdk),
            o.stderr
        );
        assert!(
            o.stderr.contains("at java.base/java.nio.file.Files.size("),
            "{}",
            o.stderr
        );

        // One more question before the listing: the program asks isExecutable where the
        // recording opened the directory for Files.list.
        let o = replay(jdk, &r, &[], "NioMeta", &["data", "gone.txt", "extra"]);
        assert_eq!(o.code(), 86, "{}: {}", name(jdk), o.stderr);
        assert!(
            o.stderr
                .contains("expected: sun.nio.fs.UnixNativeDispatcher.open "),
            "{}: {}",
            name(jdk),
            o.stderr
        );
        assert!(
            o.stderr
                .contains("actual:   sun.nio.fs.UnixNativeDispatcher.access "),
            "{}: {}",
            name(jdk),
            o.stderr
        );
        assert!(
            o.stderr.contains("at NioMeta.main(NioMeta.java"),
            "the report has the Java stack: {}",
            o.stderr
        );
        // Up to the divergence the replayed output is the recorded one.
        let first_lines: String = r.out.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert!(
            o.stdout_text().starts_with(&first_lines),
            "{}",
            o.stdout_text()
        );
    }
}

/// `Files.copy` copies in native code, past the read hooks (JDK 17 `transfer`, JDK 21+
/// `directCopy0`): replayed after the sources changed, the copies on disk hold the recorded
/// sources' bytes, not the new ones, and not nothing.
#[test]
fn files_copy_writes_the_recorded_bytes_after_the_source_changed() {
    let big: String = (0..20_000).map(|i| format!("{i:08}\n")).collect();
    for jdk in jdks() {
        let n = name(jdk);
        let r = record(jdk, "CopyFile", &["small.txt", "big.txt"], |d| {
            std::fs::write(d.join("small.txt"), "hello copy\n").unwrap();
            std::fs::write(d.join("big.txt"), &big).unwrap();
        });
        assert_eq!(
            r.out, "small.txt: copied 11 bytes\nbig.txt: copied 180000 bytes\n",
            "{n}"
        );
        let d = r.dir.path();
        std::fs::write(d.join("small.txt"), "changed\n").unwrap();
        std::fs::remove_file(d.join("big.txt")).unwrap();
        for f in ["small.txt.copy", "big.txt.copy"] {
            std::fs::remove_file(d.join(f)).unwrap();
        }
        assert_replays(jdk, &r, &[], "CopyFile", &["small.txt", "big.txt"]);
        assert_eq!(
            std::fs::read_to_string(d.join("small.txt.copy")).unwrap(),
            "hello copy\n",
            "{n}"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("big.txt.copy")).unwrap(),
            big,
            "{n}"
        );
    }
}

/// Changes of the file system (java.io `mkdir`/`delete`/`renameTo`, NIO `createDirectory`/
/// `delete`/`move`) run live in replay and return what the recording got: replayed with
/// the directories the recording made still there and a file in the way of a delete that
/// failed, the program prints the same and the changes that succeeded happen again.
#[test]
fn file_system_changes_return_their_recorded_outcome() {
    for jdk in jdks() {
        let n = name(jdk);
        let r = record(jdk, "Changes", &[], |_| {});
        assert_eq!(
            r.out,
            "made: mkdir true\nnio: created\nnothere: no such file nothere\n\
             gone: delete false\nmoved\nrenamed true\n",
            "{n}"
        );
        let d = r.dir.path();
        for k in [
            "java.io.UnixFileSystem.createDirectory",
            "java.io.UnixFileSystem.delete",
            "java.io.UnixFileSystem.rename",
            "sun.nio.fs.UnixNativeDispatcher.mkdir",
            "sun.nio.fs.UnixNativeDispatcher.rename",
        ] {
            assert!(r.kinds.contains_key(k), "{n}: no {k}: {:?}", r.kinds);
        }
        // Another world: what the recording made is there, and so are the two files whose
        // deletion failed in the recording.
        std::fs::write(d.join("nothere"), "x").unwrap();
        std::fs::create_dir(d.join("gone")).unwrap();
        std::fs::write(d.join("gone/keep"), "x").unwrap();
        assert_replays(jdk, &r, &[], "Changes", &[]);
        assert!(d.join("made/c.txt").is_file(), "{n}");
        assert!(d.join("nothere").is_file(), "{n}: a failed delete was made");
        assert!(d.join("gone/keep").is_file(), "{n}");
    }
}

#[test]
fn symbolic_links_resolve_as_recorded_after_they_were_retargeted() {
    // toRealPath, getCanonicalPath and readSymbolicLink ran live: a link retargeted after the
    // recording made the replayed program name the other directory (exit 0).
    for jdk in jdks() {
        let r = record(jdk, "Links", &[], |d| {
            for sub in ["data", "other"] {
                std::fs::create_dir(d.join(sub)).unwrap();
                std::fs::write(d.join(sub).join("f.txt"), sub).unwrap();
            }
            std::fs::write(d.join("gone"), "").unwrap();
            std::os::unix::fs::symlink("data", d.join("link")).unwrap();
        });
        assert_eq!(
            r.out,
            "toRealPath data\ncanonical data/f.txt\nreadlink data\n\
             gone found\ndata NotLinkException\n",
            "{}",
            name(jdk)
        );
        for k in [
            "sun.nio.fs.UnixNativeDispatcher.realpath",
            "sun.nio.fs.UnixNativeDispatcher.readlink",
            "java.io.UnixFileSystem.canonicalize",
        ] {
            assert!(r.kinds.contains_key(k), "{}: {k}: {:?}", name(jdk), r.kinds);
        }
        let d = r.dir.path();
        std::fs::remove_file(d.join("link")).unwrap();
        std::os::unix::fs::symlink("other", d.join("link")).unwrap();
        std::fs::remove_file(d.join("gone")).unwrap();
        assert_replays(jdk, &r, &[], "Links", &[]);
    }
}
