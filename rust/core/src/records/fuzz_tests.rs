//! Fuzz-style robustness: random and mutated bytes must produce errors, never panics,
//! through every entry point that reads untrusted batches.

use crate::records::batch::{write_crc, BATCH_HEADER_LEN};
use crate::records::compression::decompress;
use crate::records::test_util::{sample_records, XorShift};
use crate::records::{
    check_batches, decode_records, encode_batch, validate_batch, validate_batches, RecordRules,
};
use crate::records::{BatchHeader, Compression};

/// Feed `buf` to every reader; returns whether validation accepted it.
fn exercise(buf: &[u8]) -> bool {
    let valid = validate_batch(buf).is_ok();
    if let Ok(infos) = validate_batches(buf, 1 << 20) {
        // The produce path's record walk, with a small cap so bombs end quickly.
        let rules = RecordRules {
            require_keys: true,
            max_decompressed_bytes: 1 << 16,
            ..RecordRules::default()
        };
        let _ = check_batches(buf, &infos, &rules);
    }
    let _ = decode_records(buf);
    if let Ok(header) = BatchHeader::parse(buf) {
        let _ = header.compression();
        let _ = header.last_offset();
    }
    valid
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = XorShift::new(0x5eed);
    for _ in 0..20_000 {
        let len = rng.below(200);
        let mut buf = rng.bytes(len);
        // Plant a plausible header often enough that the deeper paths run too.
        if buf.len() >= BATCH_HEADER_LEN && rng.below(2) == 0 {
            buf[16] = 2;
            let batch_length = (buf.len() - 12) as i32;
            buf[8..12].copy_from_slice(&batch_length.to_be_bytes());
            buf[21] = 0;
            buf[22] &= 0x07;
            write_crc(&mut buf);
        }
        exercise(&buf);
    }
}

#[test]
fn mutated_batches_never_panic() {
    let mut rng = XorShift::new(42);
    let originals: Vec<Vec<u8>> = Compression::ALL
        .into_iter()
        .map(|codec| encode_batch(&sample_records(6), codec, 0).unwrap())
        .collect();
    let mut accepted_with_fixed_crc = 0;
    for round in 0..6_000 {
        let mut buf = originals[round % originals.len()].clone();
        mutate(&mut rng, &mut buf);
        // Half the time repair the CRC so mutations reach the record decoder.
        let fix_crc = rng.below(2) == 0 && buf.len() >= BATCH_HEADER_LEN;
        if fix_crc {
            write_crc(&mut buf);
        }
        if exercise(&buf) && fix_crc {
            accepted_with_fixed_crc += 1;
        }
    }
    // Sanity: the harness does reach past validation.
    assert!(accepted_with_fixed_crc > 0);
}

/// One to four random edits: flip a bit, overwrite a byte, truncate or insert.
fn mutate(rng: &mut XorShift, buf: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        if buf.is_empty() {
            return;
        }
        let at = rng.below(buf.len());
        match rng.below(4) {
            0 => buf[at] ^= 1 << rng.below(8),
            1 => buf[at] = rng.next_u64() as u8,
            2 => buf.truncate(at),
            _ => buf.insert(at, rng.next_u64() as u8),
        }
    }
}

#[test]
fn random_compressed_input_never_panics() {
    let mut rng = XorShift::new(7);
    let originals: Vec<(Compression, Vec<u8>)> = Compression::ALL
        .into_iter()
        .map(|codec| {
            let plain = b"the quick brown fox jumps over the lazy dog ".repeat(50);
            (
                codec,
                crate::records::compression::compress(codec, &plain).unwrap(),
            )
        })
        .collect();
    for round in 0..4_000 {
        let (codec, original) = &originals[round % originals.len()];
        let mut buf = if rng.below(4) == 0 {
            let len = rng.below(100);
            rng.bytes(len)
        } else {
            original.clone()
        };
        mutate(&mut rng, &mut buf);
        if let Ok(out) = decompress(*codec, &buf, 4096) {
            assert!(out.len() <= 4096);
        }
    }
}
