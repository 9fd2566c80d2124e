//! Zigzag varints as Kafka records use them.
//!
//! Reads are strict: a varint longer than its type allows, or whose last byte carries bits
//! beyond the type's width, is `Error::CorruptRecord` rather than silently truncated, so a
//! hostile length can never wrap into a plausible small value.

use crate::error::{Error, Result};

/// Read a zigzag varint (at most 5 bytes) at `*pos`, advancing `*pos` past it.
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32> {
    let raw = read_unsigned(buf, pos, 32)?;
    // read_unsigned guarantees the value fits in 32 bits.
    Ok(unzigzag64(raw) as i32)
}

/// Read a zigzag varlong (at most 10 bytes) at `*pos`, advancing `*pos` past it.
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64> {
    Ok(unzigzag64(read_unsigned(buf, pos, 64)?))
}

/// Append `value` as a zigzag varint.
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, u64::from(zigzag32(value)));
}

/// Append `value` as a zigzag varlong.
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, zigzag64(value));
}

/// Bytes `write_varint` would append for `value`.
#[must_use]
pub fn varint_len(value: i32) -> usize {
    unsigned_len(u64::from(zigzag32(value)))
}

/// Bytes `write_varlong` would append for `value`.
#[must_use]
pub fn varlong_len(value: i64) -> usize {
    unsigned_len(zigzag64(value))
}

fn zigzag32(value: i32) -> u32 {
    ((value << 1) ^ (value >> 31)) as u32
}

fn zigzag64(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag64(raw: u64) -> i64 {
    ((raw >> 1) as i64) ^ -((raw & 1) as i64)
}

/// Base-128 little-endian read of an unsigned value at most `bits` wide.
fn read_unsigned(buf: &[u8], pos: &mut usize, bits: u32) -> Result<u64> {
    let max_len = bits.div_ceil(7) as usize;
    let mut value = 0u64;
    for i in 0..max_len {
        let Some(&byte) = buf.get(*pos + i) else {
            return Err(Error::corrupt("truncated varint"));
        };
        let shift = 7 * i as u32;
        let payload = u64::from(byte & 0x7f);
        if shift + 7 > bits && payload >> (bits - shift) != 0 {
            return Err(Error::corrupt(format!("varint overflows {bits} bits")));
        }
        value |= payload << shift;
        if byte & 0x80 == 0 {
            *pos += i + 1;
            return Ok(value);
        }
    }
    Err(Error::corrupt(format!(
        "varint longer than {max_len} bytes"
    )))
}

fn write_unsigned(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn unsigned_len(value: u64) -> usize {
    let bits = 64 - value.leading_zeros().min(63);
    bits.div_ceil(7) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_bytes(value: i32) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, value);
        out
    }

    #[test]
    fn varint_known_encodings() {
        // Values from Kafka's ByteUtilsTest.
        assert_eq!(varint_bytes(0), [0x00]);
        assert_eq!(varint_bytes(-1), [0x01]);
        assert_eq!(varint_bytes(1), [0x02]);
        assert_eq!(varint_bytes(63), [0x7e]);
        assert_eq!(varint_bytes(-64), [0x7f]);
        assert_eq!(varint_bytes(64), [0x80, 0x01]);
        assert_eq!(varint_bytes(i32::MAX), [0xfe, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(varint_bytes(i32::MIN), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn varint_roundtrip_and_len() {
        let samples = [
            0,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            8191,
            8192,
            1 << 20,
            i32::MAX,
            i32::MIN,
        ];
        for v in samples {
            let bytes = varint_bytes(v);
            assert_eq!(bytes.len(), varint_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(read_varint(&bytes, &mut pos).unwrap(), v);
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn varlong_roundtrip_and_len() {
        let samples = [
            0,
            1,
            -1,
            1 << 35,
            -(1 << 40),
            i64::MAX,
            i64::MIN,
            1_700_000_000_000,
        ];
        for v in samples {
            let mut bytes = Vec::new();
            write_varlong(&mut bytes, v);
            assert_eq!(bytes.len(), varlong_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(read_varlong(&bytes, &mut pos).unwrap(), v);
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn reads_at_offset() {
        let mut buf = vec![0xaa];
        write_varint(&mut buf, -300);
        write_varlong(&mut buf, 1 << 50);
        let mut pos = 1;
        assert_eq!(read_varint(&buf, &mut pos).unwrap(), -300);
        assert_eq!(read_varlong(&buf, &mut pos).unwrap(), 1 << 50);
        assert_eq!(pos, buf.len());
    }

    #[test]
    fn truncated_is_error() {
        let bytes = varint_bytes(i32::MAX);
        for cut in 0..bytes.len() {
            let mut pos = 0;
            assert!(read_varint(&bytes[..cut], &mut pos).is_err());
            assert_eq!(pos, 0, "position must not move on error");
        }
    }

    #[test]
    fn overflow_is_error() {
        // Unsigned 2^32 (zigzag of 2^31): does not fit an i32.
        let mut pos = 0;
        assert!(read_varint(&[0x80, 0x80, 0x80, 0x80, 0x10], &mut pos).is_err());
        // Six bytes for a varint.
        assert!(read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], &mut pos).is_err());
        // An eleventh byte, or a tenth carrying more than one bit, for a varlong.
        let mut long = vec![0xff; 9];
        long.push(0x02);
        assert!(read_varlong(&long, &mut pos).is_err());
        long[9] = 0x01;
        assert_eq!(read_varlong(&long, &mut pos).unwrap(), i64::MIN);
    }
}
