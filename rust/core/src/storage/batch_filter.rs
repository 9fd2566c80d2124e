//! Rewriting one batch with some of its records removed, as the cleaner needs it: the base
//! offset, last offset delta, producer id, epoch and base sequence stay, so offsets never
//! move and the batch still ends where it did; kept records keep their offset deltas;
//! compressed batches are recompressed with their own codec.

use crate::error::{Error, Result};
use crate::records::batch::{write_crc, ATTR_DELETE_HORIZON};
use crate::records::compression::compress;
use crate::records::varint::write_varint;
use crate::records::varint::write_varlong;
use crate::records::{BatchHeader, Compression, TimestampType, BATCH_HEADER_LEN, LOG_OVERHEAD};
use crate::storage::record_view::{parse_records, records_section, RecordView};

/// What the cleaner decided for one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// A later record has the same key, or the record has no key.
    Remove,
    /// A tombstone whose delete horizon has passed.
    RemoveTombstone,
}

/// The batch after filtering.
#[derive(Debug, PartialEq, Eq)]
pub enum Filtered {
    /// Nothing changed: copy the original bytes.
    Unchanged,
    Rewritten(Vec<u8>),
    /// No record survived: the batch goes.
    Empty,
    /// The records do not parse (the CRC held, so a producer wrote them that way): the
    /// cleaner cannot judge them and keeps the batch as it is.
    Unparseable,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FilterCounts {
    pub kept: u64,
    pub removed: u64,
    pub tombstones_removed: u64,
}

/// Filter the validated `batch` record by record. `decide` gets each record's absolute
/// offset. `delete_horizon` is stamped into the batch (KIP-534: baseTimestamp holds it,
/// attribute bit 6 says so) when a tombstone survives in a batch that has none yet, so a
/// later pass knows when the tombstone may go.
pub fn filter_batch(
    batch: &[u8],
    header: &BatchHeader,
    delete_horizon: i64,
    mut decide: impl FnMut(i64, &RecordView<'_>) -> Verdict,
) -> Result<(Filtered, FilterCounts)> {
    let Ok(data) = records_section(header, batch) else {
        return Ok((Filtered::Unparseable, FilterCounts::default()));
    };
    let Ok(records) = parse_records(&data, header.records_count) else {
        return Ok((Filtered::Unparseable, FilterCounts::default()));
    };
    if records
        .iter()
        .any(|r| !(0..=header.last_offset_delta).contains(&r.offset_delta))
    {
        return Ok((Filtered::Unparseable, FilterCounts::default()));
    }
    let mut counts = FilterCounts::default();
    let mut kept: Vec<&RecordView<'_>> = Vec::with_capacity(records.len());
    for record in &records {
        match decide(header.base_offset + i64::from(record.offset_delta), record) {
            Verdict::Keep => kept.push(record),
            Verdict::Remove => counts.removed += 1,
            Verdict::RemoveTombstone => {
                counts.removed += 1;
                counts.tombstones_removed += 1;
            }
        }
    }
    counts.kept = kept.len() as u64;
    let stamp_horizon = !header.has_delete_horizon() && kept.iter().any(|r| !r.has_value);
    let filtered = if kept.is_empty() {
        Filtered::Empty
    } else if kept.len() == records.len() && !stamp_horizon {
        Filtered::Unchanged
    } else {
        let horizon = stamp_horizon.then_some(delete_horizon);
        match rebuild(header, &kept, horizon)? {
            Some(bytes) => Filtered::Rewritten(bytes),
            None => return Ok((Filtered::Unparseable, FilterCounts::default())),
        }
    };
    Ok((filtered, counts))
}

/// `batch` whole, stamped with `delete_horizon` (a control batch of an emptied
/// transaction: its marker may go once the horizon has passed, as a tombstone does).
pub fn stamp_delete_horizon(
    batch: &[u8],
    header: &BatchHeader,
    delete_horizon: i64,
) -> Result<Filtered> {
    let Ok(data) = records_section(header, batch) else {
        return Ok(Filtered::Unparseable);
    };
    let Ok(records) = parse_records(&data, header.records_count) else {
        return Ok(Filtered::Unparseable);
    };
    let kept: Vec<&RecordView<'_>> = records.iter().collect();
    Ok(match rebuild(header, &kept, Some(delete_horizon))? {
        Some(bytes) => Filtered::Rewritten(bytes),
        None => Filtered::Unparseable,
    })
}

/// A batch holding `kept`, with `horizon` as its new delete horizon if given. `None` when a
/// record's timestamp cannot be expressed against the horizon (nonsense timestamps).
fn rebuild(
    header: &BatchHeader,
    kept: &[&RecordView<'_>],
    horizon: Option<i64>,
) -> Result<Option<Vec<u8>>> {
    let mut records = Vec::with_capacity(kept.iter().map(|r| r.raw.len() + 8).sum());
    let mut max_timestamp = i64::MIN;
    let mut body = Vec::new();
    for record in kept {
        let Some(timestamp) = header.base_timestamp.checked_add(record.timestamp_delta) else {
            return Ok(None);
        };
        max_timestamp = max_timestamp.max(timestamp);
        match horizon {
            None => records.extend_from_slice(record.raw),
            Some(base) => {
                let Some(delta) = timestamp.checked_sub(base) else {
                    return Ok(None);
                };
                body.clear();
                body.push(0); // attributes
                write_varlong(&mut body, delta);
                body.extend_from_slice(record.after_timestamp);
                write_varint(&mut records, i32::try_from(body.len()).map_err(too_large)?);
                records.extend_from_slice(&body);
            }
        }
    }
    let codec = header.compression()?;
    let section = match codec {
        Compression::None => records,
        codec => compress(codec, &records)?,
    };
    let mut out = Vec::with_capacity(BATCH_HEADER_LEN + section.len());
    out.resize(BATCH_HEADER_LEN, 0);
    out.extend_from_slice(&section);
    let mut new_header = header.clone();
    new_header.batch_length = i32::try_from(out.len() - LOG_OVERHEAD).map_err(too_large)?;
    new_header.records_count = i32::try_from(kept.len()).map_err(too_large)?;
    // LogAppendTime records all carry the batch's max timestamp, which therefore stays.
    if header.timestamp_type() == TimestampType::CreateTime {
        new_header.max_timestamp = max_timestamp;
    }
    if let Some(base) = horizon {
        new_header.attributes |= ATTR_DELETE_HORIZON;
        new_header.base_timestamp = base;
    }
    new_header.write_to(&mut out);
    write_crc(&mut out);
    Ok(Some(out))
}

fn too_large(_: std::num::TryFromIntError) -> Error {
    Error::corrupt("filtered batch does not fit a record batch")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{decode_records, encode_batch, validate_batch, RecordInput};

    fn records(n: usize) -> Vec<RecordInput> {
        (0..n)
            .map(|i| RecordInput {
                timestamp: 10_000 + i as i64,
                key: Some(format!("k{}", i % 4).into_bytes()),
                // Every fifth record is a tombstone.
                value: (i % 5 != 4).then(|| vec![i as u8; 50 + i]),
                headers: vec![crate::records::Header {
                    key: b"h".to_vec(),
                    value: Some(vec![i as u8]),
                }],
            })
            .collect()
    }

    fn producer_batch(codec: Compression) -> Vec<u8> {
        let mut batch = encode_batch(&records(12), codec, 500).unwrap();
        // An idempotent producer's fields, which filtering must keep.
        let mut header = BatchHeader::parse(&batch).unwrap();
        header.producer_id = 77;
        header.producer_epoch = 3;
        header.base_sequence = 1_000;
        header.partition_leader_epoch = 9;
        header.write_to(&mut batch);
        write_crc(&mut batch);
        batch
    }

    #[test]
    fn filtering_keeps_offsets_producer_fields_and_codec() {
        for codec in Compression::ALL {
            let batch = producer_batch(codec);
            let header = validate_batch(&batch).unwrap();
            let original = decode_records(&batch).unwrap();
            // Keep odd offsets only; none of those is a tombstone at offset 504, 509.
            let (filtered, counts) = filter_batch(&batch, &header, 0, |offset, _| {
                if offset % 2 == 1 {
                    Verdict::Keep
                } else {
                    Verdict::Remove
                }
            })
            .unwrap();
            assert_eq!(counts.kept, 6);
            assert_eq!(counts.removed, 6);
            let Filtered::Rewritten(out) = filtered else {
                panic!("{codec:?}: {filtered:?}");
            };
            let h = validate_batch(&out).unwrap();
            assert_eq!(h.compression().unwrap(), codec);
            assert_eq!((h.base_offset, h.last_offset_delta), (500, 11));
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.base_sequence),
                (77, 3, 1_000)
            );
            assert_eq!(h.partition_leader_epoch, 9);
            assert_eq!(h.records_count, 6);
            // Offset 509 is a tombstone that survived: the batch now has a horizon.
            assert!(h.has_delete_horizon());
            let expected: Vec<_> = original
                .iter()
                .filter(|r| r.offset % 2 == 1)
                .cloned()
                .collect();
            let decoded = decode_records(&out).unwrap();
            assert_eq!(
                decoded, expected,
                "{codec:?}: values, headers, timestamps intact"
            );
            assert_eq!(
                h.max_timestamp,
                expected.iter().map(|r| r.timestamp).max().unwrap()
            );
        }
    }

    #[test]
    fn tombstone_stamps_a_delete_horizon_that_keeps_timestamps() {
        let batch = producer_batch(Compression::Lz4);
        let header = validate_batch(&batch).unwrap();
        let horizon = 99_999_999;
        let (filtered, _) = filter_batch(&batch, &header, horizon, |_, _| Verdict::Keep).unwrap();
        let Filtered::Rewritten(out) = filtered else {
            panic!("a horizon must be stamped: {filtered:?}");
        };
        let h = validate_batch(&out).unwrap();
        assert!(h.has_delete_horizon());
        assert_eq!(h.base_timestamp, horizon);
        assert_eq!(
            decode_records(&out).unwrap(),
            decode_records(&batch).unwrap()
        );
        // A second pass keeping everything changes nothing.
        let (again, _) = filter_batch(&out, &h, horizon + 1, |_, _| Verdict::Keep).unwrap();
        assert_eq!(again, Filtered::Unchanged);
    }

    #[test]
    fn all_kept_without_tombstones_is_unchanged_and_none_kept_is_empty() {
        let plain = encode_batch(&records(4), Compression::Snappy, 0).unwrap();
        let header = validate_batch(&plain).unwrap();
        let (f, c) = filter_batch(&plain, &header, 0, |_, _| Verdict::Keep).unwrap();
        assert_eq!((f, c.kept), (Filtered::Unchanged, 4));
        let (f, c) = filter_batch(&plain, &header, 0, |_, r| {
            if r.has_value {
                Verdict::Remove
            } else {
                Verdict::RemoveTombstone
            }
        })
        .unwrap();
        assert_eq!(f, Filtered::Empty);
        assert_eq!((c.removed, c.tombstones_removed), (4, 0));
    }

    #[test]
    fn garbage_records_under_a_good_crc_are_left_alone() {
        let mut batch = encode_batch(&records(3), Compression::None, 0).unwrap();
        // The first record's length becomes -1.
        batch[BATCH_HEADER_LEN] = 0x01;
        write_crc(&mut batch);
        let header = validate_batch(&batch).unwrap();
        let (f, c) = filter_batch(&batch, &header, 0, |_, _| Verdict::Remove).unwrap();
        assert_eq!((f, c), (Filtered::Unparseable, FilterCounts::default()));
    }
}
