use super::*;
use crate::records::batch::LOG_OVERHEAD;
use crate::records::builder::BatchProducer;
use crate::records::compression::compress;
use crate::records::encode::{encode_batch, encode_producer_batch, encode_records};
use crate::records::test_util::{largest_allocation_during, raw_batch, sample_records, RawBatch};
use crate::records::validate_batch;
use crate::records::varint::write_varint;

/// sarama's record_test.go record (real bytes from an independent encoder): one
/// record, timestamp delta 5, key 1..4, value 5..7, one header.
const SARAMA_RECORD: [u8; 21] = [
    40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12,
];
/// sarama's FirstTimestamp bytes 0,0,1,88,141,205,89,56.
const SARAMA_TIMESTAMP: i64 = 0x0158_8dcd_5938;

fn sarama_expected() -> Record {
    Record {
        offset: 0,
        timestamp: SARAMA_TIMESTAMP + 5,
        key: Some(vec![1, 2, 3, 4]),
        value: Some(vec![5, 6, 7]),
        headers: vec![Header {
            key: vec![8, 9, 10],
            value: Some(vec![11, 12]),
        }],
    }
}

/// A sarama test batch: its header with the given CRC and attributes, then `section`.
fn sarama_batch(crc: [u8; 4], attributes: u8, section: &[u8]) -> Vec<u8> {
    let mut batch = vec![0u8; BATCH_HEADER_LEN];
    let batch_length = (BATCH_HEADER_LEN - LOG_OVERHEAD + section.len()) as i32;
    batch[8..12].copy_from_slice(&batch_length.to_be_bytes());
    batch[16] = 2;
    batch[17..21].copy_from_slice(&crc);
    batch[22] = attributes;
    batch[27..35].copy_from_slice(&SARAMA_TIMESTAMP.to_be_bytes());
    batch[60] = 1;
    batch.extend_from_slice(section);
    batch
}

fn expected(inputs: &[RecordInput], base_offset: i64) -> Vec<Record> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, r)| Record {
            offset: base_offset + i as i64,
            timestamp: r.timestamp,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: r.headers.clone(),
        })
        .collect()
}

#[test]
fn decodes_sarama_vectors_for_every_codec() {
    let gzip = [
        31, 139, 8, 0, 0, 9, 110, 136, 0, 255, 0, 21, 0, 234, 255, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6,
        5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12, 3, 0, 173, 201, 88, 103, 21, 0, 0, 0,
    ];
    let snappy = [
        21, 80, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12,
    ];
    let lz4 = [
        4, 34, 77, 24, 100, 112, 185, 21, 0, 0, 128, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6,
        8, 9, 10, 4, 11, 12, 0, 0, 0, 0, 12, 59, 239, 146,
    ];
    let cases: [([u8; 4], u8, &[u8]); 4] = [
        ([84, 121, 97, 253], 0, &SARAMA_RECORD),
        ([231, 74, 206, 165], 1, &gzip),
        ([21, 0, 159, 97], 2, &snappy),
        ([169, 74, 119, 197], 3, &lz4),
    ];
    for (crc, attributes, section) in cases {
        let batch = sarama_batch(crc, attributes, section);
        // Our CRC range and polynomial agree with sarama's.
        let header = BatchHeader::parse(&batch).unwrap();
        assert_eq!(
            crate::records::batch::compute_crc(&batch),
            header.crc,
            "codec {attributes}"
        );
        assert_eq!(
            decode_records(&batch).unwrap(),
            [sarama_expected()],
            "codec {attributes}"
        );
        // sarama's fixture leaves maxTimestamp at 0, below the base; Kafka accepts that.
        assert_eq!(validate_batch(&batch).unwrap().max_timestamp, 0);
    }
}

#[test]
fn encodes_sarama_record_bytes() {
    let input = RecordInput {
        timestamp: SARAMA_TIMESTAMP + 5,
        key: Some(vec![1, 2, 3, 4]),
        value: Some(vec![5, 6, 7]),
        headers: vec![Header {
            key: vec![8, 9, 10],
            value: Some(vec![11, 12]),
        }],
    };
    let batch = encode_batch(&[input], Compression::None, 0).unwrap();
    // baseTimestamp is the first record's, so the delta is 0 where sarama's is 5.
    let mut record = SARAMA_RECORD;
    record[2] = 0;
    assert_eq!(&batch[BATCH_HEADER_LEN..], record);
}

#[test]
fn roundtrip_every_codec() {
    let inputs = sample_records(50);
    for codec in Compression::ALL {
        let batch = encode_batch(&inputs, codec, 1000).unwrap();
        validate_batch(&batch).unwrap();
        assert_eq!(
            decode_records(&batch).unwrap(),
            expected(&inputs, 1000),
            "{codec:?}"
        );
    }
}

#[test]
fn roundtrip_nulls_empties_and_headers() {
    let inputs = vec![
        RecordInput {
            timestamp: 5,
            key: None,
            value: None,
            headers: vec![],
        },
        RecordInput {
            timestamp: 3,
            key: Some(vec![]),
            value: Some(vec![]),
            headers: vec![],
        },
        RecordInput {
            timestamp: 9,
            key: None,
            value: Some(vec![7; 300]),
            headers: vec![
                Header {
                    key: b"null".to_vec(),
                    value: None,
                },
                Header {
                    key: vec![],
                    value: Some(vec![]),
                },
                Header {
                    key: b"k".to_vec(),
                    value: Some(vec![1; 200]),
                },
            ],
        },
    ];
    for codec in Compression::ALL {
        let batch = encode_batch(&inputs, codec, 0).unwrap();
        let header = validate_batch(&batch).unwrap();
        assert_eq!((header.base_timestamp, header.max_timestamp), (5, 9));
        assert_eq!(
            decode_records(&batch).unwrap(),
            expected(&inputs, 0),
            "{codec:?}"
        );
    }
}

#[test]
fn large_batch_roundtrip() {
    let inputs: Vec<RecordInput> = (0..2000)
        .map(|i| RecordInput {
            timestamp: 1_700_000_000_000 + i,
            key: Some(format!("key-{i}").into_bytes()),
            value: Some(vec![(i % 256) as u8; 1000]),
            headers: vec![],
        })
        .collect();
    for codec in Compression::ALL {
        let batch = encode_batch(&inputs, codec, 0).unwrap();
        let records = decode_records(&batch).unwrap();
        assert_eq!(records.len(), 2000);
        assert_eq!(records[1999].offset, 1999);
        assert_eq!(
            records[1999].value.as_deref(),
            Some(&[(1999 % 256) as u8; 1000][..])
        );
    }
}

#[test]
fn encode_rejects_empty_and_wild_timestamps() {
    assert!(matches!(
        encode_batch(&[], Compression::None, 0),
        Err(Error::InvalidRecord(_))
    ));
    let wild = [
        RecordInput {
            timestamp: i64::MIN,
            ..Default::default()
        },
        RecordInput {
            timestamp: i64::MAX,
            ..Default::default()
        },
    ];
    let err = encode_batch(&wild, Compression::None, 0).unwrap_err();
    assert!(matches!(err, Error::InvalidTimestamp(_)));
}

#[test]
fn log_append_time_batches_report_max_timestamp() {
    let section = encoded_section(&sample_records(3), 100);
    let case = RawBatch {
        attributes: crate::records::batch::ATTR_LOG_APPEND_TIME,
        count: 3,
        last_offset_delta: 2,
        base_timestamp: 100,
        max_timestamp: 777,
        ..RawBatch::new(section)
    };
    let records = decode_records(&raw_batch(&case)).unwrap();
    assert!(records.iter().all(|r| r.timestamp == 777));
}

#[test]
fn consistent_truncation_of_records_is_an_error() {
    // Cut the records section but fix up batchLength and CRC, so only record-level
    // bounds checks can notice.
    let inputs = sample_records(4);
    let section = encoded_section(&inputs, inputs[0].timestamp);
    for cut in 0..section.len() {
        let case = RawBatch {
            count: 4,
            last_offset_delta: 3,
            ..RawBatch::new(section[..cut].to_vec())
        };
        assert!(decode_records(&raw_batch(&case)).is_err(), "cut {cut}");
    }
}

#[test]
fn trailing_bytes_and_count_mismatch_are_errors() {
    let inputs = sample_records(3);
    let mut section = encoded_section(&inputs, inputs[0].timestamp);
    let case = RawBatch {
        count: 2,
        last_offset_delta: 2,
        ..RawBatch::new(section.clone())
    };
    assert!(decode_records(&raw_batch(&case)).is_err());
    section.push(0);
    let case = RawBatch {
        count: 3,
        last_offset_delta: 2,
        ..RawBatch::new(section)
    };
    assert!(decode_records(&raw_batch(&case)).is_err());
}

/// One record whose body is `fields` (after the attributes byte), wrapped in a batch.
fn batch_with_record_body(fields: &[u8]) -> Vec<u8> {
    let mut body = vec![0u8];
    body.extend_from_slice(fields);
    let mut section = Vec::new();
    write_varint(&mut section, body.len() as i32);
    section.extend_from_slice(&body);
    raw_batch(&RawBatch::new(section))
}

fn varint(value: i32) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, value);
    out
}

#[test]
fn well_formed_hand_record_decodes() {
    // ts delta 0, offset delta 0, key "k", null value, no headers.
    let mut fields = vec![0, 0];
    fields.extend(varint(1));
    fields.push(b'k');
    fields.extend(varint(-1));
    fields.extend(varint(0));
    let records = decode_records(&batch_with_record_body(&fields)).unwrap();
    assert_eq!(records[0].key.as_deref(), Some(&b"k"[..]));
    assert_eq!(records[0].value, None);
}

#[test]
fn hostile_lengths_error_without_allocating() {
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for key_len in [i32::MAX, 1 << 30, -2, i32::MIN] {
        let mut f = vec![0, 0];
        f.extend(varint(key_len));
        f.extend([0; 8]);
        cases.push(f);
    }
    // Value length too big, then a header count too big, a negative header count,
    // a null header key and a header value length too big.
    let tails: [&[i32]; 5] = [
        &[-1, i32::MAX],
        &[-1, -1, i32::MAX],
        &[-1, -1, -3],
        &[-1, -1, 1, -1, 0],
        &[-1, -1, 1, 0, 1 << 28],
    ];
    for tail in tails {
        let mut f = vec![0, 0];
        for v in tail {
            f.extend(varint(*v));
        }
        f.extend([0; 4]);
        cases.push(f);
    }
    // A varint encoding 2^32 (zigzag of 2^31), which no i32 holds.
    cases.push(vec![0, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0]);
    for fields in cases {
        let batch = batch_with_record_body(&fields);
        let (result, largest) = largest_allocation_during(|| decode_records(&batch));
        assert!(result.is_err(), "{fields:?}");
        assert!(largest < 64 << 10, "{fields:?} allocated {largest} bytes");
    }
}

#[test]
fn hostile_counts_error_without_allocating() {
    let section = encoded_section(&sample_records(1), 0);
    let cases = [
        RawBatch {
            count: i32::MAX,
            last_offset_delta: i32::MAX - 1,
            ..RawBatch::new(section.clone())
        },
        RawBatch {
            count: -5,
            ..RawBatch::new(section.clone())
        },
    ];
    for case in cases {
        let batch = raw_batch(&case);
        let (result, largest) = largest_allocation_during(|| decode_records(&batch));
        assert!(result.is_err());
        assert!(largest < 64 << 10, "allocated {largest} bytes");
    }
    // The record length itself lies.
    let mut section = varint(i32::MAX);
    section.extend([0; 10]);
    let batch = raw_batch(&RawBatch::new(section));
    let (result, largest) = largest_allocation_during(|| decode_records(&batch));
    assert!(result.is_err());
    assert!(largest < 64 << 10);
}

#[test]
fn hostile_compressed_count_errors() {
    let plain = encoded_section(&sample_records(2), 0);
    let packed = compress(Compression::Zstd, &plain).unwrap();
    let case = RawBatch {
        attributes: Compression::Zstd.attribute_bits(),
        count: i32::MAX,
        last_offset_delta: i32::MAX - 1,
        ..RawBatch::new(packed)
    };
    let batch = raw_batch(&case);
    let (result, largest) = largest_allocation_during(|| decode_records(&batch));
    assert!(result.is_err());
    assert!(largest < 1 << 20, "allocated {largest} bytes");
}

#[test]
fn offset_delta_outside_batch_is_error() {
    let section = encoded_section(&sample_records(3), 0);
    // Three records claim offset deltas 0..=2 but the batch says it ends at delta 1.
    let case = RawBatch {
        count: 3,
        last_offset_delta: 1,
        ..RawBatch::new(section)
    };
    assert!(decode_records(&raw_batch(&case)).is_err());
}

fn encoded_section(inputs: &[RecordInput], base_timestamp: i64) -> Vec<u8> {
    let mut out = Vec::new();
    encode_records(&mut out, inputs, base_timestamp).unwrap();
    out
}

#[test]
fn a_producer_batch_carries_its_producer_under_a_valid_crc() {
    let producer = BatchProducer {
        id: 7,
        epoch: 2,
        base_sequence: 10,
    };
    for codec in Compression::ALL {
        let records = sample_records(3);
        let stamped = encode_producer_batch(&records, codec, 5, producer).unwrap();
        let header = validate_batch(&stamped).unwrap();
        assert_eq!(
            (
                header.producer_id,
                header.producer_epoch,
                header.base_sequence
            ),
            (7, 2, 10),
            "{codec:?}"
        );
        assert_eq!(decode_records(&stamped).unwrap(), expected(&records, 5));
        // Only the producer fields and the CRC over them differ from a plain batch.
        let plain = encode_batch(&records, codec, 5).unwrap();
        let plain_header = validate_batch(&plain).unwrap();
        assert_eq!(
            (plain_header.producer_id, plain_header.producer_epoch),
            (-1, -1)
        );
        assert_eq!(plain_header.base_sequence, -1);
        assert_eq!(stamped.len(), plain.len());
        let differing: Vec<usize> = (0..plain.len())
            .filter(|&i| plain[i] != stamped[i])
            .collect();
        assert!(
            differing
                .iter()
                .all(|i| (17..21).contains(i) || (43..57).contains(i)),
            "{differing:?}"
        );
    }
    assert_eq!(BatchProducer::default(), BatchProducer::NONE);
}
