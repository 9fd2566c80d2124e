//! Kafka's key and value schemas of `__transaction_state` (`TransactionLogKey` v0,
//! `TransactionLogValue` v0 written, v0 and the flexible v1 read), so Kafka's tools can
//! read the topic and a log Kafka wrote can be replayed here.
//!
//! ```text
//! key   := version INT16 (0), transactional_id STRING
//! value := version INT16, producer_id INT64, producer_epoch INT16,
//!          transaction_timeout_ms INT32, transaction_status INT8,
//!          transaction_partitions NULLABLE ARRAY of (topic STRING, partition_ids ARRAY INT32),
//!          transaction_last_update_timestamp_ms INT64, transaction_start_timestamp_ms INT64
//!          [v1: compact strings/arrays and tagged fields]
//! ```
//! A null value (tombstone) deletes the transactional id.

use std::collections::BTreeSet;

use super::status::TxnStatus;

const KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 0;

/// What one value record says about a transactional id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnRecord {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub status: TxnStatus,
    pub partitions: BTreeSet<(String, i32)>,
    pub last_update_ms: i64,
    pub start_ms: i64,
}

#[must_use]
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&KEY_VERSION.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

#[must_use]
pub fn encode_value(r: &TxnRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&r.producer_id.to_be_bytes());
    out.extend_from_slice(&r.producer_epoch.to_be_bytes());
    out.extend_from_slice(&r.timeout_ms.to_be_bytes());
    out.push(r.status as u8);
    // Kafka writes the partitions only while they matter; Empty and Complete* carry none.
    let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
    for (topic, p) in &r.partitions {
        match by_topic.last_mut() {
            Some((t, ps)) if *t == topic.as_str() => ps.push(*p),
            _ => by_topic.push((topic, vec![*p])),
        }
    }
    out.extend_from_slice(&(by_topic.len() as i32).to_be_bytes());
    for (topic, ps) in by_topic {
        put_string(&mut out, topic);
        out.extend_from_slice(&(ps.len() as i32).to_be_bytes());
        for p in ps {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&r.last_update_ms.to_be_bytes());
    out.extend_from_slice(&r.start_ms.to_be_bytes());
    out
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = s.len().min(i16::MAX as usize);
    out.extend_from_slice(&(len as i16).to_be_bytes());
    out.extend_from_slice(&s.as_bytes()[..len]);
}

struct Reader<'a> {
    buf: &'a [u8],
    flexible: bool,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.buf.get(..n)?, self.buf.get(n..)?);
        self.buf = rest;
        Some(head)
    }
    fn i8(&mut self) -> Option<i8> {
        Some(self.take(1)?[0] as i8)
    }
    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    fn uvarint(&mut self) -> Option<u32> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.take(1)?[0];
            value |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    /// Array or string length; `None` inside for null.
    fn len(&mut self, string: bool) -> Option<Option<usize>> {
        if self.flexible {
            let n = self.uvarint()?;
            return Some(n.checked_sub(1).map(|n| n as usize));
        }
        let n = if string {
            i32::from(self.i16()?)
        } else {
            self.i32()?
        };
        Some(usize::try_from(n).ok())
    }
    fn string(&mut self) -> Option<String> {
        let n = self.len(true)??;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    fn tagged_fields(&mut self) -> Option<()> {
        if self.flexible {
            for _ in 0..self.uvarint()? {
                self.uvarint()?;
                let size = self.uvarint()? as usize;
                self.take(size)?;
            }
        }
        Some(())
    }
}

#[must_use]
pub fn decode_key(buf: &[u8]) -> Option<String> {
    let mut r = Reader {
        buf,
        flexible: false,
    };
    if r.i16()? != KEY_VERSION {
        return None;
    }
    r.string()
}

#[must_use]
pub fn decode_value(buf: &[u8]) -> Option<TxnRecord> {
    let mut r = Reader {
        buf,
        flexible: false,
    };
    let version = r.i16()?;
    if !(0..=1).contains(&version) {
        return None;
    }
    r.flexible = version >= 1;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let timeout_ms = r.i32()?;
    let status = TxnStatus::from_i8(r.i8()?)?;
    let mut partitions = BTreeSet::new();
    if let Some(topics) = r.len(false)? {
        for _ in 0..topics.min(buf.len()) {
            let topic = r.string()?;
            let count = r.len(false)??;
            for _ in 0..count.min(buf.len()) {
                partitions.insert((topic.clone(), r.i32()?));
            }
            r.tagged_fields()?;
        }
    }
    let last_update_ms = r.i64()?;
    let start_ms = r.i64()?;
    r.tagged_fields()?;
    Some(TxnRecord {
        producer_id,
        producer_epoch,
        timeout_ms,
        status,
        partitions,
        last_update_ms,
        start_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_kafka_bytes() {
        assert_eq!(encode_key("tx"), vec![0, 0, 0, 2, b't', b'x']);
        assert_eq!(decode_key(&encode_key("tx")).as_deref(), Some("tx"));
        let r = TxnRecord {
            producer_id: 42,
            producer_epoch: 3,
            timeout_ms: 60_000,
            status: TxnStatus::Ongoing,
            partitions: [
                ("a".to_string(), 0),
                ("a".to_string(), 2),
                ("b".to_string(), 1),
            ]
            .into_iter()
            .collect(),
            last_update_ms: 9,
            start_ms: 8,
        };
        let v = encode_value(&r);
        // version 0, pid, epoch, timeout, status 1, two topics.
        assert_eq!(&v[..2], &[0, 0]);
        assert_eq!(v[16], 1);
        assert_eq!(&v[17..21], &2i32.to_be_bytes());
        assert_eq!(decode_value(&v), Some(r));
    }

    #[test]
    fn flexible_v1_is_read() {
        let mut v = vec![0, 1];
        v.extend_from_slice(&5i64.to_be_bytes());
        v.extend_from_slice(&1i16.to_be_bytes());
        v.extend_from_slice(&1000i32.to_be_bytes());
        v.push(4); // CompleteCommit
        v.push(2); // one topic
        v.push(2);
        v.push(b't');
        v.push(2); // one partition
        v.extend_from_slice(&7i32.to_be_bytes());
        v.push(0); // topic tags
        v.extend_from_slice(&1i64.to_be_bytes());
        v.extend_from_slice(&2i64.to_be_bytes());
        v.extend_from_slice(&[1, 2, 2, 0, 2]); // one tagged field (ClientTransactionVersion)
        let r = decode_value(&v).unwrap();
        assert_eq!(r.status, TxnStatus::CompleteCommit);
        assert!(r.partitions.contains(&("t".to_string(), 7)));
    }

    #[test]
    fn garbage_is_rejected() {
        assert_eq!(decode_value(&[0, 9, 1]), None);
        assert_eq!(decode_value(&[]), None);
        assert_eq!(decode_key(&[0, 0, 0, 200, b'x']), None);
    }
}
