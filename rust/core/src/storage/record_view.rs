//! Borrowed views of the records inside a batch, for the cleaner: only the fields it decides
//! on are parsed, and a record it keeps is copied as the bytes it already is, never decoded
//! into owned keys, values and headers.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::records::record::records_data;
use crate::records::varint::{read_varint, read_varlong};
use crate::records::{BatchHeader, BATCH_HEADER_LEN};

/// One record as stored in a batch's (uncompressed) records section.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    /// The whole record: length varint through the end of its headers.
    pub raw: &'a [u8],
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    /// A record with a null value is a tombstone.
    pub has_value: bool,
    /// From offsetDelta to the record's end: what stays verbatim when only the timestamp
    /// delta is rewritten.
    pub after_timestamp: &'a [u8],
}

/// The uncompressed records section of a validated batch (`batch` spans it exactly).
pub fn records_section<'a>(header: &BatchHeader, batch: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    let section = batch
        .get(BATCH_HEADER_LEN..header.total_size())
        .ok_or_else(|| Error::corrupt("batch shorter than its header says"))?;
    records_data(header, section)
}

/// Walk exactly `count` records filling `data`; anything else is corrupt.
pub fn parse_records<'a>(data: &'a [u8], count: i32) -> Result<Vec<RecordView<'a>>> {
    let count = usize::try_from(count)
        .map_err(|_| Error::corrupt(format!("negative records count {count}")))?;
    // Each record takes at least 7 bytes, so a lying count cannot size the allocation.
    let mut records = Vec::with_capacity(count.min(data.len() / 7));
    let mut pos = 0;
    for _ in 0..count {
        records.push(parse_record(data, &mut pos)?);
    }
    if pos != data.len() {
        return Err(Error::corrupt(format!(
            "{} bytes follow the batch's last record",
            data.len() - pos
        )));
    }
    Ok(records)
}

fn parse_record<'a>(data: &'a [u8], pos: &mut usize) -> Result<RecordView<'a>> {
    let start = *pos;
    let len = read_varint(data, pos)?;
    let end = usize::try_from(len)
        .ok()
        .and_then(|len| pos.checked_add(len))
        .filter(|&end| end <= data.len())
        .ok_or_else(|| Error::corrupt(format!("record length {len} overruns its batch")))?;
    let body = &data[*pos..end];
    if body.is_empty() {
        return Err(Error::corrupt("empty record"));
    }
    // Past the attributes byte, unused in v2.
    let mut at = 1;
    let timestamp_delta = read_varlong(body, &mut at)?;
    let after_timestamp = &body[at..];
    let offset_delta = read_varint(body, &mut at)?;
    let key = nullable(body, &mut at)?;
    let has_value = nullable(body, &mut at)?.is_some();
    *pos = end;
    Ok(RecordView {
        raw: &data[start..end],
        timestamp_delta,
        offset_delta,
        key,
        has_value,
        after_timestamp,
    })
}

fn nullable<'a>(body: &'a [u8], at: &mut usize) -> Result<Option<&'a [u8]>> {
    let len = read_varint(body, at)?;
    if len == -1 {
        return Ok(None);
    }
    let end = usize::try_from(len)
        .ok()
        .and_then(|len| at.checked_add(len))
        .filter(|&end| end <= body.len())
        .ok_or_else(|| Error::corrupt(format!("field length {len} overruns its record")))?;
    let bytes = &body[*at..end];
    *at = end;
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{decode_records, encode_batch, Compression, RecordInput};

    fn input(key: Option<&str>, value: Option<&str>) -> RecordInput {
        RecordInput {
            timestamp: 1_000,
            key: key.map(|k| k.as_bytes().to_vec()),
            value: value.map(|v| v.as_bytes().to_vec()),
            headers: vec![crate::records::Header {
                key: b"h".to_vec(),
                value: None,
            }],
        }
    }

    #[test]
    fn views_agree_with_the_decoder_for_every_codec() {
        let inputs = [
            input(Some("a"), Some("1")),
            input(Some("b"), None),
            input(None, Some("3")),
            input(Some(""), Some("")),
        ];
        for codec in Compression::ALL {
            let batch = encode_batch(&inputs, codec, 40).unwrap();
            let header = BatchHeader::parse(&batch).unwrap();
            let data = records_section(&header, &batch).unwrap();
            let views = parse_records(&data, header.records_count).unwrap();
            let decoded = decode_records(&batch).unwrap();
            assert_eq!(views.len(), decoded.len());
            for (v, d) in views.iter().zip(&decoded) {
                assert_eq!(header.base_offset + i64::from(v.offset_delta), d.offset);
                assert_eq!(v.key, d.key.as_deref());
                assert_eq!(v.has_value, d.value.is_some());
            }
            let joined: Vec<u8> = views.iter().flat_map(|v| v.raw.iter().copied()).collect();
            assert_eq!(joined, *data, "{codec:?}: raw views tile the section");
        }
    }

    #[test]
    fn lying_counts_and_lengths_are_corrupt() {
        let batch = encode_batch(&[input(Some("a"), Some("1"))], Compression::None, 0).unwrap();
        let header = BatchHeader::parse(&batch).unwrap();
        let data = records_section(&header, &batch).unwrap();
        assert!(parse_records(&data, 2).is_err());
        assert!(parse_records(&data, -1).is_err());
        assert!(parse_records(&data[..data.len() - 1], 1).is_err());
        let mut longer = data.to_vec();
        longer.push(0);
        assert!(parse_records(&longer, 1).is_err());
    }
}
