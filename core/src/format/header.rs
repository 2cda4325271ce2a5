//! The log header and trailer, and their Cap'n Proto encoding.

use crate::error::LogError;
use crate::replay_capnp::{header, trailer};
use serde::Serialize;

/// What a log says about the run that made it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HeaderInfo {
    pub format_version: u32,
    pub min_reader_version: u32,
    pub runtime: String,
    pub runtime_version: String,
    pub argv: Vec<String>,
    pub cwd: String,
    pub host: String,
    pub pid: u32,
    pub start_time_unix_ns: i64,
    pub recorder_version: String,
    pub options: Vec<(String, String)>,
    /// What the runtime ran (script, main class, executable); empty when not known.
    pub program: String,
}

impl HeaderInfo {
    /// A header describing the current process, for the given front end.
    pub fn for_this_process(
        runtime: &str,
        runtime_version: &str,
        options: Vec<(String, String)>,
    ) -> Self {
        HeaderInfo {
            format_version: super::FORMAT_VERSION,
            min_reader_version: super::MIN_READER_VERSION,
            runtime: runtime.into(),
            runtime_version: runtime_version.into(),
            argv: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            cwd: std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            host: hostname(),
            pid: std::process::id(),
            start_time_unix_ns: unix_now_ns(),
            recorder_version: env!("CARGO_PKG_VERSION").into(),
            options,
            program: String::new(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut msg = capnp::message::Builder::new_default();
        {
            let mut h = msg.init_root::<header::Builder>();
            h.set_format_version(self.format_version);
            h.set_min_reader_version(self.min_reader_version);
            h.set_runtime(self.runtime.as_str());
            h.set_runtime_version(self.runtime_version.as_str());
            let mut argv = h.reborrow().init_argv(self.argv.len() as u32);
            for (i, a) in self.argv.iter().enumerate() {
                argv.set(i as u32, a.as_str());
            }
            h.set_cwd(self.cwd.as_str());
            h.set_host(self.host.as_str());
            h.set_pid(self.pid);
            h.set_start_time_unix_ns(self.start_time_unix_ns);
            h.set_recorder_version(self.recorder_version.as_str());
            let mut opts = h.reborrow().init_options(self.options.len() as u32);
            for (i, (k, v)) in self.options.iter().enumerate() {
                let mut kv = opts.reborrow().get(i as u32);
                kv.set_key(k.as_str());
                kv.set_value(v.as_str());
            }
            h.set_program(self.program.as_str());
        }
        capnp::serialize::write_message_to_words(&msg)
    }

    pub fn decode(bytes: &[u8], offset: u64) -> Result<Self, LogError> {
        let bad = |e: capnp::Error| LogError::Corrupt {
            offset,
            why: format!("unreadable header: {e}"),
        };
        let msg = super::batch::read_message(bytes).map_err(bad)?;
        let h = msg.get_root::<header::Reader>().map_err(bad)?;
        let text = |t: capnp::Result<capnp::text::Reader>| -> Result<String, LogError> {
            t.map_err(bad)?.to_string().map_err(|e| bad(e.into()))
        };
        let mut argv = Vec::new();
        for a in h.get_argv().map_err(bad)? {
            argv.push(text(a)?);
        }
        let mut options = Vec::new();
        for kv in h.get_options().map_err(bad)? {
            options.push((text(kv.get_key())?, text(kv.get_value())?));
        }
        Ok(HeaderInfo {
            format_version: h.get_format_version(),
            min_reader_version: h.get_min_reader_version(),
            runtime: text(h.get_runtime())?,
            runtime_version: text(h.get_runtime_version())?,
            argv,
            cwd: text(h.get_cwd())?,
            host: text(h.get_host())?,
            pid: h.get_pid(),
            start_time_unix_ns: h.get_start_time_unix_ns(),
            recorder_version: text(h.get_recorder_version())?,
            options,
            program: text(h.get_program())?,
        })
    }
}

/// What the trailer of a cleanly closed log says.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TrailerInfo {
    pub events: u64,
    pub chunks: u64,
    pub end_time_unix_ns: i64,
    pub file_crc32c: u32,
    pub threads: u32,
    /// The program's exit status, when the front end told the recorder before closing.
    pub exit_status: Option<i32>,
    /// What the program wrote into files, per path (schema `FileWritten`), sorted by path.
    pub files: Vec<FileWritten>,
}

/// The bytes a program wrote into one file, over all its writes (schema `FileWritten`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FileWritten {
    pub path: String,
    pub bytes: u64,
    pub crc32c: u32,
}

impl TrailerInfo {
    pub fn encode(&self) -> Vec<u8> {
        let mut msg = capnp::message::Builder::new_default();
        {
            let mut t = msg.init_root::<trailer::Builder>();
            t.set_events(self.events);
            t.set_chunks(self.chunks);
            t.set_end_time_unix_ns(self.end_time_unix_ns);
            t.set_file_crc32c(self.file_crc32c);
            t.set_threads(self.threads);
            if let Some(s) = self.exit_status {
                t.set_exit_known(true);
                t.set_exit_status(s);
            }
            if !self.files.is_empty() {
                let mut list = t.init_files(self.files.len() as u32);
                for (i, f) in self.files.iter().enumerate() {
                    let mut e = list.reborrow().get(i as u32);
                    e.set_path(f.path.as_str());
                    e.set_bytes(f.bytes);
                    e.set_crc32c(f.crc32c);
                }
            }
        }
        capnp::serialize::write_message_to_words(&msg)
    }

    pub fn decode(bytes: &[u8], offset: u64) -> Result<Self, LogError> {
        let bad = |e: capnp::Error| LogError::Corrupt {
            offset,
            why: format!("unreadable trailer: {e}"),
        };
        let msg = super::batch::read_message(bytes).map_err(bad)?;
        let t = msg.get_root::<trailer::Reader>().map_err(bad)?;
        Ok(TrailerInfo {
            events: t.get_events(),
            chunks: t.get_chunks(),
            end_time_unix_ns: t.get_end_time_unix_ns(),
            file_crc32c: t.get_file_crc32c(),
            threads: t.get_threads(),
            exit_status: t.get_exit_known().then(|| t.get_exit_status()),
            files: match t.get_files() {
                Ok(list) => {
                    let mut v = Vec::with_capacity(list.len() as usize);
                    for f in list.iter() {
                        v.push(FileWritten {
                            path: f
                                .get_path()
                                .map_err(bad)?
                                .to_string()
                                .map_err(|e| bad(e.into()))?,
                            bytes: f.get_bytes(),
                            crc32c: f.get_crc32c(),
                        });
                    }
                    v
                }
                Err(e) => return Err(bad(e)),
            },
        })
    }
}

pub fn unix_now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it
    // (or truncates, which we cut at the first NUL anyway).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files a program wrote survive the trailer's encoding; a trailer without any (an
    /// older writer's) reads back with none.
    #[test]
    fn trailer_files_round_trip() {
        let t = TrailerInfo {
            events: 7,
            chunks: 2,
            end_time_unix_ns: 5,
            file_crc32c: 9,
            threads: 3,
            exit_status: Some(2),
            files: vec![
                FileWritten {
                    path: "a/b.txt".into(),
                    bytes: 12,
                    crc32c: 0xdead_beef,
                },
                FileWritten {
                    path: "c".into(),
                    bytes: 0,
                    crc32c: 0,
                },
            ],
        };
        assert_eq!(TrailerInfo::decode(&t.encode(), 0).unwrap(), t);
        let old = TrailerInfo {
            files: Vec::new(),
            ..t.clone()
        };
        assert_eq!(TrailerInfo::decode(&old.encode(), 0).unwrap().files, vec![]);
    }
}
