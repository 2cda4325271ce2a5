//! The per-JDK class cache: which boot classes name a hooked method in their constant pool.
//!
//! Why: at VMInit the agent must find, among the ~440 classes loaded before its hook class
//! existed, the 2-4 that call a clock. Judging a class from its bytes in the runtime image
//! (src/jimage.rs) costs ~5-8 us (`GetConstantPool`, the fallback, ~25 us); looking its name
//! up here costs ~1 us. What a boot class's pool holds depends only on the JDK's class bytes,
//! so the first run remembers the answer for every boot class it saw and later runs look
//! each loaded class up by name instead.
//!
//! Soundness: a class the cache does not know is scanned (and added); only classes of the
//! boot loader are ever answered from it (an application's class may change between runs
//! under the same name). The key names the JDK (`java.home`, `java.vm.version`, size, mtime
//! and inode of `lib/modules`, where boot classes come from), the hooked methods and the
//! agent's class-file code, so a changed JDK or agent gets a new cache; a JVM whose boot classes can come from elsewhere
//! (`--patch-module`, `-Xbootclasspath/a`, `--upgrade-module-path`) uses no cache. A file
//! that does not parse, or whose checksum or key does not match, is ignored and rewritten; a
//! cache that cannot be written is silently skipped.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &str = "replay-jvm class cache 1";

/// What a boot class's original bytes do with the hooked methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Uses {
    /// Its pool names none, or only statistics methods call them
    /// (`classfile::STATISTICS_ONLY`): never retransformed (`-` in the file).
    None,
    /// Calls them where they may run at any time: retransformed (`+`).
    Anywhere,
    /// Calls them from `<clinit>` only: retransformed only if not yet initialized (`c`).
    ClinitOnly,
}

impl Uses {
    fn mark(self) -> char {
        match self {
            Uses::None => '-',
            Uses::Anywhere => '+',
            Uses::ClinitOnly => 'c',
        }
    }
}

/// Where the cache lives: the `cache=` option.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Setting {
    /// `$XDG_CACHE_HOME/replay`, else `$HOME/.cache/replay`.
    #[default]
    Default,
    /// `cache=off`: scan every run, write nothing.
    Off,
    /// `cache=DIR`.
    Dir(PathBuf),
}

impl Setting {
    /// Parses the value of `cache=`.
    pub fn parse(v: Option<&str>) -> Result<Setting, String> {
        match v {
            None | Some("on") => Ok(Setting::Default),
            Some("off") => Ok(Setting::Off),
            Some("") => {
                Err("bad value '' for option 'cache': expected off, on or a directory".into())
            }
            Some(d) => Ok(Setting::Dir(PathBuf::from(d))),
        }
    }

    /// The directory, or `None` when off or no home is known.
    pub fn dir(&self, env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        match self {
            Setting::Off => None,
            Setting::Dir(d) => Some(d.clone()),
            Setting::Default => set("XDG_CACHE_HOME")
                .or_else(|| set("HOME").map(|h| h.join(".cache")))
                .map(|c| c.join("replay")),
        }
    }
}

/// The cache key of a JDK, or `None` if its boot classes have no stable source we can stat.
pub fn key(java_home: &str, vm_version: &str, targets: &[(&str, &str, &str)]) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(Path::new(java_home).join("lib/modules")).ok()?;
    let t: Vec<String> = targets
        .iter()
        .map(|(c, n, d)| format!("{c}.{n}{d}"))
        .collect();
    Some(format!(
        "home={java_home} vm={vm_version} modules={}:{}.{:09}:{} agent={} code={:016x} targets={}",
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino(),
        env!("CARGO_PKG_VERSION"),
        // The code that computes the answers: a changed analysis must not trust old ones.
        replay_core::digest(&[
            include_bytes!("classfile.rs"),
            include_bytes!("cache.rs"),
            include_bytes!("jimage.rs"),
        ]),
        t.join(",")
    ))
}

/// The answers loaded from, and to be stored into, one cache file.
pub struct ClassCache {
    file: Option<PathBuf>,
    key: String,
    /// Class signature (`Ljava/lang/Thread;`) -> what it does with the hooked methods.
    entries: HashMap<String, Uses>,
    /// Whether the file must be (re)written: missing, invalid, other key, or new entries.
    dirty: bool,
}

impl ClassCache {
    /// Loads the cache for `key` from `dir` (one file per `java.home`); a missing or invalid
    /// file gives an empty cache that will be written. `dir: None` gives a cache that keeps
    /// nothing.
    pub fn open(dir: Option<&Path>, java_home: &str, key: String) -> ClassCache {
        let file = dir.map(|d| {
            let h = replay_core::digest(&[java_home.as_bytes()]);
            d.join(format!("jvm-classes-{h:016x}.txt"))
        });
        let entries = file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|text| parse(&text, &key));
        ClassCache {
            dirty: entries.is_none(),
            entries: entries.unwrap_or_default(),
            file,
            key,
        }
    }

    /// Whether the cache was loaded from a valid file.
    #[cfg(test)]
    pub fn was_valid(&self) -> bool {
        !self.dirty
    }

    pub fn lookup(&self, signature: &str) -> Option<Uses> {
        self.entries.get(signature).copied()
    }

    pub fn insert(&mut self, signature: String, uses: Uses) {
        if self.entries.insert(signature, uses) != Some(uses) {
            self.dirty = true;
        }
    }

    /// Writes the file if anything changed. Failures are silent: the cache only saves time.
    pub fn save(&self) {
        let Some(file) = &self.file else { return };
        if !self.dirty || self.entries.is_empty() {
            return;
        }
        let _ = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")))?;
            // Another JVM may write the same file at the same time: write a private temporary
            // file and rename it over, so readers see a whole file or the old one.
            let tmp = file.with_extension(format!("{}.tmp", std::process::id()));
            let r = std::fs::File::create(&tmp)
                .and_then(|mut f| f.write_all(render(&self.key, &self.entries).as_bytes()))
                .and_then(|()| std::fs::rename(&tmp, file));
            if r.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            r
        })();
    }
}

/// The file text: magic, key, one `<mark> sig` line per class (sorted, so equal caches are
/// equal files; marks as in [`Uses`]), and `end <count> <checksum of everything before>`.
fn render(key: &str, entries: &HashMap<String, Uses>) -> String {
    let mut names: Vec<(&String, &Uses)> = entries.iter().collect();
    names.sort();
    let mut s = format!("{MAGIC}\nkey {key}\n");
    for (n, u) in names {
        s.push(u.mark());
        s.push(' ');
        s.push_str(n);
        s.push('\n');
    }
    let sum = replay_core::digest(&[s.as_bytes()]);
    s.push_str(&format!("end {} {sum:016x}\n", entries.len()));
    s
}

/// The entries of a file made by `render` for `key`; `None` if it is anything else.
fn parse(text: &str, key: &str) -> Option<HashMap<String, Uses>> {
    let body_end = text.trim_end_matches('\n').rfind('\n')? + 1;
    let (body, end) = text.split_at(body_end);
    let mut end = end.trim_end().strip_prefix("end ")?.split(' ');
    let count: usize = end.next()?.parse().ok()?;
    let sum = u64::from_str_radix(end.next()?, 16).ok()?;
    if end.next().is_some() || replay_core::digest(&[body.as_bytes()]) != sum {
        return None;
    }
    let mut lines = body.lines();
    if lines.next()? != MAGIC || lines.next()?.strip_prefix("key ")? != key {
        return None;
    }
    let mut entries = HashMap::with_capacity(count);
    for l in lines {
        let (mark, name) = l.split_once(' ')?;
        let uses = match mark {
            "+" => Uses::Anywhere,
            "-" => Uses::None,
            "c" => Uses::ClinitOnly,
            _ => return None,
        };
        if name.is_empty() || entries.insert(name.to_string(), uses).is_some() {
            return None;
        }
    }
    (entries.len() == count).then_some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> HashMap<String, Uses> {
        [
            ("Ljava/lang/Thread;", Uses::Anywhere),
            ("Ljava/lang/Object;", Uses::None),
            ("Ljava/util/ImmutableCollections;", Uses::ClinitOnly),
        ]
        .into_iter()
        .map(|(n, h)| (n.to_string(), h))
        .collect()
    }

    #[test]
    fn rendered_file_parses_back_only_under_its_key() {
        let text = render("k1", &sample());
        assert_eq!(parse(&text, "k1"), Some(sample()));
        assert_eq!(parse(&text, "k2"), None);
    }

    #[test]
    fn damaged_files_are_rejected() {
        let text = render("k1", &sample());
        // A flipped mark would make a hooked class look clean: the checksum catches it.
        let flipped = text.replacen("+ Ljava/lang/Thread;", "- Ljava/lang/Thread;", 1);
        assert_ne!(flipped, text);
        assert_eq!(parse(&flipped, "k1"), None);
        assert_eq!(parse(&text[..text.len() - 10], "k1"), None);
        assert_eq!(parse("", "k1"), None);
        assert_eq!(parse("garbage\n", "k1"), None);
        let no_end: String = text.lines().take(4).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse(&no_end, "k1"), None);
    }

    #[test]
    fn cache_round_trips_through_a_directory_and_skips_what_it_cannot_write() {
        let dir = std::env::temp_dir().join(format!("replay-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut c = ClassCache::open(Some(&dir), "/jdk", "k".into());
        assert!(!c.was_valid());
        c.insert("Ljava/lang/Thread;".into(), Uses::Anywhere);
        c.save();
        let c2 = ClassCache::open(Some(&dir), "/jdk", "k".into());
        assert!(c2.was_valid());
        assert_eq!(c2.lookup("Ljava/lang/Thread;"), Some(Uses::Anywhere));
        assert_eq!(c2.lookup("Ljava/lang/Object;"), None);
        // Another key (a changed JDK): nothing is trusted.
        let c3 = ClassCache::open(Some(&dir), "/jdk", "k-new".into());
        assert!(!c3.was_valid());
        assert_eq!(c3.lookup("Ljava/lang/Thread;"), None);
        // A directory below a file cannot be made: save is silent.
        let blocked = dir.join(format!(
            "jvm-classes-{:016x}.txt",
            replay_core::digest(&[b"/jdk"])
        ));
        let mut c4 = ClassCache::open(Some(&blocked.join("sub")), "/jdk", "k".into());
        c4.insert("LA;".into(), Uses::None);
        c4.save();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn setting_values_and_directories() {
        assert_eq!(Setting::parse(None), Ok(Setting::Default));
        assert_eq!(Setting::parse(Some("off")), Ok(Setting::Off));
        assert_eq!(Setting::parse(Some("/c")), Ok(Setting::Dir("/c".into())));
        assert!(Setting::parse(Some("")).is_err());
        let env = |k: &str| match k {
            "HOME" => Some("/home/u".to_string()),
            "XDG_CACHE_HOME" => Some(String::new()),
            _ => None,
        };
        assert_eq!(
            Setting::Default.dir(env),
            Some(PathBuf::from("/home/u/.cache/replay"))
        );
        let xdg = |k: &str| (k == "XDG_CACHE_HOME").then(|| "/x".to_string());
        assert_eq!(Setting::Default.dir(xdg), Some(PathBuf::from("/x/replay")));
        assert_eq!(Setting::Off.dir(xdg), None);
        assert_eq!(Setting::Default.dir(|_| None), None);
    }
}
