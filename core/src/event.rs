//! The event model shared by every front end.

use serde::Serialize;

/// What an intercepted call produced. Kept small: scalar payloads carry no allocation, and
/// bytes read back from a log are slices of their decoded chunk (no copy per event).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Payload {
    None,
    Int {
        value: i64,
    },
    Uint {
        value: u64,
    },
    Float {
        value: f64,
    },
    Bytes {
        #[serde(serialize_with = "ser_bytes")]
        data: bytes::Bytes,
    },
    /// A call's outcome: return value, errno and (for out-parameters and reads) bytes.
    Ret {
        ret: i64,
        errno: i32,
        #[serde(serialize_with = "ser_opt_bytes")]
        data: Option<bytes::Bytes>,
    },
    Record {
        record: Record,
    },
}

/// A structured payload (an HTTP exchange, a stat result): named fields, nestable.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Record {
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Field {
    pub name: String,
    pub value: FieldValue,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FieldValue {
    Int(i64),
    Uint(u64),
    Float(f64),
    Text(String),
    /// Shared, not owned: cloning a record (the recorder's borrowing form) or handing the
    /// recorder slices of one buffer copies no bytes.
    Bytes(#[serde(serialize_with = "ser_bytes")] bytes::Bytes),
    Record(Record),
}

impl Record {
    pub fn get(&self, name: &str) -> Option<&FieldValue> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| &f.value)
    }
}

/// Payload type numbers as stored in the low four bits of `Run.flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PayloadType {
    None = 0,
    Int = 1,
    Uint = 2,
    Float = 3,
    Bytes = 4,
    Ret = 5,
    Record = 6,
}

impl PayloadType {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::None,
            1 => Self::Int,
            2 => Self::Uint,
            3 => Self::Float,
            4 => Self::Bytes,
            5 => Self::Ret,
            6 => Self::Record,
            _ => return None,
        })
    }
}

pub const FLAG_TYPE_MASK: u8 = 0x0f;
pub const FLAG_SITE: u8 = 0x10;
pub const FLAG_DIGEST: u8 = 0x20;
pub const FLAG_DATA: u8 = 0x40;
pub const FLAG_ERRNO: u8 = 0x80;

impl Payload {
    pub fn payload_type(&self) -> PayloadType {
        match self {
            Payload::None => PayloadType::None,
            Payload::Int { .. } => PayloadType::Int,
            Payload::Uint { .. } => PayloadType::Uint,
            Payload::Float { .. } => PayloadType::Float,
            Payload::Bytes { .. } => PayloadType::Bytes,
            Payload::Ret { .. } => PayloadType::Ret,
            Payload::Record { .. } => PayloadType::Record,
        }
    }

    /// A one-line human summary for reports and dumps.
    pub fn summary(&self) -> String {
        match self {
            Payload::None => "-".into(),
            Payload::Int { value } => format!("{value}"),
            Payload::Uint { value } => format!("{value}u"),
            Payload::Float { value } => format!("{value:?}"),
            Payload::Bytes { data } => format!("bytes[{}] {}", data.len(), preview(data)),
            Payload::Ret { ret, errno, data } => {
                let mut s = format!("ret={ret}");
                if *errno != 0 {
                    s += &format!(" errno={errno}");
                }
                if let Some(d) = data {
                    s += &format!(" bytes[{}] {}", d.len(), preview(d));
                }
                s
            }
            Payload::Record { record } => {
                let names: Vec<&str> = record.fields.iter().map(|f| f.name.as_str()).collect();
                format!("record{{{}}}", names.join(","))
            }
        }
    }
}

/// Up to 24 bytes shown as text when printable, else as hex.
pub fn preview(data: &[u8]) -> String {
    let head = &data[..data.len().min(24)];
    let more = if data.len() > head.len() { "…" } else { "" };
    if head
        .iter()
        .all(|b| b.is_ascii_graphic() || *b == b' ' || *b == b'\n' || *b == b'\t')
    {
        format!("{:?}{more}", String::from_utf8_lossy(head))
    } else {
        let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}{more}")
    }
}

/// One event as read back from a log. `kind` and `site` are string-table ids of that log.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub thread: u32,
    pub kind: u32,
    pub site: u32,
    pub digest: Option<u64>,
    pub payload: Payload,
}

fn ser_bytes<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
    match std::str::from_utf8(b) {
        Ok(t) => s.serialize_str(t),
        Err(_) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            s.serialize_str(&format!("0x{hex}"))
        }
    }
}

fn ser_opt_bytes<S: serde::Serializer>(b: &Option<bytes::Bytes>, s: S) -> Result<S::Ok, S::Error> {
    match b {
        Some(b) => ser_bytes(b, s),
        None => s.serialize_none(),
    }
}

/// Digest of a call's inputs (xxh3-64). Front ends hash what identifies the call (a file
/// path and length, a request's method and URL, a call site and function name), never a
/// pointer value, which differs between runs.
pub fn digest(parts: &[&[u8]]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.digest()
}
