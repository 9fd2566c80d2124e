//! Kafka's binary key/value schemas of the `__consumer_offsets` records, so the topic reads
//! as Kafka's does (and Kafka's tools can decode it):
//!
//! - offset commit: key v1 `{group, topic, partition}`, value v3
//!   `{offset, leader_epoch, metadata, commit_timestamp}` (v1, with an expire timestamp, when
//!   an OffsetCommit v2-4 asked for a retention time);
//! - group metadata: key v2 `{group}`, value v3 `{protocol_type, generation, protocol,
//!   leader, current_state_timestamp, members[...]}`.
//!
//! A null value is a tombstone. Every key version and value version 0-4 Kafka has written is
//! read (v4 values are "flexible": compact strings and tagged fields). Every length is
//! checked against the bytes that remain; anything malformed decodes to `None`.

use bytes::Bytes;

use super::offsets::Committed;

const OFFSET_KEY_VERSION: i16 = 1;
const GROUP_KEY_VERSION: i16 = 2;
const OFFSET_VALUE_VERSION: i16 = 3;
const OFFSET_VALUE_VERSION_WITH_EXPIRY: i16 = 1;
const GROUP_VALUE_VERSION: i16 = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKey {
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    Group {
        group: String,
    },
}

impl RecordKey {
    #[must_use]
    pub fn group(&self) -> &str {
        match self {
            RecordKey::Offset { group, .. } | RecordKey::Group { group } => group,
        }
    }
}

/// A group as its metadata record stores it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupRecord {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp: i64,
    pub members: Vec<MemberRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberRecord {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Bytes,
    pub assignment: Bytes,
}

// ---------------------------------------------------------------------------------------
// Encoding (the classic, non-flexible layouts)

struct Writer(Vec<u8>);

impl Writer {
    fn i16(&mut self, v: i16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    /// Strings longer than i16::MAX bytes cannot be written; they are cut (never happens
    /// for inputs that came through the protocol, whose strings have the same limit).
    fn string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                let mut end = s.len().min(i16::MAX as usize);
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                self.i16(end as i16);
                self.0.extend_from_slice(&s.as_bytes()[..end]);
            }
            None => self.i16(-1),
        }
    }
    fn bytes(&mut self, b: &[u8]) {
        self.i32(i32::try_from(b.len()).unwrap_or(i32::MAX));
        self.0
            .extend_from_slice(&b[..b.len().min(i32::MAX as usize)]);
    }
}

#[must_use]
pub fn encode_offset_key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(8 + group.len() + topic.len()));
    w.i16(OFFSET_KEY_VERSION);
    w.string(Some(group));
    w.string(Some(topic));
    w.i32(partition);
    w.0
}

#[must_use]
pub fn encode_group_key(group: &str) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(4 + group.len()));
    w.i16(GROUP_KEY_VERSION);
    w.string(Some(group));
    w.0
}

#[must_use]
pub fn encode_offset_value(c: &Committed) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(32 + c.metadata.len()));
    match c.expire_ms {
        Some(expire) => {
            w.i16(OFFSET_VALUE_VERSION_WITH_EXPIRY);
            w.i64(c.offset);
            w.string(Some(&c.metadata));
            w.i64(c.commit_ms);
            w.i64(expire);
        }
        None => {
            w.i16(OFFSET_VALUE_VERSION);
            w.i64(c.offset);
            w.i32(c.leader_epoch);
            w.string(Some(&c.metadata));
            w.i64(c.commit_ms);
        }
    }
    w.0
}

#[must_use]
pub fn encode_group_value(g: &GroupRecord) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(64));
    w.i16(GROUP_VALUE_VERSION);
    w.string(Some(&g.protocol_type));
    w.i32(g.generation);
    w.string(g.protocol.as_deref());
    w.string(g.leader.as_deref());
    w.i64(g.current_state_timestamp);
    w.i32(g.members.len() as i32);
    for m in &g.members {
        w.string(Some(&m.member_id));
        w.string(m.group_instance_id.as_deref());
        w.string(Some(&m.client_id));
        w.string(Some(&m.client_host));
        w.i32(m.rebalance_timeout_ms);
        w.i32(m.session_timeout_ms);
        w.bytes(&m.subscription);
        w.bytes(&m.assignment);
    }
    w.0
}

// ---------------------------------------------------------------------------------------
// Decoding

/// Reads `__consumer_offsets` records: the classic ones here, the KIP-848 ones (always
/// flexible) in `consumer_records`.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    flexible: bool,
}

impl<'a> Reader<'a> {
    /// A reader of a flexible (compact-length) encoding from the first byte.
    pub(super) fn flexible(buf: &'a [u8]) -> Reader<'a> {
        Reader {
            buf,
            flexible: true,
        }
    }

    /// A value record's reader past its version (0-4; 4 is the flexible encoding).
    fn value(buf: &'a [u8]) -> Option<(Reader<'a>, i16)> {
        let mut r = Reader {
            buf,
            flexible: false,
        };
        let version = r.i16()?;
        if !(0..=4).contains(&version) {
            return None;
        }
        r.flexible = version >= 4;
        Some((r, version))
    }

    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.buf.get(..n)?;
        self.buf = &self.buf[n..];
        Some(bytes)
    }
    pub(super) fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    pub(super) fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(super) fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(super) fn uvarint(&mut self) -> Option<u32> {
        let mut value: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = *self.take(1)?.first()?;
            value |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    /// Length of a string/bytes/array field; `None` inside: null.
    pub(super) fn len(&mut self, classic_i32: bool) -> Option<Option<usize>> {
        if self.flexible {
            // Bounded by the bytes left, before anything is allocated for it.
            return match self.uvarint()?.checked_sub(1) {
                None => Some(None),
                Some(n) => {
                    let n = n as usize;
                    (n <= self.buf.len()).then_some(Some(n))
                }
            };
        }
        let n = if classic_i32 {
            self.i32()?
        } else {
            i32::from(self.i16()?)
        };
        match n {
            -1 => Some(None),
            n if n < 0 => None,
            n => Some(Some(n as usize)),
        }
    }
    pub(super) fn nullable_string(&mut self) -> Option<Option<String>> {
        match self.len(false)? {
            None => Some(None),
            Some(n) => Some(Some(std::str::from_utf8(self.take(n)?).ok()?.to_string())),
        }
    }
    pub(super) fn string(&mut self) -> Option<String> {
        self.nullable_string()?
    }
    fn bytes(&mut self) -> Option<Bytes> {
        let n = self.len(true)?.unwrap_or(0);
        Some(Bytes::copy_from_slice(self.take(n)?))
    }
    fn array_len(&mut self) -> Option<usize> {
        let n = self.len(true)?.unwrap_or(0);
        // Each element takes at least one byte: a bound before anything is allocated.
        (n <= self.buf.len()).then_some(n)
    }
    /// Skip a flexible struct's tagged fields.
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
pub fn decode_key(buf: &[u8]) -> Option<RecordKey> {
    let mut r = Reader {
        buf,
        flexible: false,
    };
    match r.i16()? {
        0 | 1 => Some(RecordKey::Offset {
            group: r.string()?,
            topic: r.string()?,
            partition: r.i32()?,
        }),
        2 => Some(RecordKey::Group { group: r.string()? }),
        _ => None,
    }
}

#[must_use]
pub fn decode_offset_value(buf: &[u8]) -> Option<Committed> {
    let (mut r, version) = Reader::value(buf)?;
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.nullable_string()?.unwrap_or_default();
    let commit_ms = r.i64()?;
    let expire_ms = if version == 1 {
        Some(r.i64()?).filter(|&t| t >= 0)
    } else {
        None
    };
    r.tagged_fields()?;
    Some(Committed {
        offset,
        leader_epoch,
        metadata,
        commit_ms,
        expire_ms,
    })
}

#[must_use]
pub fn decode_group_value(buf: &[u8]) -> Option<GroupRecord> {
    let (mut r, version) = Reader::value(buf)?;
    let protocol_type = r.string()?;
    let generation = r.i32()?;
    let protocol = r.nullable_string()?;
    let leader = r.nullable_string()?;
    let current_state_timestamp = if version >= 2 { r.i64()? } else { -1 };
    let count = r.array_len()?;
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let member_id = r.string()?;
        let group_instance_id = if version >= 3 {
            r.nullable_string()?
        } else {
            None
        };
        let client_id = r.string()?;
        let client_host = r.string()?;
        let session_or_rebalance = r.i32()?;
        let (rebalance_timeout_ms, session_timeout_ms) = if version >= 1 {
            (session_or_rebalance, r.i32()?)
        } else {
            (session_or_rebalance, session_or_rebalance)
        };
        let subscription = r.bytes()?;
        let assignment = r.bytes()?;
        r.tagged_fields()?;
        members.push(MemberRecord {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    r.tagged_fields()?;
    Some(GroupRecord {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(expire_ms: Option<i64>) -> Committed {
        Committed {
            offset: 42,
            leader_epoch: if expire_ms.is_some() { -1 } else { 7 },
            metadata: "meta".into(),
            commit_ms: 1_700_000_000_000,
            expire_ms,
        }
    }

    #[test]
    fn keys_round_trip_and_match_kafka_bytes() {
        let key = encode_offset_key("g", "t", 3);
        assert_eq!(key, [0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]);
        assert_eq!(
            decode_key(&key),
            Some(RecordKey::Offset {
                group: "g".into(),
                topic: "t".into(),
                partition: 3
            })
        );
        let key = encode_group_key("grp");
        assert_eq!(key, [0, 2, 0, 3, b'g', b'r', b'p']);
        assert_eq!(
            decode_key(&key),
            Some(RecordKey::Group {
                group: "grp".into()
            })
        );
    }

    #[test]
    fn offset_values_round_trip() {
        for c in [committed(None), committed(Some(1_700_000_600_000))] {
            assert_eq!(decode_offset_value(&encode_offset_value(&c)), Some(c));
        }
        // v3 layout: version, offset, leader epoch, metadata, commit timestamp.
        let bytes = encode_offset_value(&committed(None));
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(bytes.len(), 2 + 8 + 4 + 2 + 4 + 8);
    }

    #[test]
    fn flexible_v4_offset_value_is_read() {
        // version 4, offset 5, epoch 1, compact metadata "ab", commit ts 9, one tagged field.
        let mut v = vec![0, 4];
        v.extend_from_slice(&5i64.to_be_bytes());
        v.extend_from_slice(&1i32.to_be_bytes());
        v.extend_from_slice(&[3, b'a', b'b']);
        v.extend_from_slice(&9i64.to_be_bytes());
        v.extend_from_slice(&[1, 0, 16]);
        v.extend_from_slice(&[0xAA; 16]);
        let c = decode_offset_value(&v).unwrap();
        assert_eq!(
            (c.offset, c.leader_epoch, c.metadata.as_str(), c.commit_ms),
            (5, 1, "ab", 9)
        );
    }

    #[test]
    fn group_values_round_trip() {
        let g = GroupRecord {
            protocol_type: "consumer".into(),
            generation: 4,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 123,
            members: vec![MemberRecord {
                member_id: "m1".into(),
                group_instance_id: Some("i1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 10_000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"asg"),
            }],
        };
        assert_eq!(decode_group_value(&encode_group_value(&g)), Some(g.clone()));
        let empty = GroupRecord {
            protocol: None,
            leader: None,
            members: vec![],
            ..g
        };
        assert_eq!(decode_group_value(&encode_group_value(&empty)), Some(empty));
    }

    #[test]
    fn garbage_is_rejected_without_panicking() {
        assert_eq!(decode_key(&[]), None);
        assert_eq!(decode_key(&[0, 9, 0, 0]), None);
        assert_eq!(decode_key(&[0, 1, 0x7f, 0x7f, b'x']), None);
        assert_eq!(decode_offset_value(&[0, 3, 1]), None);
        // A member count far larger than the bytes that follow.
        let mut v = encode_group_value(&GroupRecord::default());
        let n = v.len();
        v[n - 4..].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(decode_group_value(&v), None);
        for len in 0..v.len() {
            let _ = decode_group_value(&v[..len]);
        }
    }
}
