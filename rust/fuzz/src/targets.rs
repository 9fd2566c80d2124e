//! The fuzz targets: each takes arbitrary bytes, must return (never panic, never abort)
//! and says how far the input got, so tests can check that seeds reach the deep paths.

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bytes::Bytes;
use kafka_protocol::messages::RequestKind;
use kafkalite_broker::net::framing::{parse_request, Parsed};
use kafkalite_core::records::{
    check_batches, decode_records, validate_batch, validate_batches, BatchHeader, RecordRules,
};
use kafkalite_core::storage::{LogConfig, PartitionLog};

/// The decompressed-size cap the record target runs with (the broker's default is larger;
/// the code path is the same, and a small cap keeps bombs quick).
pub const DECOMPRESSED_CAP: usize = 256 << 10;

/// How far an input got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reached {
    /// Refused before or by the decoder.
    Refused,
    /// An ApiVersions request at a version the broker does not serve (answered at v0).
    Fallback,
    /// Decoded (and, for records, validated) in full.
    Accepted,
}

/// An LZ4 frame's block buffer: the decoder reserves the block size the frame header
/// declares (at most 4 MiB) before reading a block. Fixed, whatever the input says (the
/// fuzzer found a 79-byte batch doing it: `regressions/records/lz4-block-buffer`).
pub const LZ4_BLOCK_MAX: usize = 4 << 20;

/// The allocation bound of [`request_frame`] and [`record_batches`] for `len` input bytes.
#[must_use]
pub fn bound(len: usize) -> usize {
    crate::alloc_cap::bound_for(len) + 2 * DECOMPRESSED_CAP + 2 * LZ4_BLOCK_MAX
}

/// A request frame (header and body, no size prefix), through the broker's own header
/// parser (which refuses APIs and versions it does not serve) and the body decoder of that
/// API and version; a Produce request's record batches then go through [`record_batches`].
pub fn request_frame(data: &[u8]) -> Reached {
    let parsed = match parse_request(Bytes::copy_from_slice(data)) {
        Ok(p) => p,
        Err(_) => return Reached::Refused,
    };
    let request = match parsed {
        Parsed::ApiVersionsFallback { .. } => return Reached::Fallback,
        Parsed::Request(r) => r,
    };
    let mut body = request.body;
    let version = request.header.request_api_version;
    match RequestKind::decode(request.key, &mut body, version) {
        Ok(RequestKind::Produce(produce)) => {
            let mut all = Reached::Accepted;
            for topic in &produce.topic_data {
                for partition in &topic.partition_data {
                    if let Some(records) = &partition.records {
                        if record_batches(records) == Reached::Refused {
                            all = Reached::Refused;
                        }
                    }
                }
            }
            all
        }
        Ok(_) => Reached::Accepted,
        Err(_) => Reached::Refused,
    }
}

/// Record batches as a producer sends them: every reader of untrusted batches — header
/// validation, the produce path's record walk (decompressing, capped), the full record
/// decoder, and plain decompression of the records section.
pub fn record_batches(data: &[u8]) -> Reached {
    let single = validate_batch(data).is_ok();
    let mut walked = false;
    if let Ok(infos) = validate_batches(data, 1 << 20) {
        for require_keys in [false, true] {
            let rules = RecordRules {
                require_keys,
                max_decompressed_bytes: DECOMPRESSED_CAP,
                ..RecordRules::default()
            };
            walked |= check_batches(data, &infos, &rules).is_ok();
        }
    }
    let _ = decode_records(data);
    if let Ok(header) = BatchHeader::parse(data) {
        let _ = header.last_offset();
        if let Ok(codec) = header.compression() {
            let start = kafkalite_core::records::BATCH_HEADER_LEN.min(data.len());
            let _ = kafkalite_core::records::compression::decompress(
                codec,
                &data[start..],
                DECOMPRESSED_CAP,
            );
        }
    }
    if single && walked {
        Reached::Accepted
    } else {
        Reached::Refused
    }
}

/// The files of a partition directory packed into one input (see [`pack_partition`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionFiles {
    /// Write `.kafkalite-clean-shutdown` (`<next offset> <active size>`) from the log.
    pub clean_shutdown: bool,
    /// Write `recovery-point-offset` = this.
    pub recovery_point: Option<u16>,
    pub index: Vec<u8>,
    pub time_index: Vec<u8>,
    pub epoch_checkpoint: Vec<u8>,
    /// Segment files: (base offset, bytes).
    pub segments: Vec<(u16, Vec<u8>)>,
}

/// Input layout of [`segment_recovery`]: flags, recovery point, three u16-length-prefixed
/// files (offset index and time index of the first segment, leader-epoch checkpoint), then
/// segments as (u16 base, u16 length, bytes) to the end. Lengths past the end are cut.
#[must_use]
pub fn unpack_partition(data: &[u8]) -> PartitionFiles {
    let mut rest = data;
    let mut take = |n: usize| -> &[u8] {
        let (out, after) = rest.split_at(n.min(rest.len()));
        rest = after;
        out
    };
    let u16_of = |b: &[u8]| -> u16 {
        match b {
            [a, b] => u16::from_be_bytes([*a, *b]),
            [a] => u16::from(*a),
            _ => 0,
        }
    };
    let flags = take(1).first().copied().unwrap_or(0);
    let recovery = u16_of(take(2));
    let mut files = PartitionFiles {
        clean_shutdown: flags & 1 != 0,
        recovery_point: (flags & 2 != 0).then_some(recovery),
        ..PartitionFiles::default()
    };
    let n = u16_of(take(2)) as usize;
    files.index = take(n).to_vec();
    let n = u16_of(take(2)) as usize;
    files.time_index = take(n).to_vec();
    let n = u16_of(take(2)) as usize;
    files.epoch_checkpoint = take(n).to_vec();
    while files.segments.len() < 4 {
        let head = take(4);
        if head.is_empty() {
            break;
        }
        let base = u16_of(&head[..head.len().min(2)]);
        let n = u16_of(head.get(2..).unwrap_or_default()) as usize;
        files.segments.push((base, take(n).to_vec()));
    }
    files
}

/// The inverse of [`unpack_partition`] (seeds are made from real partition directories).
#[must_use]
pub fn pack_partition(files: &PartitionFiles) -> Vec<u8> {
    let mut out =
        vec![u8::from(files.clean_shutdown) | if files.recovery_point.is_some() { 2 } else { 0 }];
    out.extend_from_slice(&files.recovery_point.unwrap_or(0).to_be_bytes());
    // Each part is cut to what a u16 length can say (preallocated index tails are zeros).
    let cut = |b: &[u8]| b[..b.len().min(usize::from(u16::MAX))].to_vec();
    for part in [&files.index, &files.time_index, &files.epoch_checkpoint] {
        let part = cut(part);
        out.extend_from_slice(&(part.len() as u16).to_be_bytes());
        out.extend_from_slice(&part);
    }
    for (base, bytes) in &files.segments {
        let bytes = cut(bytes);
        out.extend_from_slice(&base.to_be_bytes());
        out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}

fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a scratch directory"))
        .path()
}

fn stem(base: u16) -> String {
    format!("{:020}", base)
}

fn write(path: PathBuf, bytes: &[u8]) {
    let mut f = fs::File::create(path).expect("scratch file");
    f.write_all(bytes).expect("scratch write");
}

/// A partition directory laid out from `data` ([`unpack_partition`]), opened as after an
/// unclean (or clean, if the flag says so) shutdown, read from its start to its end, closed
/// and opened again. Storage errors are fine; a panic is not.
pub fn segment_recovery(data: &[u8]) -> Reached {
    let files = unpack_partition(data);
    let dir = scratch().join("p-0");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    let first = files.segments.first().map_or(0, |s| s.0);
    for (base, bytes) in &files.segments {
        write(dir.join(format!("{}.log", stem(*base))), bytes);
    }
    if !files.segments.is_empty() {
        write(dir.join(format!("{}.index", stem(first))), &files.index);
        write(
            dir.join(format!("{}.timeindex", stem(first))),
            &files.time_index,
        );
    }
    if !files.epoch_checkpoint.is_empty() {
        write(dir.join("leader-epoch-checkpoint"), &files.epoch_checkpoint);
    }
    if let Some(point) = files.recovery_point {
        write(
            dir.join("recovery-point-offset"),
            point.to_string().as_bytes(),
        );
    }
    if files.clean_shutdown {
        let (base, bytes) = files.segments.last().cloned().unwrap_or_default();
        let next = u64::from(base) + u64::from(files.recovery_point.unwrap_or(0));
        let line = format!("{next} {}", bytes.len());
        write(dir.join(".kafkalite-clean-shutdown"), line.as_bytes());
    }
    let mut reached = Reached::Refused;
    for _ in 0..2 {
        let Ok(mut log) = PartitionLog::open(&dir, LogConfig::default()) else {
            return reached;
        };
        if read_all(&log) {
            reached = Reached::Accepted;
        }
        if log.close().is_err() {
            return reached;
        }
    }
    reached
}

/// Read every batch from the log start to its end; whether all of it read cleanly.
fn read_all(log: &PartitionLog) -> bool {
    let mut offset = log.log_start_offset();
    for _ in 0..1000 {
        let slice = match log.read(offset, 1 << 20, None) {
            Ok(Some(slice)) => slice,
            Ok(None) => return true,
            Err(_) => return false,
        };
        let Ok(len) = usize::try_from(slice.len) else {
            return false;
        };
        let mut buf = vec![0u8; len];
        if slice.file.read_exact_at(&mut buf, slice.position).is_err() {
            return false;
        }
        let Ok(infos) = validate_batches(&buf, usize::MAX) else {
            return false;
        };
        let Some(last) = infos.last() else {
            return false;
        };
        let next = last.header.last_offset() + 1;
        if next <= offset {
            return false;
        }
        offset = next;
    }
    false
}
