//! Kafka's embedded "consumer" protocol: the subscription a classic member sends in its
//! JoinGroup metadata and the assignment its SyncGroup answer carries
//! (`ConsumerProtocolSubscription` and `ConsumerProtocolAssignment`, versions 0-3, not
//! flexible). The coordinator reads them when a classic member joins a consumer group or a
//! classic group is upgraded, and writes assignments for classic members of a consumer
//! group and for a group downgraded to classic.
//!
//! Later versions only append fields, so a newer version reads as version 3 (Kafka's
//! `ConsumerProtocol` does the same). Every length is checked against the bytes left.

use bytes::{BufMut, Bytes, BytesMut};

/// The highest version of both schemas.
const HIGHEST_VERSION: i16 = 3;

/// What a classic consumer subscribes to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    pub version: i16,
    pub topics: Vec<String>,
    /// Partitions the member owns (v1+; cooperative members keep them across rebalances).
    pub owned: Vec<(String, Vec<i32>)>,
    /// `client.rack` (v3+).
    pub rack_id: Option<String>,
}

/// A member's assignment: partitions by topic name, and the assignor's user data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assignment {
    pub partitions: Vec<(String, Vec<i32>)>,
    pub user_data: Option<Bytes>,
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let bytes = self.0.get(..n)?;
        self.0 = &self.0[n..];
        Some(bytes)
    }
    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn nullable_string(&mut self) -> Option<Option<String>> {
        match self.i16()? {
            -1 => Some(None),
            n => {
                let n = usize::try_from(n).ok()?;
                Some(Some(std::str::from_utf8(self.take(n)?).ok()?.to_string()))
            }
        }
    }
    fn string(&mut self) -> Option<String> {
        self.nullable_string()?
    }
    fn nullable_bytes(&mut self) -> Option<Option<Bytes>> {
        match self.i32()? {
            -1 => Some(None),
            n => {
                let n = usize::try_from(n).ok()?;
                Some(Some(Bytes::copy_from_slice(self.take(n)?)))
            }
        }
    }
    /// An array's length, bounded by the bytes left (each element takes at least
    /// `min_size` bytes) before anything is allocated.
    fn array_len(&mut self, min_size: usize) -> Option<usize> {
        let n = usize::try_from(self.i32()?).ok()?;
        (n <= self.0.len() / min_size).then_some(n)
    }
    fn partitions(&mut self) -> Option<Vec<(String, Vec<i32>)>> {
        let topics = self.array_len(6)?;
        let mut out = Vec::with_capacity(topics);
        for _ in 0..topics {
            let topic = self.string()?;
            let count = self.array_len(4)?;
            let mut parts = Vec::with_capacity(count);
            for _ in 0..count {
                parts.push(self.i32()?);
            }
            out.push((topic, parts));
        }
        Some(out)
    }
}

/// The version a message starts with (`None`: too short or negative).
#[must_use]
pub fn version_of(metadata: &[u8]) -> Option<i16> {
    Reader(metadata).i16().filter(|v| *v >= 0)
}

/// A subscription, or `None` if it is malformed.
#[must_use]
pub fn parse_subscription(metadata: &[u8]) -> Option<Subscription> {
    let mut r = Reader(metadata);
    let version = r.i16().filter(|v| *v >= 0)?;
    let count = r.array_len(2)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        topics.push(r.string()?);
    }
    let _user_data = r.nullable_bytes()?;
    let owned = if version >= 1 {
        r.partitions()?
    } else {
        Vec::new()
    };
    if version >= 2 {
        let _generation = r.i32()?;
    }
    let rack_id = if version >= 3 {
        r.nullable_string()?
    } else {
        None
    };
    Some(Subscription {
        version,
        topics,
        owned,
        rack_id,
    })
}

/// An assignment, or `None` if it is malformed.
#[must_use]
pub fn parse_assignment(bytes: &[u8]) -> Option<Assignment> {
    let mut r = Reader(bytes);
    r.i16().filter(|v| *v >= 0)?;
    let partitions = r.partitions()?;
    let user_data = r.nullable_bytes()?;
    Some(Assignment {
        partitions,
        user_data,
    })
}

/// An assignment in the version of the member's subscription (`version`, capped at the
/// highest Kafka knows), with no user data, as Kafka's coordinator writes it.
#[must_use]
pub fn encode_assignment(partitions: &[(String, Vec<i32>)], version: i16) -> Bytes {
    let mut out = BytesMut::with_capacity(10 + partitions.len() * 16);
    out.put_i16(version.clamp(0, HIGHEST_VERSION));
    out.put_i32(i32::try_from(partitions.len()).unwrap_or(i32::MAX));
    for (topic, parts) in partitions {
        let name = &topic.as_bytes()[..topic.len().min(i16::MAX as usize)];
        out.put_i16(name.len() as i16);
        out.put_slice(name);
        out.put_i32(i32::try_from(parts.len()).unwrap_or(i32::MAX));
        for p in parts {
            out.put_i32(*p);
        }
    }
    out.put_i32(-1);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v3 subscription as Kafka's Java client writes it.
    fn subscription_v3() -> Vec<u8> {
        let mut b = BytesMut::new();
        b.put_i16(3);
        b.put_i32(1);
        b.put_i16(1);
        b.put_slice(b"t");
        b.put_i32(-1); // no user data
        b.put_i32(1); // owned: t-[0, 2]
        b.put_i16(1);
        b.put_slice(b"t");
        b.put_i32(2);
        b.put_i32(0);
        b.put_i32(2);
        b.put_i32(7); // generation
        b.put_i16(2);
        b.put_slice(b"r1");
        b.to_vec()
    }

    #[test]
    fn subscriptions_of_every_version_parse() {
        let s = parse_subscription(&subscription_v3()).unwrap();
        assert_eq!(s.topics, vec!["t"]);
        assert_eq!(s.owned, vec![("t".to_string(), vec![0, 2])]);
        assert_eq!(s.rack_id.as_deref(), Some("r1"));
        // v0: topics and user data only.
        let v0 = [0, 0, 0, 0, 0, 1, 0, 1, b'a', 0, 0, 0, 2, 9, 9];
        let s = parse_subscription(&v0).unwrap();
        assert_eq!(
            (s.version, s.topics.clone(), s.owned.len()),
            (0, vec!["a".into()], 0)
        );
        // A later version reads as version 3 with fields appended.
        let mut v4 = subscription_v3();
        v4[1] = 4;
        v4.extend_from_slice(&[1, 2, 3]);
        assert_eq!(
            parse_subscription(&v4).unwrap().rack_id.as_deref(),
            Some("r1")
        );
    }

    #[test]
    fn malformed_messages_are_refused_without_panicking() {
        let whole = subscription_v3();
        for len in 0..whole.len() {
            assert_eq!(parse_subscription(&whole[..len]), None, "cut at {len}");
        }
        // A topic count far beyond the bytes that follow.
        assert_eq!(parse_subscription(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), None);
        assert_eq!(parse_subscription(&[0xff, 0xff, 0, 0, 0, 0]), None);
        assert_eq!(parse_assignment(&[0, 1, 0x7f, 0xff, 0xff, 0xff]), None);
        assert_eq!(version_of(&[0xff, 0xfe]), None);
    }

    #[test]
    fn assignments_round_trip_in_the_member_version() {
        let parts = vec![("a".to_string(), vec![0, 3]), ("b".to_string(), vec![1])];
        let bytes = encode_assignment(&parts, 1);
        assert_eq!(&bytes[..2], &[0, 1]);
        assert_eq!(
            parse_assignment(&bytes),
            Some(Assignment {
                partitions: parts.clone(),
                user_data: None
            })
        );
        // Versions above Kafka's highest are written as 3; user data is null (-1).
        let bytes = encode_assignment(&parts, 9);
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(&bytes[bytes.len() - 4..], &(-1i32).to_be_bytes());
    }
}
