//! File-level writer: the magic line, frames, the trailer. Used by the recorder's
//! background flusher (and by tests that craft logs); never on a hot path.

use crate::format::frame::{FrameHeader, FrameType, CODEC_NONE, CODEC_ZSTD};
use crate::format::*;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub struct LogWriter {
    file: File,
    crc: u32,
    offset: u64,
    chunks: u64,
    events: u64,
    sync: bool,
    zstd: zstd::bulk::Compressor<'static>,
    buf: Vec<u8>,
}

impl LogWriter {
    /// Creates (truncating) the log with mode 0600 and writes the magic line and header.
    pub fn create(path: &Path, header: &HeaderInfo, sync: bool) -> io::Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        Self::from_file(file, header, sync)
    }

    pub fn from_file(file: File, header: &HeaderInfo, sync: bool) -> io::Result<Self> {
        // Level 1: rr's measurements (and ours on clock streams) show it about as compact as
        // higher levels on this kind of data, at a fraction of the cost.
        let zstd = zstd::bulk::Compressor::new(1)?;
        let mut w = LogWriter {
            file,
            crc: 0,
            offset: 0,
            chunks: 0,
            events: 0,
            sync,
            zstd,
            buf: Vec::new(),
        };
        w.write_raw(MAGIC)?;
        w.write_frame(FrameType::Header, &header.encode(), false)?;
        w.flush_sync()?;
        Ok(w)
    }

    fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn write_frame(&mut self, ty: FrameType, raw: &[u8], compress: bool) -> io::Result<()> {
        if raw.len() > MAX_RAW as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "chunk over the format's size bound",
            ));
        }
        let (codec, stored): (u8, Vec<u8>) = if compress {
            (CODEC_ZSTD, self.zstd.compress(raw)?)
        } else {
            (CODEC_NONE, raw.to_vec())
        };
        if stored.len() > MAX_STORED as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "chunk over the format's size bound",
            ));
        }
        let fh = FrameHeader {
            ty,
            codec,
            stored_len: stored.len() as u32,
            raw_len: raw.len() as u32,
            payload_crc: crc32c::crc32c(&stored),
        };
        // One write per frame, so a killed process leaves whole frames plus at most one
        // partial one, which the reader reports as the cut.
        self.buf.clear();
        self.buf.extend_from_slice(&fh.encode());
        self.buf.extend_from_slice(&stored);
        let buf = std::mem::take(&mut self.buf);
        let r = self.write_raw(&buf);
        self.buf = buf;
        r
    }

    fn flush_sync(&mut self) -> io::Result<()> {
        if self.sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// Writes one chunk.
    pub fn write_batch(&mut self, batch: &BatchBuilder) -> io::Result<()> {
        let raw = batch.encode();
        self.write_frame(FrameType::Chunk, &raw, true)?;
        self.chunks += 1;
        self.events += batch.event_count();
        self.flush_sync()
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn bytes(&self) -> u64 {
        self.offset
    }

    /// Writes the trailer and syncs: the log is complete.
    pub fn finish(mut self, threads: u32) -> io::Result<TrailerInfo> {
        let t = TrailerInfo {
            events: self.events,
            chunks: self.chunks,
            end_time_unix_ns: header::unix_now_ns(),
            file_crc32c: self.crc,
            threads,
        };
        self.write_frame(FrameType::Trailer, &t.encode(), false)?;
        self.file.sync_all()?;
        Ok(t)
    }
}
