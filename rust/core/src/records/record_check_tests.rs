use std::io::Write;

use super::*;
use crate::records::compression::compress;
use crate::records::test_util::{
    largest_allocation_during, raw_batch, sample_records, RawBatch, XorShift,
};
use crate::records::varint::{write_varint, write_varlong};
use crate::records::{encode_batch, validate_batches, Header, RecordInput};

const MIB: usize = 1 << 20;

/// Validate `batch` as a producer's, with `rules`.
fn check(batch: &[u8], rules: &RecordRules) -> Result<()> {
    let infos = validate_batches(batch, usize::MAX)?;
    check_batches(batch, &infos, rules)
}

fn plain(batch: &[u8]) -> Result<()> {
    check(batch, &RecordRules::default())
}

fn assert_invalid(result: Result<()>, what: &str) {
    assert!(
        matches!(&result, Err(Error::InvalidRecord(_))),
        "{what}: {result:?}"
    );
    assert_eq!(result.unwrap_err().kafka_code(), 87, "{what}");
}

fn assert_corrupt(result: Result<()>, what: &str) {
    assert!(
        matches!(&result, Err(Error::CorruptRecord(_))),
        "{what}: {result:?}"
    );
}

/// A batch of `count` records whose records section is `section` verbatim, compressed with
/// `codec` flagged in the attributes.
fn batch_of(section: Vec<u8>, count: i32, codec: Compression) -> Vec<u8> {
    raw_batch(&RawBatch {
        attributes: codec.attribute_bits(),
        count,
        last_offset_delta: count - 1,
        ..RawBatch::new(section)
    })
}

/// One record's bytes, length prefix included, with the body fields as given.
fn record(ts_delta: i64, offset_delta: i32, key: i32, value: &[u8], tail: &[u8]) -> Vec<u8> {
    let mut body = vec![0u8];
    write_varlong(&mut body, ts_delta);
    write_varint(&mut body, offset_delta);
    write_varint(&mut body, key);
    if key > 0 {
        body.extend(std::iter::repeat_n(b'k', key as usize));
    }
    write_varint(&mut body, value.len() as i32);
    body.extend_from_slice(value);
    body.extend_from_slice(tail);
    let mut out = Vec::new();
    write_varint(&mut out, body.len() as i32);
    out.extend(body);
    out
}

fn no_headers() -> Vec<u8> {
    vec![0]
}

#[test]
fn every_codec_of_real_batches_passes() {
    let mut records = sample_records(60);
    records.push(RecordInput {
        timestamp: 5,
        key: Some(b"k".to_vec()),
        value: Some(vec![7; 70_000]),
        headers: vec![Header {
            key: b"".to_vec(),
            value: Some(Vec::new()),
        }],
    });
    for codec in Compression::ALL {
        let batch = encode_batch(&records, codec, 0).unwrap();
        plain(&batch).unwrap_or_else(|e| panic!("{codec:?}: {e}"));
    }
}

#[test]
fn zeroed_and_ff_records_are_invalid() {
    for fill in [0x00, 0xff, 0x7f] {
        for count in [1, 3] {
            let batch = batch_of(vec![fill; 64], count, Compression::None);
            assert_invalid(plain(&batch), &format!("{fill:#x} x{count}"));
        }
    }
}

#[test]
fn codec_flag_on_data_in_no_codec_is_corrupt() {
    let records: Vec<u8> = (0..3)
        .flat_map(|i| record(0, i, -1, b"value", &no_headers()))
        .collect();
    for codec in Compression::ALL.into_iter().skip(1) {
        for section in [records.clone(), vec![0; 64], vec![0xff; 64]] {
            let result = plain(&batch_of(section, 3, codec));
            if codec == Compression::Snappy {
                // A raw snappy block has no magic: some garbage decodes, into garbage
                // records. Refused either way.
                assert!(
                    matches!(
                        result,
                        Err(Error::CorruptRecord(_) | Error::InvalidRecord(_))
                    ),
                    "{result:?}"
                );
            } else {
                assert_corrupt(result, codec.name());
            }
        }
    }
}

#[test]
fn garbage_inside_valid_compression_is_invalid() {
    for codec in Compression::ALL.into_iter().skip(1) {
        for fill in [0x00, 0xff] {
            let packed = compress(codec, &vec![fill; 4096]).unwrap();
            let batch = batch_of(packed, 2, codec);
            assert_invalid(plain(&batch), &format!("{codec:?} {fill:#x}"));
        }
    }
}

#[test]
fn record_structure_rules() {
    let ok = record(0, 0, 1, b"v", &no_headers());
    assert!(plain(&batch_of(ok.clone(), 1, Compression::None)).is_ok());
    let two = [ok.clone(), record(0, 1, 1, b"v", &no_headers())].concat();
    let cases: Vec<(&str, Vec<u8>, i32)> = vec![
        (
            "count above the records",
            [
                record(0, 0, 1, b"long enough value", &no_headers()),
                record(0, 1, 1, b"long enough value", &no_headers()),
            ]
            .concat(),
            3,
        ),
        (
            "bytes after the last record",
            [ok.clone(), vec![0]].concat(),
            1,
        ),
        (
            "second record claims offset 0",
            [ok.clone(), ok.clone()].concat(),
            2,
        ),
        (
            "first record at delta 1",
            record(0, 1, 1, b"v", &no_headers()),
            1,
        ),
        ("key length -2", record(0, 0, -2, b"v", &no_headers()), 1),
        ("negative header count", record(0, 0, 1, b"v", &[1]), 1),
        (
            "header count past the record",
            record(0, 0, 1, b"v", &[0x80, 0x80, 0x04]),
            1,
        ),
        ("negative header key", record(0, 0, 1, b"v", &[2, 1, 1]), 1),
        ("header value -3", record(0, 0, 1, b"v", &[2, 0, 5]), 1),
        (
            "trailing byte inside the record",
            record(0, 0, 1, b"v", &[0, 9]),
            1,
        ),
        (
            "overlong varint",
            record(0, 0, 1, b"v", &[0xff, 0xff, 0xff, 0xff, 0xff, 1]),
            1,
        ),
        (
            "timestamp delta overflow",
            record(i64::MAX, 0, 1, b"v", &no_headers()),
            1,
        ),
    ];
    for (what, section, count) in cases {
        let mut batch = batch_of(section, count, Compression::None);
        if what == "timestamp delta overflow" {
            // baseTimestamp 1 + i64::MAX overflows.
            batch = raw_batch(&RawBatch {
                base_timestamp: 1,
                ..RawBatch::new(record(i64::MAX, 0, 1, b"v", &no_headers()))
            });
        }
        assert_invalid(plain(&batch), what);
    }
    // A record whose length runs past the batch.
    let mut long = ok.clone();
    long[0] = 0x7e;
    assert_invalid(plain(&batch_of(long, 1, Compression::None)), "long record");
    assert!(plain(&batch_of(two, 2, Compression::None)).is_ok());
}

#[test]
fn flipped_bytes_never_pass_silently_or_panic() {
    // Any single corrupted record byte (CRC recomputed, as a buggy client would) is either
    // a record the walk accepts as well-formed or an error; never a panic.
    let batch = encode_batch(&sample_records(20), Compression::None, 0).unwrap();
    let mut rng = XorShift::new(17);
    for _ in 0..2000 {
        let at = BATCH_HEADER_LEN + rng.below(batch.len() - BATCH_HEADER_LEN);
        let mut section = batch[BATCH_HEADER_LEN..].to_vec();
        section[at - BATCH_HEADER_LEN] = rng.next_u64() as u8;
        let bad = batch_of(section, 20, Compression::None);
        if let Err(e) = plain(&bad) {
            assert!(matches!(e, Error::InvalidRecord(_)), "{e}");
        }
    }
}

#[test]
fn keyless_records_are_named_on_compacted_topics() {
    let rules = RecordRules {
        require_keys: true,
        ..RecordRules::default()
    };
    let records = [
        RecordInput {
            key: Some(b"a".to_vec()),
            ..RecordInput::default()
        },
        RecordInput::default(),
        RecordInput {
            key: Some(Vec::new()),
            ..RecordInput::default()
        },
        RecordInput::default(),
    ];
    for codec in Compression::ALL {
        let batch = encode_batch(&records, codec, 0).unwrap();
        let err = check(&batch, &rules).unwrap_err();
        assert!(
            matches!(&err, Error::KeylessRecords { records } if records == &[1, 3]),
            "{codec:?}: {err}"
        );
        assert!(plain(&batch).is_ok());
    }
}

/// The bytes of a record (offset delta 0, null key, no headers) up to its value, which
/// is `value_len` bytes long.
fn bomb_prefix(value_len: usize) -> Vec<u8> {
    let mut body = vec![0u8, 0, 0, 1];
    write_varint(&mut body, value_len as i32);
    let mut out = Vec::new();
    write_varint(&mut out, (body.len() + value_len + 1) as i32);
    out.extend(body);
    out
}

/// The whole record: prefix, `value_len` zeros, no headers.
fn bomb_record(value_len: usize) -> Vec<u8> {
    let mut out = bomb_prefix(value_len);
    out.resize(out.len() + value_len, 0);
    out.push(0);
    out
}

#[test]
fn bombs_stop_at_the_cap_without_holding_the_data() {
    let cap = 4 * MIB;
    let rules = RecordRules {
        max_decompressed_bytes: cap,
        ..RecordRules::default()
    };
    let within = bomb_record(cap - 64);
    let beyond = bomb_record(5 * cap);
    for codec in Compression::ALL.into_iter().skip(1) {
        let ok = batch_of(compress(codec, &within).unwrap(), 1, codec);
        check(&ok, &rules).unwrap_or_else(|e| panic!("{codec:?} within the cap: {e}"));
        let packed = compress(codec, &beyond).unwrap();
        assert!(packed.len() < beyond.len() / 20, "{codec:?} compresses");
        let bomb = batch_of(packed, 1, codec);
        let (result, largest) = largest_allocation_during(|| check(&bomb, &rules));
        let message = result.as_ref().unwrap_err().to_string();
        assert_invalid(result, codec.name());
        assert!(message.contains("byte limit"), "{codec:?}: {message}");
        // Streaming: nothing near the 20 MiB of records is ever held.
        assert!(largest < 3 * MIB, "{codec:?} allocated {largest} bytes");
    }
}

/// zstd frame of RLE blocks: `prefix` raw, then `zeros` bytes of 0 as 128 KiB RLE blocks,
/// four bytes each. What an attacker hand-writes: 4 GiB in 131 KB.
fn zstd_rle_frame(prefix: &[u8], zeros: u64) -> Vec<u8> {
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd];
    // No content size, not single-segment, no checksum; window 2^17.
    out.push(0x00);
    out.push((17 - 10) << 3);
    let block = |out: &mut Vec<u8>, kind: u32, size: u32, last: bool| {
        let header = (size << 3) | (kind << 1) | u32::from(last);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
    };
    if !prefix.is_empty() {
        block(&mut out, 0, prefix.len() as u32, false);
        out.extend_from_slice(prefix);
    }
    let full = 128 << 10;
    let blocks = zeros / full;
    for i in 0..blocks {
        block(&mut out, 1, full as u32, i + 1 == blocks);
        out.push(0);
    }
    out
}

#[test]
fn zstd_4_gib_bomb_of_131_kb() {
    let zeros = 4u64 << 30;
    // The bomb: nothing but zeros, which is no record at all. Refused at once.
    let frame = zstd_rle_frame(&[], zeros);
    assert!(frame.len() < 140_000, "{}", frame.len());
    let batch = batch_of(frame, 1000, Compression::Zstd);
    let (result, largest) = largest_allocation_during(|| plain(&batch));
    assert_invalid(result, "zeros");
    assert!(largest < 3 * MIB, "allocated {largest}");

    // The same behind a well-formed record start claiming a 2 GiB value: inflated up to the
    // default 256 MiB cap, then refused, still in a fixed window.
    let prefix = bomb_prefix(i32::MAX as usize - 64);
    let batch = batch_of(zstd_rle_frame(&prefix, zeros), 1, Compression::Zstd);
    let (result, largest) = largest_allocation_during(|| plain(&batch));
    let message = result.as_ref().unwrap_err().to_string();
    assert_invalid(result, "2 GiB value");
    assert!(message.contains("268435456 byte limit"), "{message}");
    assert!(largest < 3 * MIB, "allocated {largest}");
}

#[test]
fn gzip_1_gib_bomb_of_1_mb() {
    // Kafka reads concatenated gzip members: one member of 1 MiB of zeros (~1 KB),
    // repeated 1024 times, after a member holding a record start claiming 1 GiB.
    let member = |data: &[u8]| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    };
    let mut start = bomb_prefix(1 << 30);
    start.resize(MIB, 0);
    let mut packed = member(&start);
    let zeros = member(&vec![0u8; MIB]);
    for _ in 0..1023 {
        packed.extend_from_slice(&zeros);
    }
    assert!(packed.len() < 1_200_000, "{}", packed.len());
    let rules = RecordRules {
        max_decompressed_bytes: 16 * MIB,
        ..RecordRules::default()
    };
    let batch = batch_of(packed, 1, Compression::Gzip);
    let (result, largest) = largest_allocation_during(|| check(&batch, &rules));
    assert_invalid(result, "gzip bomb");
    assert!(largest < 3 * MIB, "allocated {largest}");
}

#[test]
fn zstd_window_follows_the_cap() {
    use crate::records::compression::decoder;
    // A frame asking for a 128 MiB window is refused under a 16 MiB cap.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, (27 - 10) << 3];
    frame.extend_from_slice(&[0x03, 0x00, 0x00, 0x00]);
    let mut out = Vec::new();
    let small = decoder(Compression::Zstd, &frame, 16 * MIB)
        .unwrap()
        .read_to_end(&mut out);
    assert!(small.is_err());
    let large = decoder(Compression::Zstd, &frame, 256 * MIB)
        .unwrap()
        .read_to_end(&mut out);
    assert!(large.is_ok(), "{large:?}");
}

#[test]
fn create_times_outside_the_bounds_are_named_per_record() {
    let now = 1_700_000_000_000;
    let rules = RecordRules {
        timestamp_min: now - 1000,
        timestamp_max: now + 1000,
        ..RecordRules::default()
    };
    let at = |ts: i64| RecordInput {
        timestamp: ts,
        key: Some(b"k".to_vec()),
        value: Some(b"v".to_vec()),
        headers: vec![],
    };
    let ok = encode_batch(
        &[at(now), at(now + 1000), at(now - 1000)],
        Compression::None,
        0,
    )
    .unwrap();
    let header = BatchHeader::parse(&ok).unwrap();
    validate_records(&ok, &header, &rules).unwrap();
    let bad = encode_batch(
        &[at(now), at(now + 1001), at(now - 5000)],
        Compression::None,
        0,
    )
    .unwrap();
    let header = BatchHeader::parse(&bad).unwrap();
    match validate_records(&bad, &header, &rules) {
        Err(Error::TimestampsOutOfRange { records }) => {
            let indexes: Vec<i32> = records.iter().map(|(i, _)| *i).collect();
            assert_eq!(indexes, vec![1, 2]);
            assert!(records[0].1.contains("is out of range"), "{records:?}");
        }
        other => panic!("{other:?}"),
    }
    // Without bounds (the default) anything goes.
    validate_records(&bad, &header, &RecordRules::default()).unwrap();
}
