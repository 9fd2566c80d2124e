//! Kafka's records of a consumer group (KIP-848) in `__consumer_offsets`, so the group
//! survives a restart or a coordinator move as it does in Kafka 4.1, and the topic reads
//! as Kafka's does (its tools decode it). The key's version is the record type; every value
//! is version 0 in Kafka's flexible encoding (compact strings and arrays, tagged fields):
//!
//! - 3 `ConsumerGroupMetadata` `{group}` -> `{epoch, metadata_hash (tag 0)}`;
//! - 5 `ConsumerGroupMemberMetadata` `{group, member}` -> the member's instance and rack
//!   ids, client id and host, subscription, rebalance timeout, server assignor, and (tag 0)
//!   its classic protocol metadata when it joined with JoinGroup;
//! - 6 `ConsumerGroupTargetAssignmentMetadata` `{group}` -> `{assignment_epoch}`;
//! - 7 `ConsumerGroupTargetAssignmentMember` `{group, member}` -> its target partitions;
//! - 8 `ConsumerGroupCurrentMemberAssignment` `{group, member}` -> its epochs, state,
//!   assigned partitions and partitions pending revocation.
//!
//! A null value deletes. Decoding checks every length against the bytes left; anything
//! malformed decodes to `None`.

use std::collections::BTreeSet;

use bytes::Bytes;
use uuid::Uuid;

use super::consumer::member::ClassicMember;
use super::consumer::topics::Assignment;
use super::records::Reader;

pub const GROUP_EPOCH: i16 = 3;
pub const MEMBER_METADATA: i16 = 5;
pub const TARGET_EPOCH: i16 = 6;
pub const TARGET_MEMBER: i16 = 7;
pub const CURRENT_MEMBER: i16 = 8;

/// The key of a consumer-group record.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConsumerKey {
    pub kind: i16,
    pub group: String,
    /// For the per-member kinds (5, 7, 8).
    pub member: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupEpochValue {
    pub epoch: i32,
    pub metadata_hash: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    pub classic: Option<ClassicMember>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's `MemberState` byte: 0 stable, 1 unrevoked, 2 unreleased partitions.
    pub state: i8,
    pub assigned: Assignment,
    pub pending_revocation: Assignment,
}

/// A consumer-group record's value (`None` in a write: a tombstone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsumerValue {
    GroupEpoch(GroupEpochValue),
    Member(MemberValue),
    TargetEpoch(i32),
    Target(Assignment),
    Current(CurrentValue),
}

// ---------------------------------------------------------------------------------------
// Encoding

struct Writer(Vec<u8>);

impl Writer {
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn len(&mut self, n: usize) {
        self.uvarint(u32::try_from(n).unwrap_or(u32::MAX - 1) + 1);
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn string(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.string(s),
            None => self.uvarint(0),
        }
    }
    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }
    /// `[]TopicPartitions`: topic id, partitions, no tagged fields.
    fn partitions(&mut self, a: &Assignment) {
        self.len(a.len());
        for (topic, parts) in a {
            self.0.extend_from_slice(topic.as_bytes());
            self.len(parts.len());
            for p in parts {
                self.i32(*p);
            }
            self.uvarint(0);
        }
    }
}

/// The key bytes (non-flexible, as every coordinator key).
#[must_use]
pub fn encode_key(key: &ConsumerKey) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + key.group.len());
    out.extend_from_slice(&key.kind.to_be_bytes());
    for s in std::iter::once(&key.group).chain(key.member.as_ref()) {
        let n = s.len().min(i16::MAX as usize);
        out.extend_from_slice(&(n as i16).to_be_bytes());
        out.extend_from_slice(&s.as_bytes()[..n]);
    }
    out
}

#[must_use]
pub fn encode_value(value: &ConsumerValue) -> Vec<u8> {
    let mut w = Writer(vec![0, 0]);
    match value {
        ConsumerValue::GroupEpoch(v) => {
            w.i32(v.epoch);
            if v.metadata_hash == 0 {
                w.uvarint(0);
            } else {
                w.uvarint(1);
                w.uvarint(0);
                w.uvarint(8);
                w.0.extend_from_slice(&v.metadata_hash.to_be_bytes());
            }
        }
        ConsumerValue::Member(m) => {
            w.nullable_string(m.instance_id.as_deref());
            w.nullable_string(m.rack_id.as_deref());
            w.string(&m.client_id);
            w.string(&m.client_host);
            w.len(m.subscribed_topic_names.len());
            for name in &m.subscribed_topic_names {
                w.string(name);
            }
            w.nullable_string(m.subscribed_topic_regex.as_deref());
            w.i32(m.rebalance_timeout_ms);
            w.nullable_string(m.server_assignor.as_deref());
            // Tag 0, ClassicMemberMetadata: Kafka writes it even when null (as a null
            // marker), so do we.
            let mut classic = Writer(Vec::new());
            match &m.classic {
                None => classic.uvarint(0),
                Some(c) => {
                    classic.uvarint(1);
                    classic.i32(c.session_timeout_ms);
                    classic.len(c.protocols.len());
                    for (name, metadata) in &c.protocols {
                        classic.string(name);
                        classic.bytes(metadata);
                        classic.uvarint(0);
                    }
                    classic.uvarint(0);
                }
            }
            w.uvarint(1);
            w.uvarint(0);
            w.len(classic.0.len() - 1);
            w.0.extend_from_slice(&classic.0);
        }
        ConsumerValue::TargetEpoch(epoch) => {
            w.i32(*epoch);
            w.uvarint(0);
        }
        ConsumerValue::Target(a) => {
            w.partitions(a);
            w.uvarint(0);
        }
        ConsumerValue::Current(c) => {
            w.i32(c.member_epoch);
            w.i32(c.previous_member_epoch);
            w.0.push(c.state as u8);
            w.partitions(&c.assigned);
            w.partitions(&c.pending_revocation);
            w.uvarint(0);
        }
    }
    w.0
}

// ---------------------------------------------------------------------------------------
// Decoding

impl Reader<'_> {
    /// A compact bytes field that may not be null.
    fn non_null_bytes(&mut self) -> Option<Bytes> {
        let n = self.len(false)??;
        Some(Bytes::copy_from_slice(self.take(n)?))
    }
    fn classic_string(&mut self) -> Option<String> {
        let n = usize::try_from(self.i16()?).ok()?;
        Some(std::str::from_utf8(self.take(n)?).ok()?.to_string())
    }
    /// Skip tagged fields, handing each (tag, data) to `on`.
    fn tagged(&mut self, mut on: impl FnMut(u32, &[u8]) -> Option<()>) -> Option<()> {
        for _ in 0..self.uvarint()? {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            on(tag, self.take(size)?)?;
        }
        Some(())
    }
    fn partitions(&mut self) -> Option<Assignment> {
        let count = self.len(false)??;
        let mut out = Assignment::new();
        for _ in 0..count {
            let topic = Uuid::from_slice(self.take(16)?).ok()?;
            let n = self.len(false)??;
            let mut parts = BTreeSet::new();
            for _ in 0..n {
                parts.insert(self.i32()?);
            }
            self.tagged(|_, _| Some(()))?;
            if !parts.is_empty() {
                out.entry(topic).or_default().extend(parts);
            }
        }
        Some(out)
    }
}

/// A consumer-group key (`None`: another kind of record, or malformed).
#[must_use]
pub fn decode_key(buf: &[u8]) -> Option<ConsumerKey> {
    let mut r = Reader::flexible(buf);
    let kind = r.i16()?;
    let per_member = match kind {
        GROUP_EPOCH | TARGET_EPOCH => false,
        MEMBER_METADATA | TARGET_MEMBER | CURRENT_MEMBER => true,
        _ => return None,
    };
    let group = r.classic_string()?;
    let member = if per_member {
        Some(r.classic_string()?)
    } else {
        None
    };
    Some(ConsumerKey {
        kind,
        group,
        member,
    })
}

/// The value of a record of `kind` (`None`: malformed or of a version not known).
#[must_use]
pub fn decode_value(kind: i16, buf: &[u8]) -> Option<ConsumerValue> {
    let mut r = Reader::flexible(buf);
    if r.i16()? != 0 {
        return None;
    }
    let value = match kind {
        GROUP_EPOCH => {
            let epoch = r.i32()?;
            let mut metadata_hash = 0;
            r.tagged(|tag, data| {
                if tag == 0 {
                    metadata_hash = Reader::flexible(data).i64()?;
                }
                Some(())
            })?;
            ConsumerValue::GroupEpoch(GroupEpochValue {
                epoch,
                metadata_hash,
            })
        }
        MEMBER_METADATA => {
            let mut m = MemberValue {
                instance_id: r.nullable_string()?,
                rack_id: r.nullable_string()?,
                client_id: r.string()?,
                client_host: r.string()?,
                ..MemberValue::default()
            };
            let count = r.len(false)??;
            for _ in 0..count {
                m.subscribed_topic_names.push(r.string()?);
            }
            m.subscribed_topic_regex = r.nullable_string()?;
            m.rebalance_timeout_ms = r.i32()?;
            m.server_assignor = r.nullable_string()?;
            let mut classic = None;
            r.tagged(|tag, data| {
                if tag == 0 {
                    classic = decode_classic(data)?;
                }
                Some(())
            })?;
            m.classic = classic;
            ConsumerValue::Member(m)
        }
        TARGET_EPOCH => {
            let epoch = r.i32()?;
            r.tagged(|_, _| Some(()))?;
            ConsumerValue::TargetEpoch(epoch)
        }
        TARGET_MEMBER => {
            let a = r.partitions()?;
            r.tagged(|_, _| Some(()))?;
            ConsumerValue::Target(a)
        }
        CURRENT_MEMBER => {
            let member_epoch = r.i32()?;
            let previous_member_epoch = r.i32()?;
            let state = *r.take(1)?.first()? as i8;
            let assigned = r.partitions()?;
            let pending_revocation = r.partitions()?;
            r.tagged(|_, _| Some(()))?;
            ConsumerValue::Current(CurrentValue {
                member_epoch,
                previous_member_epoch,
                state,
                assigned,
                pending_revocation,
            })
        }
        _ => return None,
    };
    Some(value)
}

/// The nullable `ClassicMemberMetadata` struct of tag 0: `Some(None)` for null.
fn decode_classic(data: &[u8]) -> Option<Option<ClassicMember>> {
    let mut r = Reader::flexible(data);
    if r.uvarint()? == 0 {
        return Some(None);
    }
    let session_timeout_ms = r.i32()?;
    let count = r.len(false)??;
    let mut protocols = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.string()?;
        let metadata = r.non_null_bytes()?;
        r.tagged(|_, _| Some(()))?;
        protocols.push((name, metadata));
    }
    r.tagged(|_, _| Some(()))?;
    Some(Some(ClassicMember {
        session_timeout_ms,
        protocols,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);

    fn parts(ps: &[i32]) -> Assignment {
        Assignment::from([(T, ps.iter().copied().collect::<BTreeSet<i32>>())])
    }

    fn member(classic: bool) -> MemberValue {
        MemberValue {
            instance_id: Some("i".into()),
            rack_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            subscribed_topic_names: vec!["t".into(), "u".into()],
            subscribed_topic_regex: Some(String::new()),
            rebalance_timeout_ms: 30_000,
            server_assignor: Some("uniform".into()),
            classic: classic.then(|| ClassicMember {
                session_timeout_ms: 10_000,
                protocols: vec![("range".into(), Bytes::from_static(b"\0\x01meta"))],
            }),
        }
    }

    #[test]
    fn every_value_round_trips() {
        let values = [
            (
                GROUP_EPOCH,
                ConsumerValue::GroupEpoch(GroupEpochValue::default()),
            ),
            (
                GROUP_EPOCH,
                ConsumerValue::GroupEpoch(GroupEpochValue {
                    epoch: 7,
                    metadata_hash: -3,
                }),
            ),
            (MEMBER_METADATA, ConsumerValue::Member(member(false))),
            (MEMBER_METADATA, ConsumerValue::Member(member(true))),
            (TARGET_EPOCH, ConsumerValue::TargetEpoch(7)),
            (TARGET_MEMBER, ConsumerValue::Target(parts(&[0, 3]))),
            (TARGET_MEMBER, ConsumerValue::Target(Assignment::new())),
            (
                CURRENT_MEMBER,
                ConsumerValue::Current(CurrentValue {
                    member_epoch: 7,
                    previous_member_epoch: 6,
                    state: 1,
                    assigned: parts(&[0]),
                    pending_revocation: parts(&[3]),
                }),
            ),
        ];
        for (kind, value) in values {
            let bytes = encode_value(&value);
            assert_eq!(decode_value(kind, &bytes), Some(value.clone()), "{value:?}");
            for len in 0..bytes.len() {
                assert_eq!(
                    decode_value(kind, &bytes[..len]),
                    None,
                    "{value:?} cut at {len}"
                );
            }
        }
        let key = ConsumerKey {
            kind: CURRENT_MEMBER,
            group: "g".into(),
            member: Some("m".into()),
        };
        assert_eq!(encode_key(&key), [0, 8, 0, 1, b'g', 0, 1, b'm']);
        assert_eq!(decode_key(&encode_key(&key)), Some(key));
        assert_eq!(
            decode_key(&[0, 2, 0, 1, b'g']),
            None,
            "classic group metadata"
        );
    }

    #[test]
    fn values_are_laid_out_as_kafka_writes_them() {
        // The group epoch with no hash: version, epoch, no tagged fields.
        let epoch = encode_value(&ConsumerValue::GroupEpoch(GroupEpochValue {
            epoch: 5,
            metadata_hash: 0,
        }));
        assert_eq!(epoch, [0, 0, 0, 0, 0, 5, 0]);
        // A member of the consumer protocol: its null classic metadata is still written
        // as tag 0 holding a null marker.
        let m = encode_value(&ConsumerValue::Member(MemberValue {
            client_id: "c".into(),
            client_host: "h".into(),
            rebalance_timeout_ms: -1,
            ..MemberValue::default()
        }));
        assert_eq!(
            m,
            [0, 0, 0, 0, 2, b'c', 2, b'h', 1, 0, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 1, 0]
        );
        // A current assignment: topic id, partitions, tagged fields per topic.
        let c = encode_value(&ConsumerValue::Current(CurrentValue {
            member_epoch: 1,
            previous_member_epoch: 0,
            state: 0,
            assigned: parts(&[2]),
            pending_revocation: Assignment::new(),
        }));
        let mut expect = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2];
        expect.extend_from_slice(T.as_bytes());
        expect.extend_from_slice(&[2, 0, 0, 0, 2, 0, 1, 0]);
        assert_eq!(c, expect);
    }

    #[test]
    fn garbage_is_refused_without_panicking() {
        assert_eq!(
            decode_value(MEMBER_METADATA, &[0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            None
        );
        assert_eq!(decode_value(TARGET_MEMBER, &[0, 0, 0x80]), None);
        // Version 1 is not known.
        assert_eq!(decode_value(TARGET_EPOCH, &[0, 1, 0, 0, 0, 1, 0]), None);
        assert_eq!(decode_key(&[0, 5, 0, 1, b'g']), None, "no member id");
    }
}
