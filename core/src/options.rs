//! Options shared by every front end, in one vocabulary: the JVM agent's
//! `record,log=app.replay,policy=warn-live` and the environment's `REPLAY_MODE=record`,
//! `REPLAY_LOG=app.replay`, `REPLAY_POLICY=warn-live` are parsed here.

use std::fmt;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    Record,
    Replay,
}

/// What replay does on a divergence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Print the report and exit with [`crate::EXIT_DIVERGENCE`].
    Abort,
    /// Print the report, then run live: intercepted calls reach the real world again.
    WarnLive,
    /// Print the report and keep replaying (and reporting) where possible.
    WarnContinue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Threads consume events in the recorded global order.
    Strict,
    /// Each thread consumes its own events in order; threads do not wait for each other.
    Relaxed,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub mode: Mode,
    pub log: Option<String>,
    pub policy: Policy,
    pub order: Order,
    pub sync: bool,
    pub flush: Duration,
    pub timeout: Duration,
    /// zstd level of the log's chunks, 0 for none: compression is the recorder thread's
    /// main cost on bulk data (~2 ns a byte of JSON at level 1), which a machine without a
    /// spare core pays in the program's time; `off` trades that for a larger log.
    pub compress: u8,
    /// Record the program's stdout/stderr writes and exit status; replay compares them (a
    /// difference is a divergence). `verify-output=off` for programs that print what is not
    /// meant to reproduce: nothing is recorded, or, replaying, the recorded output is passed
    /// over.
    pub verify_output: bool,
    /// Record: perturb the schedule with yields and short sleeps chosen by this seed
    /// ([`crate::chaos`]), so that rare interleavings show up. Stored in the log header;
    /// replay ignores it (it follows the recorded order).
    pub chaos: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Off,
            log: None,
            policy: Policy::Abort,
            order: Order::Strict,
            sync: false,
            flush: Duration::from_millis(100),
            timeout: Duration::from_secs(10),
            compress: 1,
            verify_output: true,
            chaos: None,
        }
    }
}

/// The keys this module understands (front ends may accept more of their own).
pub const KEYS: &[&str] = &[
    "mode",
    "log",
    "policy",
    "order",
    "strict",
    "relaxed",
    "sync",
    "flush",
    "timeout",
    "compress",
    "verify-output",
    "chaos",
    "record",
    "replay",
    "off",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptError {
    /// Not a key of the core; the front end may know it, else it warns.
    Unknown(String),
    /// A known key with a value it cannot take: a hard error.
    Bad {
        key: String,
        value: String,
        expected: &'static str,
    },
}

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptError::Unknown(k) => write!(f, "unknown option '{k}'"),
            OptError::Bad {
                key,
                value,
                expected,
            } => write!(
                f,
                "bad value '{value}' for option '{key}': expected {expected}"
            ),
        }
    }
}

impl std::error::Error for OptError {}

fn bad(key: &str, value: &str, expected: &'static str) -> OptError {
    OptError::Bad {
        key: key.into(),
        value: value.into(),
        expected,
    }
}

/// The highest zstd level `compress` takes (zstd's own maximum short of its "ultra" levels,
/// whose windows a reader would need too much memory for).
pub const MAX_COMPRESS: u8 = 19;

pub fn parse_bool(key: &str, v: &str) -> Result<bool, OptError> {
    match v.to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(bad(key, v, "true or false")),
    }
}

/// `100ms`, `10s`, `2m`, `500us`; a bare number is milliseconds.
pub fn parse_duration(key: &str, v: &str) -> Result<Duration, OptError> {
    let t = v.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| bad(key, v, "a duration such as 100ms or 10s"))?;
    let secs = match unit {
        "" | "ms" => n / 1e3,
        "us" => n / 1e6,
        "ns" => n / 1e9,
        "s" => n,
        "m" | "min" => n * 60.0,
        _ => return Err(bad(key, v, "a duration such as 100ms or 10s")),
    };
    if !(secs.is_finite() && secs > 0.0 && secs < 86400.0 * 365.0) {
        return Err(bad(key, v, "a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl Options {
    /// Sets one key. Keys are case-insensitive and `-`/`_` are the same.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), OptError> {
        let k = key.trim().to_ascii_lowercase().replace('_', "-");
        let v = value.unwrap_or("").trim();
        match k.as_str() {
            "record" | "replay" | "off" if value.is_none() => self.set("mode", Some(&k)),
            "mode" => {
                self.mode = match v.to_ascii_lowercase().as_str() {
                    "record" => Mode::Record,
                    "replay" => Mode::Replay,
                    "off" | "" => Mode::Off,
                    _ => return Err(bad(key, v, "record, replay or off")),
                };
                Ok(())
            }
            "log" => {
                if v.is_empty() {
                    return Err(bad(key, v, "a file path"));
                }
                self.log = Some(v.to_string());
                Ok(())
            }
            "policy" => {
                self.policy = match v.to_ascii_lowercase().replace('_', "-").as_str() {
                    "abort" => Policy::Abort,
                    "warn-live" | "live" => Policy::WarnLive,
                    "warn-continue" | "continue" | "warn" => Policy::WarnContinue,
                    _ => return Err(bad(key, v, "abort, warn-live or warn-continue")),
                };
                Ok(())
            }
            "order" => {
                self.order = match v.to_ascii_lowercase().as_str() {
                    "strict" => Order::Strict,
                    "relaxed" => Order::Relaxed,
                    _ => return Err(bad(key, v, "strict or relaxed")),
                };
                Ok(())
            }
            "strict" => {
                self.order = if parse_bool(key, v)? {
                    Order::Strict
                } else {
                    Order::Relaxed
                };
                Ok(())
            }
            "relaxed" => {
                self.order = if parse_bool(key, v)? {
                    Order::Relaxed
                } else {
                    Order::Strict
                };
                Ok(())
            }
            "sync" => {
                self.sync = parse_bool(key, v)?;
                Ok(())
            }
            "flush" | "flush-interval" | "flush-ms" => {
                let d = parse_duration(key, v)?;
                if d > Duration::from_secs(10) {
                    return Err(bad(key, v, "a flush interval of at most 10s"));
                }
                self.flush = d.max(Duration::from_millis(1));
                Ok(())
            }
            "timeout" => {
                self.timeout = parse_duration(key, v)?;
                Ok(())
            }
            "compress" => {
                self.compress = match v.to_ascii_lowercase().as_str() {
                    "" | "on" | "true" | "yes" => 1,
                    "off" | "none" | "false" | "no" => 0,
                    n => match n.parse::<u8>() {
                        Ok(l) if l <= MAX_COMPRESS => l,
                        _ => return Err(bad(key, v, "off, on or a zstd level 1-19")),
                    },
                };
                Ok(())
            }
            "verify-output" => {
                self.verify_output = parse_bool(key, v)?;
                Ok(())
            }
            "chaos" => {
                self.chaos =
                    match v.to_ascii_lowercase().as_str() {
                        "off" | "no" | "false" | "none" => None,
                        // A bare `chaos`: a seed of its own, said in the log header.
                        "" | "on" | "yes" | "true" => Some(random_seed()),
                        n => Some(n.parse::<u64>().map_err(|_| {
                            bad(key, v, "a seed (a number up to 2^64-1), on or off")
                        })?),
                    };
                Ok(())
            }
            _ => Err(OptError::Unknown(key.to_string())),
        }
    }

    /// Parses an agent-style list, `record,log=app.replay,policy=warn-live`. Unknown keys are
    /// returned (in order) for the front end to handle or warn about; the first bad value is
    /// an error.
    pub fn parse_list(&mut self, s: &str) -> Result<Vec<(String, Option<String>)>, OptError> {
        let mut unknown = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = match item.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (item, None),
            };
            match self.set(k, v) {
                Err(OptError::Unknown(_)) => unknown.push((k.to_string(), v.map(str::to_string))),
                r => r?,
            }
        }
        Ok(unknown)
    }

    /// Reads `REPLAY_MODE`, `REPLAY_LOG` and the other `REPLAY_<KEY>` variables. Variables
    /// the core does not know are returned for the front end (`extra` lists the ones it
    /// takes itself; the rest it should warn about).
    pub fn from_env_vars<I: IntoIterator<Item = (String, String)>>(
        vars: I,
    ) -> Result<(Options, Vec<(String, String)>), OptError> {
        let mut o = Options::default();
        let mut unknown = Vec::new();
        let mut vars: Vec<(String, String)> = vars
            .into_iter()
            // The tree's variables are read by `tree`, not options.
            .filter(|(k, _)| k.starts_with("REPLAY_") && !crate::tree::is_tree_var(k))
            .collect();
        // MODE first, so that errors in other keys are reported in a stable order.
        vars.sort_by_key(|(k, _)| (k != "REPLAY_MODE", k.clone()));
        for (k, v) in vars {
            let key = k["REPLAY_".len()..].to_ascii_lowercase();
            match o.set(&key, Some(&v)) {
                Err(OptError::Unknown(_)) => unknown.push((k, v)),
                Err(OptError::Bad {
                    value, expected, ..
                }) => {
                    return Err(OptError::Bad {
                        key: k,
                        value,
                        expected,
                    })
                }
                Ok(()) => {}
            }
        }
        Ok((o, unknown))
    }

    /// [`Self::from_env_vars`] over this process's environment. Variables are read lossily:
    /// an unrelated variable that is not UTF-8 must not stop the program (`std::env::vars`
    /// would panic on it).
    pub fn from_env() -> Result<(Options, Vec<(String, String)>), OptError> {
        Self::from_env_vars(std::env::vars_os().filter_map(|(k, v)| {
            let k = k.to_string_lossy().into_owned();
            k.starts_with("REPLAY_")
                .then(|| (k, v.to_string_lossy().into_owned()))
        }))
    }

    /// The effective options, as recorded in the log header.
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut v = vec![
            (
                "mode".to_string(),
                format!("{:?}", self.mode).to_lowercase(),
            ),
            ("policy".into(), self.policy_name().into()),
            (
                "order".into(),
                if self.order == Order::Strict {
                    "strict"
                } else {
                    "relaxed"
                }
                .into(),
            ),
            ("sync".into(), self.sync.to_string()),
            ("flush".into(), format!("{}ms", self.flush.as_millis())),
            ("timeout".into(), format!("{}ms", self.timeout.as_millis())),
            (
                "compress".into(),
                match self.compress {
                    0 => "off".to_string(),
                    l => l.to_string(),
                },
            ),
        ];
        v.push((
            "verify-output".into(),
            if self.verify_output { "on" } else { "off" }.into(),
        ));
        if let Some(seed) = self.chaos {
            v.push(("chaos".into(), seed.to_string()));
        }
        if let Some(l) = &self.log {
            v.insert(1, ("log".into(), l.clone()));
        }
        v
    }

    pub fn policy_name(&self) -> &'static str {
        match self.policy {
            Policy::Abort => "abort",
            Policy::WarnLive => "warn-live",
            Policy::WarnContinue => "warn-continue",
        }
    }
}

/// A seed for a bare `chaos`: the time and the pid, mixed (not meant to be secret).
pub fn random_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = t ^ (u64::from(std::process::id()) << 32);
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

/// Expands `%p` (pid), `%t` (local time, `YYYYMMDD-HHMMSS`) and `%%` in a log path.
pub fn expand_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 16);
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('p') => out += &std::process::id().to_string(),
            Some('t') => out += &timestamp(),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

fn timestamp() -> String {
    // SAFETY: time(NULL) and localtime_r with a zeroed out-struct are always valid.
    unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_list() {
        let mut o = Options::default();
        let unk = o
            .parse_list("record,log=/tmp/a.replay,policy=warn-live,relaxed,flush=20ms,bogus=1,sync")
            .unwrap();
        assert_eq!(o.mode, Mode::Record);
        assert_eq!(o.log.as_deref(), Some("/tmp/a.replay"));
        assert_eq!(o.policy, Policy::WarnLive);
        assert_eq!(o.order, Order::Relaxed);
        assert_eq!(o.flush, Duration::from_millis(20));
        assert!(o.sync);
        assert_eq!(unk, vec![("bogus".to_string(), Some("1".to_string()))]);
    }

    #[test]
    fn bad_values_are_errors_naming_key_and_value() {
        let mut o = Options::default();
        let e = o.parse_list("replay,policy=explode").unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad value 'explode' for option 'policy': expected abort, warn-live or warn-continue"
        );
        assert!(o.parse_list("timeout=soon").is_err());
        assert!(o.parse_list("flush=0").is_err());
        assert!(o.parse_list("flush=1h").is_err());
        assert!(o.parse_list("log=").is_err());
        assert!(o.parse_list("mode=fast").is_err());
    }

    #[test]
    fn env_vars() {
        let vars = [
            ("REPLAY_MODE", "replay"),
            ("REPLAY_LOG", "x.replay"),
            ("REPLAY_TIMEOUT", "2s"),
            ("REPLAY_ORDER", "relaxed"),
            ("REPLAY_COLOR", "1"),
            ("HOME", "/root"),
        ];
        let (o, unk) =
            Options::from_env_vars(vars.iter().map(|(a, b)| (a.to_string(), b.to_string())))
                .unwrap();
        assert_eq!(o.mode, Mode::Replay);
        assert_eq!(o.timeout, Duration::from_secs(2));
        assert_eq!(o.order, Order::Relaxed);
        assert_eq!(unk, vec![("REPLAY_COLOR".to_string(), "1".to_string())]);
        let e =
            Options::from_env_vars([("REPLAY_MODE".to_string(), "rec".to_string())]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad value 'rec' for option 'REPLAY_MODE': expected record, replay or off"
        );
    }

    #[test]
    fn compress_levels() {
        let mut o = Options::default();
        assert_eq!(o.compress, 1);
        for (v, want) in [
            ("off", 0),
            ("0", 0),
            ("none", 0),
            ("3", 3),
            ("19", 19),
            ("on", 1),
        ] {
            o.parse_list(&format!("compress={v}")).unwrap();
            assert_eq!(o.compress, want, "compress={v}");
        }
        o.parse_list("compress").unwrap();
        assert_eq!(o.compress, 1);
        for v in ["20", "fast", "-1", "1.5"] {
            let e = o
                .parse_list(&format!("compress={v}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("compress") && e.contains(v) && e.contains("1-19"),
                "{e}"
            );
        }
        o.compress = 0;
        assert!(o
            .describe()
            .contains(&("compress".to_string(), "off".to_string())));
        let (o, unknown) =
            Options::from_env_vars([("REPLAY_COMPRESS".to_string(), "9".to_string())]).unwrap();
        assert_eq!((o.compress, unknown.len()), (9, 0));
    }

    #[test]
    fn chaos_seed() {
        let mut o = Options::default();
        assert_eq!(o.chaos, None);
        o.parse_list("record,chaos=12345").unwrap();
        assert_eq!(o.chaos, Some(12345));
        assert!(o
            .describe()
            .contains(&("chaos".to_string(), "12345".to_string())));
        o.parse_list("chaos=off").unwrap();
        assert_eq!(o.chaos, None);
        assert!(!o.describe().iter().any(|(k, _)| k == "chaos"));
        o.parse_list("chaos").unwrap();
        assert!(o.chaos.is_some());
        let e = o.parse_list("chaos=lots").unwrap_err().to_string();
        assert!(e.contains("chaos") && e.contains("seed"), "{e}");
        let (o, unknown) =
            Options::from_env_vars([("REPLAY_CHAOS".to_string(), "7".to_string())]).unwrap();
        assert_eq!((o.chaos, unknown.len()), (Some(7), 0));
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("t", "250").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(
            parse_duration("t", "1.5s").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            parse_duration("t", "500us").unwrap(),
            Duration::from_micros(500)
        );
        assert!(parse_duration("t", "-1s").is_err());
        assert!(parse_duration("t", "s").is_err());
    }

    #[test]
    fn path_expansion() {
        let pid = std::process::id().to_string();
        assert_eq!(expand_path("app-%p.replay"), format!("app-{pid}.replay"));
        assert_eq!(expand_path("100%%"), "100%");
        let t = expand_path("%t");
        assert_eq!(t.len(), 15, "{t}");
        assert_eq!(expand_path("a%zb%"), "a%zb%");
    }
}
