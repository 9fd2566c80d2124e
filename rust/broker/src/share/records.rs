//! The records of `__share_group_state`, in Kafka 4.4's format (its share-coordinator
//! module's `ShareSnapshotKey`/`ShareSnapshotValue`), so Kafka's tools decode them:
//!
//! - key: record type (int16, 0 = ShareSnapshot, 1 = ShareUpdate), then the key v0 (not
//!   flexible): group id (int16 length + UTF-8), topic id (16 bytes), partition (int32);
//! - value: version (int16, 0), then flexible v0: snapshot epoch, state epoch, leader
//!   epoch (int32 each), start offset (int64), create and write timestamps (int64), the
//!   state batches (compact array: first and last offset int64, delivery state int8,
//!   delivery count int16, tagged fields), tagged fields (tag 0: delivery complete count,
//!   int32, written when not -1).
//!
//! kafkalite writes only snapshots (a full state per write); a ShareUpdate found on replay
//! (written by nothing of ours) is skipped.

use bytes::{Buf, BufMut};
use uuid::Uuid;

use super::partition_state::StateBatch;

pub const SHARE_SNAPSHOT: i16 = 0;
pub const SHARE_UPDATE: i16 = 1;

/// A share-partition: group, topic id, partition.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharePartitionKey {
    pub group_id: String,
    pub topic_id: Uuid,
    pub partition: i32,
}

impl SharePartitionKey {
    /// The key placing it on a `__share_group_state` partition, as Kafka forms it.
    #[must_use]
    pub fn coordinator_key(&self) -> String {
        format!(
            "{}:{}:{}",
            self.group_id,
            kafka_uuid(self.topic_id),
            self.partition
        )
    }
}

/// A topic id as Kafka prints it: URL-safe base64 without padding.
#[must_use]
pub fn kafka_uuid(id: Uuid) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// One share-partition's persisted state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub create_timestamp: i64,
    pub write_timestamp: i64,
    pub batches: Vec<StateBatch>,
}

#[must_use]
pub fn encode_key(key: &SharePartitionKey) -> Vec<u8> {
    let group = key.group_id.as_bytes();
    let mut out = Vec::with_capacity(2 + 2 + group.len() + 16 + 4);
    out.put_i16(SHARE_SNAPSHOT);
    out.put_i16(i16::try_from(group.len()).unwrap_or(i16::MAX));
    out.put_slice(&group[..group.len().min(i16::MAX as usize)]);
    out.put_slice(key.topic_id.as_bytes());
    out.put_i32(key.partition);
    out
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

fn get_uvarint(buf: &mut &[u8]) -> Option<u32> {
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        if !buf.has_remaining() {
            return None;
        }
        let b = buf.get_u8();
        v |= u32::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[must_use]
pub fn encode_value(s: &Snapshot) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + s.batches.len() * 20);
    out.put_i16(0);
    out.put_i32(s.snapshot_epoch);
    out.put_i32(s.state_epoch);
    out.put_i32(s.leader_epoch);
    out.put_i64(s.start_offset);
    out.put_i64(s.create_timestamp);
    out.put_i64(s.write_timestamp);
    put_uvarint(
        &mut out,
        u32::try_from(s.batches.len() + 1).unwrap_or(u32::MAX),
    );
    for &(first, last, state, count) in &s.batches {
        out.put_i64(first);
        out.put_i64(last);
        out.put_i8(state);
        out.put_i16(count);
        put_uvarint(&mut out, 0);
    }
    if s.delivery_complete_count == -1 {
        put_uvarint(&mut out, 0);
    } else {
        put_uvarint(&mut out, 1);
        put_uvarint(&mut out, 0);
        put_uvarint(&mut out, 4);
        out.put_i32(s.delivery_complete_count);
    }
    out
}

/// A ShareSnapshot key, or `None` for another record type or malformed bytes.
#[must_use]
pub fn decode_key(mut buf: &[u8]) -> Option<SharePartitionKey> {
    if buf.remaining() < 4 || buf.get_i16() != SHARE_SNAPSHOT {
        return None;
    }
    let len = usize::try_from(buf.get_i16()).ok()?;
    if buf.remaining() < len + 20 {
        return None;
    }
    let group_id = String::from_utf8(buf[..len].to_vec()).ok()?;
    buf.advance(len);
    let topic_id = Uuid::from_slice(&buf[..16]).ok()?;
    buf.advance(16);
    Some(SharePartitionKey {
        group_id,
        topic_id,
        partition: buf.get_i32(),
    })
}

/// Skip a tagged-field section, reading tag 0 (delivery complete count) when asked.
fn tagged(buf: &mut &[u8], mut dcc: Option<&mut i32>) -> Option<()> {
    let n = get_uvarint(buf)?;
    for _ in 0..n {
        let tag = get_uvarint(buf)?;
        let size = usize::try_from(get_uvarint(buf)?).ok()?;
        if buf.remaining() < size {
            return None;
        }
        if tag == 0 && size == 4 {
            if let Some(d) = dcc.as_deref_mut() {
                *d = (&buf[..4]).get_i32();
            }
        }
        buf.advance(size);
    }
    Some(())
}

#[must_use]
pub fn decode_value(mut buf: &[u8]) -> Option<Snapshot> {
    if buf.remaining() < 2 + 4 * 3 + 8 * 3 || buf.get_i16() != 0 {
        return None;
    }
    let snapshot_epoch = buf.get_i32();
    let state_epoch = buf.get_i32();
    let leader_epoch = buf.get_i32();
    let start_offset = buf.get_i64();
    let create_timestamp = buf.get_i64();
    let write_timestamp = buf.get_i64();
    let n = usize::try_from(get_uvarint(&mut buf)?.checked_sub(1)?).ok()?;
    // Every batch takes 20 bytes at least: bound the count before reserving.
    if n > buf.remaining() / 20 {
        return None;
    }
    let mut batches = Vec::with_capacity(n);
    for _ in 0..n {
        if buf.remaining() < 19 {
            return None;
        }
        let first = buf.get_i64();
        let last = buf.get_i64();
        let state = buf.get_i8();
        let count = buf.get_i16();
        tagged(&mut buf, None)?;
        batches.push((first, last, state, count));
    }
    let mut delivery_complete_count = -1;
    tagged(&mut buf, Some(&mut delivery_complete_count))?;
    Some(Snapshot {
        snapshot_epoch,
        state_epoch,
        leader_epoch,
        start_offset,
        delivery_complete_count,
        create_timestamp,
        write_timestamp,
        batches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_round_trips_in_kafkas_layout() {
        let key = SharePartitionKey {
            group_id: "g".into(),
            topic_id: Uuid::from_u128(1),
            partition: 3,
        };
        let k = encode_key(&key);
        assert_eq!(&k[..5], &[0, 0, 0, 1, b'g']);
        assert_eq!(k.len(), 2 + 2 + 1 + 16 + 4);
        assert_eq!(decode_key(&k), Some(key));
        let s = Snapshot {
            snapshot_epoch: 2,
            state_epoch: 1,
            leader_epoch: 0,
            start_offset: 10,
            delivery_complete_count: 4,
            create_timestamp: 5,
            write_timestamp: 6,
            batches: vec![(10, 12, 0, 1), (13, 13, 4, 5)],
        };
        let v = encode_value(&s);
        assert_eq!(decode_value(&v), Some(s.clone()));
        let none = Snapshot {
            delivery_complete_count: -1,
            batches: vec![],
            ..s
        };
        assert_eq!(decode_value(&encode_value(&none)), Some(none));
        assert_eq!(decode_value(&v[..v.len() - 3]), None, "torn value");
    }
}
