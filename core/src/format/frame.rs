//! Frame headers: see the layout in `format/mod.rs`.

use crate::error::LogError;

pub const FRAME_HEADER_LEN: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameType {
    Header,
    Chunk,
    Trailer,
}

impl FrameType {
    fn byte(self) -> u8 {
        match self {
            FrameType::Header => b'H',
            FrameType::Chunk => b'C',
            FrameType::Trailer => b'T',
        }
    }
}

pub const CODEC_NONE: u8 = 0;
pub const CODEC_ZSTD: u8 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub ty: FrameType,
    pub codec: u8,
    pub stored_len: u32,
    pub raw_len: u32,
    pub payload_crc: u32,
}

impl FrameHeader {
    pub fn encode(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut h = [0u8; FRAME_HEADER_LEN];
        h[0..3].copy_from_slice(b"RPL");
        h[3] = self.ty.byte();
        h[4] = self.codec;
        h[8..12].copy_from_slice(&self.stored_len.to_le_bytes());
        h[12..16].copy_from_slice(&self.raw_len.to_le_bytes());
        h[16..20].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32c::crc32c(&h[0..20]);
        h[20..24].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Parses and checks a frame header found at `offset` of the file.
    pub fn decode(h: &[u8; FRAME_HEADER_LEN], offset: u64) -> Result<Self, LogError> {
        let bad = |why: String| LogError::Corrupt { offset, why };
        if &h[0..3] != b"RPL" {
            return Err(bad("no frame marker (expected \"RPL\")".into()));
        }
        let stored_crc = u32::from_le_bytes(h[20..24].try_into().unwrap());
        if crc32c::crc32c(&h[0..20]) != stored_crc {
            return Err(bad("frame header checksum mismatch".into()));
        }
        let ty = match h[3] {
            b'H' => FrameType::Header,
            b'C' => FrameType::Chunk,
            b'T' => FrameType::Trailer,
            t => return Err(bad(format!("unknown frame type 0x{t:02x}"))),
        };
        let codec = h[4];
        if codec > CODEC_ZSTD {
            return Err(bad(format!("unknown codec {codec}")));
        }
        if h[5..8] != [0, 0, 0] {
            return Err(bad("reserved frame header bytes are not zero".into()));
        }
        let stored_len = u32::from_le_bytes(h[8..12].try_into().unwrap());
        let raw_len = u32::from_le_bytes(h[12..16].try_into().unwrap());
        if stored_len > super::MAX_STORED {
            return Err(bad(format!(
                "frame of {stored_len} bytes exceeds the {} byte bound",
                super::MAX_STORED
            )));
        }
        if raw_len > super::MAX_RAW {
            return Err(bad(format!(
                "frame expands to {raw_len} bytes, over the {} byte bound",
                super::MAX_RAW
            )));
        }
        if codec == CODEC_NONE && raw_len != stored_len {
            return Err(bad("uncompressed frame with differing lengths".into()));
        }
        Ok(FrameHeader {
            ty,
            codec,
            stored_len,
            raw_len,
            payload_crc: u32::from_le_bytes(h[16..20].try_into().unwrap()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_every_bit_flip_is_caught() {
        let fh = FrameHeader {
            ty: FrameType::Chunk,
            codec: CODEC_ZSTD,
            stored_len: 1234,
            raw_len: 5678,
            payload_crc: 0xdead_beef,
        };
        let enc = fh.encode();
        assert_eq!(FrameHeader::decode(&enc, 0).unwrap(), fh);
        for byte in 0..FRAME_HEADER_LEN {
            for bit in 0..8 {
                let mut m = enc;
                m[byte] ^= 1 << bit;
                assert!(
                    FrameHeader::decode(&m, 7).is_err(),
                    "flip of byte {byte} bit {bit} accepted"
                );
            }
        }
    }
}
