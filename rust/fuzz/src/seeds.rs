//! Seed inputs made here, next to the corpus recorded from real client traffic
//! (`rust/fuzz/corpus/request`, written by the conformance runner's `--record`): a minimal
//! request for every API and version the broker serves, record batches of every codec, and
//! real partition directories packed for the recovery target.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafkalite_core::records::{encode_batch, Compression, Header, RecordInput};
use kafkalite_core::storage::{LogConfig, PartitionLog};

use crate::targets::{pack_partition, PartitionFiles};

/// Every (api, version) the broker serves, as ApiVersions advertises them.
#[must_use]
pub fn served() -> Vec<(ApiKey, i16)> {
    kafkalite_broker::handlers::SUPPORTED
        .iter()
        .flat_map(|&(key, min, max)| (min..=max).map(move |v| (key, v)))
        .collect()
}

/// A minimal valid request frame (header and body) for `key` at `version`: the body is
/// what the codec decodes from a run of filler bytes (zero counts, empty strings),
/// encoded again. `None` if no filler decodes at that version.
#[must_use]
pub fn minimal_frame(key: ApiKey, version: i16) -> Option<Vec<u8>> {
    let request = [0u8, 1]
        .iter()
        .find_map(|&fill| {
            let mut body = Bytes::from(vec![fill; 512]);
            RequestKind::decode(key, &mut body, version).ok()
        })
        // A filled body is no valid Fetch v13+ (a topic id's bytes then a bad count): the
        // empty request is.
        .or_else(|| {
            (key == ApiKey::Fetch)
                .then(|| RequestKind::Fetch(kafka_protocol::messages::FetchRequest::default()))
        })?;
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("fuzz")));
    let mut out = BytesMut::new();
    header
        .encode(&mut out, key.request_header_version(version))
        .ok()?;
    request.encode(&mut out, version).ok()?;
    Some(out.to_vec())
}

fn records(n: usize) -> Vec<RecordInput> {
    (0..n)
        .map(|i| RecordInput {
            timestamp: 1_700_000_000_000 + i as i64,
            key: (i % 3 != 0).then(|| format!("key-{i}").into_bytes()),
            value: Some(vec![b'v'; 8 + i]),
            headers: vec![Header {
                key: b"h".to_vec(),
                value: (i % 2 == 0).then(|| b"1".to_vec()),
            }],
        })
        .collect()
}

/// Record batches of every codec, one and several records.
#[must_use]
pub fn batches() -> Vec<Vec<u8>> {
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    codecs
        .iter()
        .flat_map(|&c| [1, 5].map(|n| encode_batch(&records(n), c, 0).expect("a valid batch")))
        .collect()
}

/// Partition directories written by the real log (appends, a roll, a clean close or
/// not), packed for [`crate::targets::segment_recovery`].
#[must_use]
pub fn partitions() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (clean, codec) in [(false, Compression::None), (true, Compression::Lz4)] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut log = PartitionLog::open(dir.path(), LogConfig::default()).expect("a new log");
        for i in 0..4 {
            let mut batch = encode_batch(&records(1 + i), codec, 0).expect("a valid batch");
            log.append(&mut batch, 1_700_000_000_000)
                .expect("an append");
        }
        if clean {
            log.close().expect("a clean close");
        } else {
            log.flush().expect("a flush");
        }
        let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap_or_default();
        let stem = format!("{:020}", 0);
        let files = PartitionFiles {
            clean_shutdown: clean,
            recovery_point: Some(if clean { 10 } else { 0 }),
            index: read(&format!("{stem}.index")),
            time_index: read(&format!("{stem}.timeindex")),
            epoch_checkpoint: b"0\n1\n0 0\n".to_vec(),
            segments: vec![(0, read(&format!("{stem}.log")))],
        };
        out.push(pack_partition(&files));
    }
    out
}
