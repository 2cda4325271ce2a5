//! Whether a recorded payload fits the C call that asks for it in replay.
//!
//! The core already checked that the call's kind and inputs match the recording. What it
//! cannot know is the C type behind a call site: a `REPLAY_VALUE` of an `int` must not be
//! handed a float or a value out of `int` range, an out-parameter must get exactly
//! `sizeof *out` bytes, a read must not be given more bytes than its buffer holds. A payload
//! that does not fit comes from a different build of the program (or a damaged log): it is
//! reported as a divergence and the call runs live.

use replay_core::Payload;

use crate::{
    REPLAY_HOW_CALL as HOW_CALL, REPLAY_HOW_OUT as HOW_OUT, REPLAY_HOW_READ as HOW_READ,
    REPLAY_VALUE_FLOAT as VALUE_FLOAT, REPLAY_VALUE_SIGNED as VALUE_SIGNED,
    REPLAY_VALUE_UNSIGNED as VALUE_UNSIGNED,
};

/// The value of a `REPLAY_VALUE` event as the 64 bits the C macro converts back: a
/// sign-extended integer, a zero-extended unsigned one, or the bits of a `double`.
pub fn value_bits(p: &Payload, ty: i32, size: usize) -> Result<u64, String> {
    if size == 0 || size > 8 {
        return Err(format!(
            "a value of {size} bytes is not a scalar of at most 8 bytes"
        ));
    }
    let bits = 8 * size as u32;
    match (ty, p) {
        (VALUE_SIGNED, Payload::Int { value }) => {
            let v = *value;
            if bits < 64 {
                let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
                if v < lo || v > hi {
                    return Err(format!(
                        "recorded value {v} does not fit a signed {size}-byte integer"
                    ));
                }
            }
            Ok(v as u64)
        }
        (VALUE_UNSIGNED, Payload::Uint { value }) => {
            let v = *value;
            if bits < 64 && v >> bits != 0 {
                return Err(format!(
                    "recorded value {v} does not fit an unsigned {size}-byte integer"
                ));
            }
            Ok(v)
        }
        (VALUE_FLOAT, Payload::Float { value }) if size == 4 || size == 8 => Ok(value.to_bits()),
        (VALUE_FLOAT, Payload::Float { .. }) => Err(format!(
            "a floating-point value of {size} bytes is not float or double"
        )),
        (VALUE_SIGNED | VALUE_UNSIGNED | VALUE_FLOAT, other) => Err(format!(
            "recorded {} does not fit the {} of {size} bytes the program asks for",
            describe(other),
            match ty {
                VALUE_SIGNED => "signed integer",
                VALUE_UNSIGNED => "unsigned integer",
                _ => "floating-point value",
            }
        )),
        _ => Err(format!(
            "unknown value type {ty} (header and library of different versions?)"
        )),
    }
}

/// What a replayed call gives back: return value, errno and the bytes to copy (if any).
#[derive(Debug, PartialEq)]
pub struct RetFit<'a> {
    pub ret: i64,
    pub errno: i32,
    pub data: Option<&'a [u8]>,
}

/// Checks a `Ret` payload against the kind of call (`how`) and the room at its pointer
/// (`cap`; `usize::MAX` when the macro cannot know the buffer's size).
pub fn ret_fit(p: &Payload, how: i32, cap: usize) -> Result<RetFit<'_>, String> {
    let Payload::Ret { ret, errno, data } = p else {
        return Err(format!(
            "recorded {} where a call's result was expected",
            describe(p)
        ));
    };
    let (ret, errno) = (*ret, *errno);
    let data = data.as_deref();
    match how {
        HOW_CALL => Ok(RetFit {
            ret,
            errno,
            data: None,
        }),
        HOW_OUT => match data {
            Some(d) if d.len() == cap => Ok(RetFit {
                ret,
                errno,
                data: Some(d),
            }),
            Some(d) => Err(format!(
                "recorded {} out-parameter bytes, the program's out-parameter has {cap}",
                d.len()
            )),
            None => Err("the recording has no out-parameter bytes for this call".into()),
        },
        HOW_READ => {
            if ret <= 0 {
                return Ok(RetFit {
                    ret,
                    errno,
                    data: None,
                });
            }
            match data {
                Some(d) if d.len() as u64 != ret as u64 => Err(format!(
                    "the recording returned {ret} but holds {} bytes",
                    d.len()
                )),
                Some(d) if d.len() > cap => Err(format!(
                    "recorded {} bytes, the program's buffer holds {cap}",
                    d.len()
                )),
                Some(d) => Ok(RetFit {
                    ret,
                    errno,
                    data: Some(d),
                }),
                None => Err(format!("the recording returned {ret} but holds no bytes")),
            }
        }
        _ => Err(format!(
            "unknown call type {how} (header and library of different versions?)"
        )),
    }
}

fn describe(p: &Payload) -> String {
    match p {
        Payload::None => "no value".into(),
        Payload::Int { value } => format!("signed integer {value}"),
        Payload::Uint { value } => format!("unsigned integer {value}"),
        Payload::Float { value } => format!("float {value:?}"),
        Payload::Bytes { data } => format!("{} bytes", data.len()),
        Payload::Ret { ret, .. } => format!("a call result (ret={ret})"),
        Payload::Record { .. } => "a structured record".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_values_are_range_checked() {
        let p = |v| Payload::Int { value: v };
        assert_eq!(value_bits(&p(-5), VALUE_SIGNED, 4), Ok((-5i64) as u64));
        assert_eq!(value_bits(&p(127), VALUE_SIGNED, 1), Ok(127));
        assert!(value_bits(&p(128), VALUE_SIGNED, 1)
            .unwrap_err()
            .contains("signed 1-byte"));
        assert!(value_bits(&p(-129), VALUE_SIGNED, 1).is_err());
        assert_eq!(
            value_bits(&p(i64::MIN), VALUE_SIGNED, 8),
            Ok(i64::MIN as u64)
        );
    }

    #[test]
    fn unsigned_values_are_range_checked() {
        let p = |v| Payload::Uint { value: v };
        assert_eq!(value_bits(&p(65535), VALUE_UNSIGNED, 2), Ok(65535));
        assert!(value_bits(&p(65536), VALUE_UNSIGNED, 2).is_err());
        assert_eq!(value_bits(&p(u64::MAX), VALUE_UNSIGNED, 8), Ok(u64::MAX));
    }

    #[test]
    fn wrong_payload_types_do_not_fit() {
        let e = value_bits(&Payload::Float { value: 1.5 }, VALUE_SIGNED, 4).unwrap_err();
        assert_eq!(
            e,
            "recorded float 1.5 does not fit the signed integer of 4 bytes the program asks for"
        );
        assert!(value_bits(&Payload::Int { value: 1 }, VALUE_UNSIGNED, 4).is_err());
        assert!(value_bits(&Payload::Float { value: 1.0 }, VALUE_FLOAT, 2).is_err());
        assert_eq!(
            value_bits(&Payload::Float { value: 2.5 }, VALUE_FLOAT, 8),
            Ok(2.5f64.to_bits())
        );
        assert!(value_bits(&Payload::Int { value: 1 }, 9, 4).is_err());
        assert!(value_bits(&Payload::Int { value: 1 }, VALUE_SIGNED, 16).is_err());
    }

    #[test]
    fn out_parameters_need_exact_size() {
        let p = Payload::Ret {
            ret: 0,
            errno: 0,
            data: Some(vec![1; 16].into()),
        };
        assert_eq!(ret_fit(&p, HOW_OUT, 16).unwrap().data, Some(&[1u8; 16][..]));
        assert!(ret_fit(&p, HOW_OUT, 8).is_err());
        let none = Payload::Ret {
            ret: 0,
            errno: 0,
            data: None,
        };
        assert!(ret_fit(&none, HOW_OUT, 16).is_err());
    }

    #[test]
    fn reads_need_ret_bytes_within_the_buffer() {
        let p = Payload::Ret {
            ret: 3,
            errno: 0,
            data: Some(b"abc".to_vec().into()),
        };
        assert_eq!(
            ret_fit(&p, HOW_READ, 10).unwrap(),
            RetFit {
                ret: 3,
                errno: 0,
                data: Some(b"abc")
            }
        );
        assert!(ret_fit(&p, HOW_READ, 2).is_err());
        assert!(ret_fit(&p, HOW_READ, usize::MAX).is_ok());
        let lie = Payload::Ret {
            ret: 5,
            errno: 0,
            data: Some(b"abc".to_vec().into()),
        };
        assert!(ret_fit(&lie, HOW_READ, 10).is_err());
        let failed = Payload::Ret {
            ret: -1,
            errno: 11,
            data: None,
        };
        assert_eq!(
            ret_fit(&failed, HOW_READ, 10).unwrap(),
            RetFit {
                ret: -1,
                errno: 11,
                data: None
            }
        );
        assert!(ret_fit(&Payload::Int { value: 3 }, HOW_CALL, 0).is_err());
    }
}
