//! Zero-copy encoder for Fetch responses v4–18.
//!
//! The response is hand-encoded into `Piece`s: encoded bytes up to and including each
//! partition's records length prefix (INT32 in v4–11, compact unsigned varint `len + 1` in
//! flexible v12), then `Piece::File` with the segment range (sent with sendfile), then the
//! bytes that follow. Consecutive encoded fields share one `Piece::Bytes`.
//!
//! Layout (Kafka's FetchResponse.json; v12 is the first flexible version, with compact
//! strings/arrays/bytes and a tagged-field section closing every struct):
//!
//! ```text
//! throttle_time_ms INT32
//! [v7+] error_code INT16, session_id INT32
//! responses ARRAY
//!   topic STRING (v4-12) | topic_id UUID (v13+)
//!   partitions ARRAY
//!     partition_index INT32, error_code INT16, high_watermark INT64, last_stable_offset INT64
//!     [v5+] log_start_offset INT64
//!     aborted_transactions NULLABLE ARRAY of (producer_id INT64, first_offset INT64 [v12: tags])
//!     [v11+] preferred_read_replica INT32
//!     records NULLABLE BYTES
//!     [v12] tags (current_leader, tag 1: leader_id INT32, leader_epoch INT32, tags; sent
//!       when set; diverging_epoch and snapshot_id are never sent)
//!   [v12] tags
//! [v12] tags (v16+: node_endpoints, tag 0, sent only when non-empty: node_id INT32,
//!   host COMPACT_STRING, port INT32, rack COMPACT_NULLABLE_STRING, tags)
//! ```

use std::os::unix::fs::FileExt;

use bytes::{BufMut, BytesMut};
use kafkalite_core::storage::ReadSlice;

use super::Piece;
use crate::cluster::BrokerNode;

pub const MIN_VERSION: i16 = 4;
pub const MAX_VERSION: i16 = 18;

#[derive(Debug)]
pub struct PartitionResult {
    pub partition_index: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// `None` encodes null (what Kafka sends to READ_UNCOMMITTED fetchers); `Some` holds
    /// (producer id, first offset) pairs.
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
    pub preferred_read_replica: i32,
    /// `None` encodes empty records (length 0), as Kafka sends when there is no data.
    pub records: Option<ReadSlice>,
    /// KIP-951: (leader id, leader epoch) of a partition this broker may not serve.
    pub current_leader: Option<(i32, i32)>,
}

impl PartitionResult {
    /// A partition answered with an error and no data (offsets unknown: -1, as Kafka sends).
    #[must_use]
    pub fn error(partition_index: i32, error_code: i16) -> PartitionResult {
        PartitionResult {
            partition_index,
            error_code,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            // Kafka answers an unknown topic or partition with an empty list, not null.
            aborted_transactions: Some(Vec::new()),
            preferred_read_replica: -1,
            records: None,
            current_leader: None,
        }
    }

    /// An error of the read itself (leadership, leader epoch, not a replica): Kafka's read
    /// path answers these with a null list of aborted transactions.
    #[must_use]
    pub fn read_error(partition_index: i32, error_code: i16) -> PartitionResult {
        PartitionResult {
            aborted_transactions: None,
            ..PartitionResult::error(partition_index, error_code)
        }
    }
}

#[derive(Debug)]
pub struct TopicResult {
    pub name: String,
    /// What v13+ responses name the topic by.
    pub topic_id: uuid::Uuid,
    pub partitions: Vec<PartitionResult>,
}

#[derive(Debug, Default)]
pub struct FetchResult {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub session_id: i32,
    pub topics: Vec<TopicResult>,
    /// v16+: the endpoints of the leaders named in `current_leader`.
    pub node_endpoints: Vec<BrokerNode>,
}

impl FetchResult {
    /// Record bytes this response carries.
    #[must_use]
    pub fn record_bytes(&self) -> u64 {
        self.topics
            .iter()
            .flat_map(|t| &t.partitions)
            .filter_map(|p| p.records.as_ref())
            .map(|s| s.len)
            .sum()
    }
}

struct Writer {
    flexible: bool,
    buf: BytesMut,
    pieces: Vec<Piece>,
}

impl Writer {
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }

    fn array_len(&mut self, len: usize) -> anyhow::Result<()> {
        if self.flexible {
            self.uvarint(u32::try_from(len + 1)?);
        } else {
            self.buf.put_i32(i32::try_from(len)?);
        }
        Ok(())
    }

    fn nullable_array_len(&mut self, len: Option<usize>) -> anyhow::Result<()> {
        match len {
            Some(n) => self.array_len(n),
            None if self.flexible => {
                self.uvarint(0);
                Ok(())
            }
            None => {
                self.buf.put_i32(-1);
                Ok(())
            }
        }
    }

    fn string(&mut self, s: &str) -> anyhow::Result<()> {
        if self.flexible {
            self.uvarint(u32::try_from(s.len() + 1)?);
        } else {
            self.buf.put_i16(i16::try_from(s.len())?);
        }
        self.buf.put_slice(s.as_bytes());
        Ok(())
    }

    fn nullable_string(&mut self, s: Option<&str>) -> anyhow::Result<()> {
        match s {
            Some(s) => self.string(s),
            None if self.flexible => {
                self.uvarint(0);
                Ok(())
            }
            None => {
                self.buf.put_i16(-1);
                Ok(())
            }
        }
    }

    /// One tagged field: its tag, the size of its value, then the value `write` puts.
    fn tagged(
        &mut self,
        tag: u32,
        write: impl FnOnce(&mut Writer) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut value = Writer {
            flexible: true,
            buf: BytesMut::new(),
            pieces: Vec::new(),
        };
        write(&mut value)?;
        self.uvarint(tag);
        self.uvarint(u32::try_from(value.buf.len())?);
        self.buf.put_slice(&value.buf);
        Ok(())
    }

    fn no_tags(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }

    fn records(&mut self, slice: Option<ReadSlice>) -> anyhow::Result<()> {
        let len = slice.as_ref().map_or(0, |s| s.len);
        if self.flexible {
            self.uvarint(u32::try_from(len + 1)?);
        } else {
            self.buf.put_i32(i32::try_from(len)?);
        }
        if let Some(slice) = slice.filter(|s| s.len > 0) {
            if !self.buf.is_empty() {
                self.pieces.push(Piece::Bytes(self.buf.split().freeze()));
            }
            self.pieces.push(Piece::File(slice));
        }
        Ok(())
    }

    fn finish(mut self) -> Vec<Piece> {
        if !self.buf.is_empty() {
            self.pieces.push(Piece::Bytes(self.buf.split().freeze()));
        }
        self.pieces
    }
}

/// Encode `result` as a Fetch response body at `version` (4..=18).
pub fn encode(result: FetchResult, version: i16) -> anyhow::Result<Vec<Piece>> {
    anyhow::ensure!(
        (MIN_VERSION..=MAX_VERSION).contains(&version),
        "Fetch v{version} is not encodable here"
    );
    let mut w = Writer {
        flexible: version >= 12,
        buf: BytesMut::with_capacity(256),
        pieces: Vec::new(),
    };
    w.buf.put_i32(result.throttle_time_ms);
    if version >= 7 {
        w.buf.put_i16(result.error_code);
        w.buf.put_i32(result.session_id);
    }
    w.array_len(result.topics.len())?;
    for topic in result.topics {
        if version >= 13 {
            w.buf.put_slice(topic.topic_id.as_bytes());
        } else {
            w.string(&topic.name)?;
        }
        w.array_len(topic.partitions.len())?;
        for p in topic.partitions {
            w.buf.put_i32(p.partition_index);
            w.buf.put_i16(p.error_code);
            w.buf.put_i64(p.high_watermark);
            w.buf.put_i64(p.last_stable_offset);
            if version >= 5 {
                w.buf.put_i64(p.log_start_offset);
            }
            w.nullable_array_len(p.aborted_transactions.as_ref().map(Vec::len))?;
            for &(producer_id, first_offset) in p.aborted_transactions.iter().flatten() {
                w.buf.put_i64(producer_id);
                w.buf.put_i64(first_offset);
                w.no_tags();
            }
            if version >= 11 {
                w.buf.put_i32(p.preferred_read_replica);
            }
            w.records(p.records)?;
            match p.current_leader.filter(|_| w.flexible) {
                // Kafka's default (-1, -1) is not sent.
                Some((leader_id, leader_epoch)) if (leader_id, leader_epoch) != (-1, -1) => {
                    w.uvarint(1);
                    w.tagged(1, |v| {
                        v.buf.put_i32(leader_id);
                        v.buf.put_i32(leader_epoch);
                        v.no_tags();
                        Ok(())
                    })?;
                }
                _ => w.no_tags(),
            }
        }
        w.no_tags();
    }
    if version >= 16 && !result.node_endpoints.is_empty() {
        w.uvarint(1);
        w.tagged(0, |v| {
            v.array_len(result.node_endpoints.len())?;
            for node in &result.node_endpoints {
                v.buf.put_i32(node.node_id);
                v.string(&node.host)?;
                v.buf.put_i32(node.port);
                v.nullable_string(node.rack.as_deref())?;
                v.no_tags();
            }
            Ok(())
        })?;
    } else {
        w.no_tags();
    }
    Ok(w.finish())
}

/// The bytes the pieces stand for, file ranges read into memory (for TLS listeners, which
/// cannot sendfile, and for tests).
pub fn materialize(pieces: &[Piece]) -> std::io::Result<Vec<u8>> {
    let total: u64 = pieces
        .iter()
        .map(|p| match p {
            Piece::Bytes(b) => b.len() as u64,
            Piece::File(s) => s.len,
        })
        .sum();
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for piece in pieces {
        match piece {
            Piece::Bytes(b) => out.extend_from_slice(b),
            Piece::File(s) => {
                let start = out.len();
                out.resize(start + s.len as usize, 0);
                s.file.read_exact_at(&mut out[start..], s.position)?;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use bytes::Bytes;
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::protocol::Decodable;
    use kafkalite_core::records::{encode_batch, Compression, RecordInput};

    use super::*;

    fn batches() -> (Vec<u8>, Vec<u8>) {
        let records: Vec<RecordInput> = (0..3)
            .map(|i| RecordInput {
                timestamp: 1_700_000_000_000 + i,
                key: Some(format!("k{i}").into_bytes()),
                value: Some(vec![b'v'; 100 + i as usize]),
                headers: Vec::new(),
            })
            .collect();
        let a = encode_batch(&records, Compression::None, 0).unwrap();
        let b = encode_batch(&records[..1], Compression::None, 3).unwrap();
        (a, b)
    }

    #[test]
    fn pieces_decode_with_kafka_protocol_at_every_version() {
        let (a, b) = batches();
        let mut file = tempfile::tempfile().unwrap();
        let junk = vec![0xeeu8; 17];
        file.write_all(&junk).unwrap();
        file.write_all(&a).unwrap();
        file.write_all(&b).unwrap();
        let file = Arc::new(file);
        for version in MIN_VERSION..=MAX_VERSION {
            for committed in [false, true] {
                let slice = ReadSlice {
                    file: Arc::clone(&file),
                    position: 17,
                    len: (a.len() + b.len()) as u64,
                    first_offset: 0,
                };
                let second = ReadSlice {
                    file: Arc::clone(&file),
                    position: 17 + a.len() as u64,
                    len: b.len() as u64,
                    first_offset: 3,
                };
                let aborted = committed.then(Vec::new);
                let result = FetchResult {
                    throttle_time_ms: 0,
                    error_code: 0,
                    session_id: 0,
                    node_endpoints: Vec::new(),
                    topics: vec![
                        TopicResult {
                            name: "tópico".into(),
                            topic_id: uuid::Uuid::from_u128(7),
                            partitions: vec![
                                PartitionResult {
                                    partition_index: 0,
                                    error_code: 0,
                                    high_watermark: 4,
                                    last_stable_offset: 4,
                                    log_start_offset: 0,
                                    aborted_transactions: aborted.clone(),
                                    preferred_read_replica: -1,
                                    records: Some(slice),
                                    current_leader: None,
                                },
                                PartitionResult {
                                    partition_index: 1,
                                    error_code: 0,
                                    high_watermark: 9,
                                    last_stable_offset: 9,
                                    log_start_offset: 2,
                                    aborted_transactions: aborted.clone(),
                                    preferred_read_replica: -1,
                                    records: None,
                                    current_leader: None,
                                },
                                PartitionResult::error(7, 3),
                            ],
                        },
                        TopicResult {
                            name: "other".into(),
                            topic_id: uuid::Uuid::from_u128(8),
                            partitions: vec![PartitionResult {
                                partition_index: 2,
                                error_code: 0,
                                high_watermark: 4,
                                last_stable_offset: 4,
                                log_start_offset: 3,
                                aborted_transactions: aborted,
                                preferred_read_replica: -1,
                                records: Some(second),
                                current_leader: None,
                            }],
                        },
                    ],
                };
                let pieces = encode(result, version).unwrap();
                assert!(
                    pieces
                        .iter()
                        .filter(|p| matches!(p, Piece::File(_)))
                        .count()
                        == 2
                );
                let bytes = materialize(&pieces).unwrap();
                let mut buf = Bytes::from(bytes);
                let decoded = FetchResponse::decode(&mut buf, version).unwrap();
                assert!(buf.is_empty(), "v{version}: {} trailing bytes", buf.len());
                assert_eq!(decoded.responses.len(), 2);
                let t0 = &decoded.responses[0];
                if version >= 13 {
                    assert_eq!(t0.topic_id, uuid::Uuid::from_u128(7));
                } else {
                    assert_eq!(t0.topic.as_str(), "tópico");
                }
                assert_eq!(t0.partitions.len(), 3);
                let p0 = &t0.partitions[0];
                let mut expected = a.clone();
                expected.extend_from_slice(&b);
                assert_eq!(p0.records.as_deref(), Some(&expected[..]), "v{version}");
                assert_eq!(p0.high_watermark, 4);
                if version >= 5 {
                    assert_eq!(t0.partitions[1].log_start_offset, 2);
                }
                assert_eq!(t0.partitions[1].records.as_deref(), Some(&[][..]));
                assert_eq!(
                    t0.partitions[1].aborted_transactions.as_ref().map(Vec::len),
                    if committed { Some(0) } else { None }
                );
                assert_eq!(t0.partitions[2].error_code, 3);
                assert_eq!(t0.partitions[2].high_watermark, -1);
                if version >= 11 {
                    assert_eq!(p0.preferred_read_replica.0, -1);
                }
                let p = &decoded.responses[1].partitions[0];
                assert_eq!(p.partition_index, 2);
                assert_eq!(p.records.as_deref(), Some(&b[..]));
            }
        }
    }

    #[test]
    fn aborted_transactions_encode() {
        for version in MIN_VERSION..=MAX_VERSION {
            let result = FetchResult {
                topics: vec![TopicResult {
                    name: "t".into(),
                    topic_id: uuid::Uuid::nil(),
                    partitions: vec![PartitionResult {
                        aborted_transactions: Some(vec![(5, 10), (6, 20)]),
                        ..PartitionResult::error(0, 0)
                    }],
                }],
                ..FetchResult::default()
            };
            let bytes = materialize(&encode(result, version).unwrap()).unwrap();
            let decoded = FetchResponse::decode(&mut Bytes::from(bytes), version).unwrap();
            let aborted = decoded.responses[0].partitions[0]
                .aborted_transactions
                .clone()
                .unwrap();
            assert_eq!(aborted.len(), 2);
            assert_eq!((aborted[1].producer_id.0, aborted[1].first_offset), (6, 20));
        }
    }

    #[test]
    fn current_leader_and_node_endpoints_encode() {
        for version in MIN_VERSION..=MAX_VERSION {
            let result = FetchResult {
                topics: vec![TopicResult {
                    name: "t".into(),
                    topic_id: uuid::Uuid::nil(),
                    partitions: vec![
                        PartitionResult {
                            current_leader: Some((2, 7)),
                            ..PartitionResult::read_error(0, 6)
                        },
                        PartitionResult {
                            current_leader: Some((-1, -1)),
                            ..PartitionResult::read_error(1, 6)
                        },
                    ],
                }],
                node_endpoints: vec![BrokerNode {
                    node_id: 2,
                    host: "127.0.0.1".into(),
                    port: 9093,
                    rack: Some("r1".into()),
                    endpoints: Vec::new(),
                }],
                ..FetchResult::default()
            };
            let bytes = materialize(&encode(result, version).unwrap()).unwrap();
            let mut buf = Bytes::from(bytes);
            let decoded = FetchResponse::decode(&mut buf, version).unwrap();
            assert!(buf.is_empty(), "v{version}: {} trailing bytes", buf.len());
            let partitions = &decoded.responses[0].partitions;
            let leader = &partitions[0].current_leader;
            if version >= 12 {
                assert_eq!((leader.leader_id.0, leader.leader_epoch), (2, 7));
            } else {
                assert_eq!((leader.leader_id.0, leader.leader_epoch), (-1, -1));
            }
            assert_eq!(partitions[1].current_leader.leader_id.0, -1);
            if version >= 16 {
                assert_eq!(decoded.node_endpoints.len(), 1, "v{version}");
                let node = &decoded.node_endpoints[0];
                assert_eq!(node.node_id.0, 2);
                assert_eq!(node.host.as_str(), "127.0.0.1");
                assert_eq!(node.port, 9093);
                assert_eq!(node.rack.as_deref(), Some("r1"));
            } else {
                assert!(decoded.node_endpoints.is_empty());
            }
        }
    }
}
