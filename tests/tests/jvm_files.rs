//! The JVM agent's file hooks beyond FileInputStream (issue 4): RandomAccessFile, file
//! metadata (java.io.File) and NIO reads, on every JDK present (17 and 25 here). Each test
//! records a program of tests/java, changes the files it read (edit, delete, create what was
//! missing, change a directory), replays and expects the recorded output byte for byte.
//!
//! Needs `cargo build --release -p replay-jvm` first: the agent is a cdylib that tests cannot
//! depend on.

use replay_tests::jvm::{
    assert_replays, data_tree, java, jdks, name, ok, record, replay, Jdk, Recorded,
};

fn assert_diverges(jdk: &Jdk, r: &Recorded, main: &str, args: &[&str], expected_kind: &str) {
    let o = replay(jdk, r, &[], main, args);
    assert_eq!(o.code(), 86, "{}: {}", name(jdk), o.stderr);
    assert!(o.stderr.contains("DIVERGENCE"), "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("expected: {expected_kind}")),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&format!("at {main}.main({main}.java")),
        "the report has the Java stack: {}",
        o.stderr
    );
}

#[test]
fn random_access_file_reads_replay_after_the_file_was_edited_and_deleted() {
    let args = ["in.txt", "missing.txt"];
    for jdk in jdks() {
        let r = record(jdk, "RandomAccess", &args, |d| {
            std::fs::write(d.join("in.txt"), "hello random\nsecond line\nthe end\n").unwrap();
        });
        for want in [
            "length 33",
            "first byte 104",
            "pointer 1",
            "line [ello random]",
            "readFully [second]",
            "tail 4 [end|]",
            "eof -1 pointer 33",
            "int 0x6c6c6f20",
            "channel size 33 pread [ello]",
            "missing: missing.txt (No such file or directory)",
        ] {
            assert!(r.out.contains(want), "{}: {want}:\n{}", name(jdk), r.out);
        }
        for k in [
            "java.io.RandomAccessFile.open",
            "java.io.RandomAccessFile.read",
            "java.io.RandomAccessFile.readBytes",
            "java.io.RandomAccessFile.getFilePointer",
            "java.io.RandomAccessFile.seek",
            "java.io.RandomAccessFile.length",
            "sun.nio.ch.FileDispatcher.pread",
            "sun.nio.ch.FileDispatcher.size",
        ] {
            assert!(
                r.kinds.contains_key(k),
                "{}: no {k}: {:?}",
                name(jdk),
                r.kinds
            );
        }
        assert_eq!(
            r.kinds.get("java.io.RandomAccessFile.open"),
            Some(&2),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );

        // Edited, under -Xcheck:jni.
        let input = r.dir.path().join("in.txt");
        std::fs::write(&input, "HELLO RANDOM\nSECOND LINE\nTHE END, NOW LONGER\n").unwrap();
        let live = ok(
            &java(jdk, r.dir.path(), &[], None, "RandomAccess", &args),
            "live",
        );
        assert_ne!(live, r.out, "the edit is visible to a live run");
        assert_replays(jdk, &r, &["-Xcheck:jni"], "RandomAccess", &args);
        // Deleted, and the missing file now exists: the open still succeeds and the missing
        // one still throws the recorded FileNotFoundException.
        std::fs::remove_file(&input).unwrap();
        std::fs::write(r.dir.path().join("missing.txt"), "now here\n").unwrap();
        assert_replays(jdk, &r, &[], "RandomAccess", &args);

        // Another path than recorded: the divergence report at the open, exit 86.
        assert_diverges(
            jdk,
            &r,
            "RandomAccess",
            &["other.txt", "missing.txt"],
            "java.io.RandomAccessFile.open",
        );
    }
}

#[test]
fn a_file_open_for_writing_is_written_for_real_and_its_reads_are_checked() {
    // A RandomAccessFile opened "rw" must really be open in replay (the program writes it),
    // so its reads run live; what they read is checked against the recording, so a file
    // that changed is a divergence, never a silently different run.
    let args = ["in.txt", "missing.txt", "rw.txt"];
    for jdk in jdks() {
        let r = record(jdk, "RandomAccess", &args, |d| {
            std::fs::write(d.join("in.txt"), "hello random\nsecond line\nthe end\n").unwrap();
            std::fs::write(d.join("rw.txt"), "one\n").unwrap();
        });
        assert!(r.out.contains("rw [one|]"), "{}: {}", name(jdk), r.out);
        let rw = r.dir.path().join("rw.txt");
        assert_eq!(std::fs::read_to_string(&rw).unwrap(), "one\nappended\n");
        // The same file as recorded: faithful, and written again.
        std::fs::write(&rw, "one\n").unwrap();
        assert_replays(jdk, &r, &[], "RandomAccess", &args);
        assert_eq!(std::fs::read_to_string(&rw).unwrap(), "one\nappended\n");
        // Edited (same length): the read is a divergence.
        std::fs::write(&rw, "two\n").unwrap();
        assert_diverges(
            jdk,
            &r,
            "RandomAccess",
            &args,
            "java.io.RandomAccessFile.readBytes",
        );
    }
}

#[test]
fn file_metadata_and_listings_replay_after_the_directory_changed() {
    let args = ["data", "gone.txt"];
    for jdk in jdks() {
        let r = record(jdk, "FileMeta", &args, data_tree);
        for want in [
            "data: exists true dir true file false",
            "list a.txt,b.txt,sub",
            "a.txt: file true dir false length 4 mtime 1577934245000 readable true",
            "b.txt: file true dir false length 7 ",
            "sub: file false dir true ",
            "gone.txt: exists false length 0 mtime 0 list null",
            "branch: no gone.txt",
        ] {
            assert!(r.out.contains(want), "{}: {want}:\n{}", name(jdk), r.out);
        }
        for k in [
            "java.io.UnixFileSystem.getBooleanAttributes",
            "java.io.UnixFileSystem.checkAccess",
            "java.io.UnixFileSystem.getLastModifiedTime",
            "java.io.UnixFileSystem.getLength",
            "java.io.UnixFileSystem.list",
        ] {
            assert!(
                r.kinds.contains_key(k),
                "{}: no {k}: {:?}",
                name(jdk),
                r.kinds
            );
        }
        // Class loading's lookups (Main.class in the class path directory, the JDK's files)
        // are not events: exactly the program's three list calls are.
        assert_eq!(
            r.kinds.get("java.io.UnixFileSystem.list"),
            Some(&3),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );

        // A file deleted, one edited, one added, a directory removed, the missing one made.
        let data = r.dir.path().join("data");
        std::fs::remove_file(data.join("a.txt")).unwrap();
        std::fs::write(data.join("b.txt"), "more\n").unwrap();
        std::fs::write(data.join("c.txt"), "c\n").unwrap();
        std::fs::remove_dir(data.join("sub")).unwrap();
        std::fs::write(r.dir.path().join("gone.txt"), "here\n").unwrap();
        let live = ok(
            &java(jdk, r.dir.path(), &[], None, "FileMeta", &args),
            "live",
        );
        assert!(live.contains("branch: found gone.txt"), "{live}");
        assert_replays(jdk, &r, &["-Xcheck:jni"], "FileMeta", &args);

        // Asking about another path is a divergence at that call.
        assert_diverges(
            jdk,
            &r,
            "FileMeta",
            &["data", "other.txt"],
            "java.io.UnixFileSystem.getBooleanAttributes",
        );
    }
}

#[test]
fn nio_reads_replay_and_a_failed_open_fails_the_same_way_after_the_file_appeared() {
    let args = ["in.txt", "missing.txt"];
    for jdk in jdks() {
        let r = record(jdk, "NioRead", &args, |d| {
            std::fs::write(d.join("in.txt"), "nio line one\nsecond\nend\n").unwrap();
        });
        for want in [
            "readAllBytes 24 [nio line one|second|end|]",
            "readString [nio line one|second|end|]",
            "newInputStream 5 [nio l] next 105",
            "lines 12,6,3",
            "newBufferedReader [nio line one]",
            "readAllLines 3",
            "channel size 24 read 4 [nio ] position 4",
            "channel pread 4 [ne o]",
            "channel direct 3 [lin]",
            "missing: java.nio.file.NoSuchFileException: missing.txt",
        ] {
            assert!(r.out.contains(want), "{}: {want}:\n{}", name(jdk), r.out);
        }
        // Seven opens of in.txt and one of missing.txt; class loading opens nothing here.
        assert_eq!(
            r.kinds.get("sun.nio.fs.UnixNativeDispatcher.open"),
            Some(&8),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );
        for k in [
            "sun.nio.ch.FileDispatcher.read",
            "sun.nio.ch.FileDispatcher.pread",
            "sun.nio.ch.FileDispatcher.size",
            "sun.nio.ch.FileDispatcher.seek",
        ] {
            assert!(
                r.kinds.contains_key(k),
                "{}: no {k}: {:?}",
                name(jdk),
                r.kinds
            );
        }
        // Closes are bookkeeping, not events.
        assert!(
            !r.kinds.keys().any(|k| k.contains("close")),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );

        let input = r.dir.path().join("in.txt");
        std::fs::write(&input, "CHANGED LINE\nAND MORE\n").unwrap();
        let live = ok(
            &java(jdk, r.dir.path(), &[], None, "NioRead", &args),
            "live",
        );
        assert_ne!(live, r.out, "the edit is visible to a live run");
        assert_replays(jdk, &r, &["-Xcheck:jni"], "NioRead", &args);
        // Deleted, and the missing file created: still the recorded bytes, and still
        // NoSuchFileException for the file that now exists.
        std::fs::remove_file(&input).unwrap();
        std::fs::write(r.dir.path().join("missing.txt"), "here now\n").unwrap();
        assert_replays(jdk, &r, &[], "NioRead", &args);

        assert_diverges(
            jdk,
            &r,
            "NioRead",
            &["other.txt", "missing.txt"],
            "sun.nio.fs.UnixNativeDispatcher.open",
        );
    }
}

/// `Children`: children whose output is piped to the program (separate, merged, fed on
/// stdin, drained by the JDK's reaper after exit, a missing command) replay without running:
/// the recorded output and exit statuses come back after the file they print was edited,
/// and no child starts (each appends to runs.txt). A changed command is a divergence at its
/// start.
#[test]
fn child_processes_with_piped_output_replay_without_running() {
    for jdk in jdks() {
        let n = name(jdk);
        let r = record(jdk, "Children", &[], |d| {
            std::fs::write(d.join("data.txt"), "first\n").unwrap();
        });
        assert!(
            r.out.starts_with(
                "separate: out=first err=warning status=3\nmerged: [first][ls failed] status=2\nfed: 300000 status=0\nexec: "
            ) && r.out.ends_with("missing: true\n"),
            "{n}: {}",
            r.out
        );
        let runs = r.dir.path().join("runs.txt");
        assert_eq!(std::fs::read_to_string(&runs).unwrap(), "ran\n".repeat(4));
        assert_eq!(
            r.kinds.get("java.lang.ProcessImpl.forkAndExec"),
            Some(&5),
            "{n}: {:?}",
            r.kinds
        );
        std::fs::write(r.dir.path().join("data.txt"), "second\n").unwrap();
        let o = replay(jdk, &r, &[], "Children", &[]);
        assert_eq!(ok(&o, "replay"), r.out, "{n}");
        // The children were answered from the recording, which the end of the replay says.
        assert!(
            o.stderr.trim().starts_with(
                "replay: note: not run, answered from the recording: 4 child processes;"
            ) && o.stderr.trim().lines().count() == 1,
            "{n}: {}",
            o.stderr
        );
        assert_eq!(
            std::fs::read_to_string(&runs).unwrap(),
            "ran\n".repeat(4),
            "{n}: replay started a child"
        );
        // Another command: a divergence at its start, which does not run.
        let o = replay(jdk, &r, &[], "Children", &["head"]);
        assert_eq!(o.code(), 86, "{n}: {}", o.stderr);
        assert!(
            o.stderr.contains("java.lang.ProcessImpl.forkAndExec"),
            "{n}: {}",
            o.stderr
        );
        assert_eq!(std::fs::read_to_string(&runs).unwrap(), "ran\n".repeat(4));
        // Live, the edited file shows: the replay did not just print what a live run prints.
        let live = java(jdk, r.dir.path(), &[], None, "Children", &[]);
        assert!(ok(&live, "live").contains("out=second"), "{n}");
    }
}

#[test]
fn natives_of_the_programs_own_libraries_are_named_at_the_end_of_a_replay() {
    // A JNI library reads a file with C's stdio: no hook sees it, so a replay after the file
    // changed runs with the new content. The program prints only "done" (what it read goes
    // to a file): with the file unchanged the replay says that the program's own natives ran
    // unrecorded instead of passing for faithful; with it changed, the file the program
    // wrote differs from the recording's, a divergence at exit naming the file and the
    // natives.
    for jdk in jdks() {
        let lib_dir = tempfile::tempdir().unwrap();
        let lib = lib_dir.path().join("libnative_read.so");
        let include = jdk.home.join("include");
        let cc = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I"])
            .arg(&include)
            .arg("-I")
            .arg(include.join("linux"))
            .arg(replay_tests::repo().join("tests/jni/native_read.c"))
            .arg("-o")
            .arg(&lib)
            .output()
            .expect("run cc");
        assert!(
            cc.status.success(),
            "{}",
            String::from_utf8_lossy(&cc.stderr)
        );
        let lib = lib.to_string_lossy().into_owned();
        let args = [lib.as_str(), "in.txt", "out.txt"];
        // JDK 22+ warns about System.load without it; 17 accepts it too.
        let flags = ["--enable-native-access=ALL-UNNAMED"];
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.txt"), "recorded").unwrap();
        let log = dir.path().join("run.replay");
        let mode = |m: &str| format!("{m},log={}", log.display());
        let o = java(
            jdk,
            dir.path(),
            &flags,
            Some(&mode("record")),
            "NativeRead",
            &args,
        );
        assert_eq!(ok(&o, "record"), "done\n", "{}", name(jdk));
        let o = java(
            jdk,
            dir.path(),
            &flags,
            Some(&mode("replay")),
            "NativeRead",
            &args,
        );
        assert_eq!(ok(&o, "replay"), "done\n", "{}", name(jdk));
        assert!(
            o.stderr.contains("replay could not check everything")
                && o.stderr
                    .contains("native methods of the program's own libraries"),
            "{}: {}",
            name(jdk),
            o.stderr
        );
        std::fs::write(dir.path().join("in.txt"), "edited").unwrap();
        let o = java(
            jdk,
            dir.path(),
            &flags,
            Some(&mode("replay")),
            "NativeRead",
            &args,
        );
        assert_eq!(o.code(), 86, "{}: {}", name(jdk), o.stderr);
        assert!(
            o.stderr
                .contains("the program wrote 6 bytes into out.txt; the recording wrote 8")
                && o.stderr
                    .contains("native methods of the program's own libraries"),
            "{}: {}",
            name(jdk),
            o.stderr
        );
    }
}

/// A file opened for writing between clock reads: the open is no event in either run, so the
/// clock values replay fetched as one run are not "left unused" at it (ant's `<jar>` diverged
/// there once a jar more sat on its class path).
#[test]
fn opening_a_file_for_writing_between_clock_reads_is_no_divergence() {
    for jdk in jdks() {
        let r = record(jdk, "ClockThenWrite", &["out.bin"], |_| {});
        assert!(r.out.contains(" wrote true"), "{}", r.out);
        assert_replays(jdk, &r, &[], "ClockThenWrite", &["out.bin"]);
    }
}

#[test]
fn free_space_replays_as_recorded_after_the_disk_filled() {
    // getUsableSpace/getFreeSpace/getTotalSpace ran live: 5 MB more on the disk between the
    // runs made the replay diverge (or write another number into a file).
    for jdk in jdks() {
        let r = record(jdk, "Space", &[], |_| {});
        assert_eq!(
            r.kinds.get("java.io.UnixFileSystem.getSpace"),
            Some(&3),
            "{}: {:?}",
            name(jdk),
            r.kinds
        );
        // Synced, so the blocks are taken now (not at a delayed allocation).
        let mut filler = std::fs::File::create(r.dir.path().join("filler.bin")).unwrap();
        std::io::Write::write_all(&mut filler, &vec![7u8; 32 << 20]).unwrap();
        filler.sync_all().unwrap();
        assert_replays(jdk, &r, &[], "Space", &[]);
    }
}
