//! Compaction end to end: what survives, offsets, tombstones, the three phases against
//! concurrent changes, crash recovery of the swap, and a throughput measurement.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::Error;
use crate::records::batch::{write_crc, ATTR_CONTROL};
use crate::records::{decode_records, encode_batch, BatchHeader, Compression, RecordInput};
use crate::storage::clock::now_ms;
use crate::storage::{LogConfig, PartitionLog};

const T0: i64 = 1_700_000_000_000;

type Entry = (i64, Vec<u8>, Option<Vec<u8>>);

fn config(pairs: &[(&str, &str)]) -> LogConfig {
    LogConfig::from_pairs(pairs.iter().copied()).unwrap()
}

fn compacted(segment_bytes: usize, extra: &[(&str, &str)]) -> LogConfig {
    let mut c = config(&[
        ("cleanup.policy", "compact"),
        ("segment.bytes", &segment_bytes.to_string()),
        ("delete.retention.ms", "0"),
    ]);
    for (k, v) in extra {
        c.set(k, v).unwrap();
    }
    c
}

fn record(key: &str, value: Option<String>, timestamp: i64) -> RecordInput {
    RecordInput {
        timestamp,
        key: Some(key.as_bytes().to_vec()),
        value: value.map(String::into_bytes),
        headers: Vec::new(),
    }
}

/// Appends `versions` versions of `keys` keys in batches of `per_batch`, then a tombstone
/// for every tenth key. Returns every record written, with its offset.
fn write_versions(
    log: &mut PartitionLog,
    keys: usize,
    versions: usize,
    per_batch: usize,
    codec: Compression,
) -> Vec<Entry> {
    let mut inputs = Vec::new();
    for v in 0..versions {
        for k in 0..keys {
            let value = format!("value-{k}-v{v}-{}", "x".repeat(k % 17));
            inputs.push(record(
                &format!("key-{k}"),
                Some(value),
                T0 + inputs.len() as i64,
            ));
        }
    }
    for k in (0..keys).step_by(10) {
        inputs.push(record(&format!("key-{k}"), None, T0 + inputs.len() as i64));
    }
    let mut written = Vec::new();
    for chunk in inputs.chunks(per_batch) {
        let mut batch = encode_batch(chunk, codec, 0).unwrap();
        let info = log.append(&mut batch, T0).unwrap();
        for (i, r) in chunk.iter().enumerate() {
            written.push((
                info.first_offset + i as i64,
                r.key.clone().unwrap(),
                r.value.clone(),
            ));
        }
    }
    written
}

/// The latest record per key, in offset order; tombstones included or not.
fn latest(written: &[Entry], with_tombstones: bool) -> Vec<Entry> {
    let mut by_key: BTreeMap<&[u8], &Entry> = BTreeMap::new();
    for e in written {
        by_key.insert(&e.1, e);
    }
    let mut out: Vec<Entry> = by_key
        .into_values()
        .filter(|e| with_tombstones || e.2.is_some())
        .cloned()
        .collect();
    out.sort_by_key(|e| e.0);
    out
}

/// Every record from the log start, as a consumer fetching from the beginning sees them.
fn read_all(log: &PartitionLog) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while let Some(slice) = log.read(offset, 64 << 10, None).unwrap() {
        let mut buf = vec![0u8; slice.len as usize];
        slice.file.read_exact_at(&mut buf, slice.position).unwrap();
        let mut rest = &buf[..];
        let mut next = offset;
        while !rest.is_empty() {
            let header = BatchHeader::parse(rest).unwrap();
            let size = header.total_size();
            for r in decode_records(&rest[..size]).unwrap() {
                if r.offset >= offset {
                    out.push((r.offset, r.key.unwrap_or_default(), r.value));
                }
            }
            next = header.last_offset() + 1;
            rest = &rest[size..];
        }
        offset = next;
    }
    out
}

/// Equality with a readable report: the first differing entry, not two long vectors.
#[track_caller]
fn assert_records(actual: &[Entry], expected: &[Entry]) {
    let show = |e: Option<&Entry>| {
        e.map(|(o, k, v)| {
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            format!("{o} {} {:?}", text(k), v.as_deref().map(text))
        })
    };
    if let Some(i) =
        (0..actual.len().max(expected.len())).find(|&i| actual.get(i) != expected.get(i))
    {
        panic!(
            "{} records read, {} expected; first difference at {i}: read {:?}, expected {:?}",
            actual.len(),
            expected.len(),
            show(actual.get(i)),
            show(expected.get(i))
        );
    }
}

fn log_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn keeps_the_latest_value_per_key_at_its_original_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), compacted(8 << 10, &[])).unwrap();
    let written = write_versions(&mut log, 1000, 10, 50, Compression::None);
    log.roll().unwrap();
    let end = log.log_end_offset();
    let segments_before = log.segment_base_offsets().len();
    assert!(segments_before > 50);

    let stats = log.compact(now_ms(), true).unwrap();
    assert_eq!(stats.skipped, None);
    assert_records(&read_all(&log), &latest(&written, true));
    assert_eq!(stats.records_kept, 1000);
    assert_eq!(stats.records_removed, written.len() as u64 - 1000);
    assert_eq!(
        stats.tombstones_removed, 0,
        "a tombstone survives its first pass"
    );
    assert!(stats.bytes_after < stats.bytes_before / 5, "{stats:?}");
    assert_eq!(stats.cleaned_up_to, end);
    assert_eq!(log.log_end_offset(), end);
    assert_eq!(
        log.segment_base_offsets()[0],
        0,
        "the log start does not move"
    );
    assert_eq!(log.log_start_offset(), 0);

    // delete.retention.ms=0: the horizon stamped by the first pass has passed.
    let stats = log.compact(now_ms(), true).unwrap();
    assert_eq!(stats.tombstones_removed, 100);
    let live = latest(&written, false);
    assert_records(&read_all(&log), &live);
    assert_eq!(live.len(), 900);
    // Like Kafka, a pass merges segments by their size before it: full segments first
    // shrink, the next pass merges them.
    assert!(
        log.segment_base_offsets().len() < segments_before / 5,
        "small segments merged"
    );
    assert_eq!(log.segment_base_offsets()[0], 0);

    log.close().unwrap();
    let log = PartitionLog::open(dir.path(), compacted(8 << 10, &[])).unwrap();
    assert_records(&read_all(&log), &live);
    assert_eq!(log.log_end_offset(), end);
    let names = log_files(dir.path());
    assert!(names.contains(&"cleaner-offset-checkpoint".to_string()));
    assert!(!names
        .iter()
        .any(|n| n.ends_with(".cleaned") || n.ends_with(".swap")));
}

#[test]
fn compressed_batches_are_filtered_and_recompressed() {
    for codec in Compression::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), compacted(16 << 10, &[])).unwrap();
        let written = write_versions(&mut log, 200, 5, 40, codec);
        log.roll().unwrap();
        log.compact(now_ms(), true).unwrap();
        assert_records(&read_all(&log), &latest(&written, true));
        let mut offset = 0;
        while let Some(slice) = log.read(offset, 1, None).unwrap() {
            let mut head = [0u8; 61];
            slice.file.read_exact_at(&mut head, slice.position).unwrap();
            let h = BatchHeader::parse(&head).unwrap();
            // A batch left empty at a group's end is stored uncompressed.
            if h.records_count > 0 {
                assert_eq!(h.compression().unwrap(), codec);
            }
            offset = h.last_offset() + 1;
        }
        log.compact(now_ms(), true).unwrap();
        assert_records(&read_all(&log), &latest(&written, false));
    }
}

#[test]
fn reads_in_gaps_timestamps_and_retention_work_on_cleaned_segments() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = compacted(
        4 << 10,
        &[
            ("cleanup.policy", "compact,delete"),
            ("retention.ms", "1000"),
        ],
    );
    let mut log = PartitionLog::open(dir.path(), cfg).unwrap();
    let written = write_versions(&mut log, 100, 4, 10, Compression::Zstd);
    log.roll().unwrap();
    log.compact(now_ms(), true).unwrap();
    let survivors = latest(&written, true);
    // An offset removed by compaction reads as the next batch: the one holding the next
    // survivor, or an emptied batch ending a group before it.
    let mut position = 0;
    assert!(survivors[0].0 > position);
    let first = loop {
        let slice = log.read(position, 1, None).unwrap().unwrap();
        let mut buf = vec![0u8; slice.len as usize];
        slice.file.read_exact_at(&mut buf, slice.position).unwrap();
        let header = BatchHeader::parse(&buf).unwrap();
        let records = decode_records(&buf).unwrap();
        if !records.is_empty() {
            break records;
        }
        assert!(header.last_offset() < survivors[0].0);
        position = header.last_offset() + 1;
    };
    assert!(first.iter().any(|r| r.offset == survivors[0].0));
    // Timestamps: each record was written at T0 + its index among the inputs.
    let (offset, ts) = log.offset_for_timestamp(T0).unwrap().unwrap();
    assert_eq!(offset, survivors[0].0);
    assert!(ts >= T0);
    let (max_offset, max_ts) = log.max_timestamp_offset().unwrap().unwrap();
    assert_eq!(max_offset, survivors.last().unwrap().0);
    assert_eq!(max_ts, T0 + written.len() as i64 - 1);
    // compact,delete: retention still deletes whole old segments.
    assert!(log.apply_retention(T0 + 1_000_000, i64::MAX).unwrap() > 0);
    assert_eq!(log.segment_base_offsets().len(), 1);
}

#[test]
fn compact_only_topics_are_not_aged_out_and_reject_keyless_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut log =
        PartitionLog::open(dir.path(), compacted(2 << 10, &[("retention.ms", "1")])).unwrap();
    write_versions(&mut log, 50, 2, 10, Compression::None);
    assert_eq!(log.apply_retention(T0 + 1_000_000, i64::MAX).unwrap(), 0);

    let keyless = RecordInput {
        timestamp: T0,
        key: None,
        value: Some(b"v".to_vec()),
        headers: Vec::new(),
    };
    let end = log.log_end_offset();
    for codec in [Compression::None, Compression::Gzip] {
        let batch = encode_batch(
            &[record("k", Some("v".into()), T0), keyless.clone()],
            codec,
            0,
        )
        .unwrap();
        let err = log.append(&mut batch.clone(), T0).unwrap_err();
        assert!(
            matches!(&err, Error::KeylessRecords { records } if records == &[1]),
            "{err}"
        );
        assert_eq!(err.kafka_code(), 87);
        assert!(matches!(
            log.append_shared(&batch, T0),
            Err(Error::KeylessRecords { .. })
        ));
    }
    assert_eq!(log.log_end_offset(), end, "nothing was appended");

    let dir = tempfile::tempdir().unwrap();
    let mut plain = PartitionLog::open(dir.path(), LogConfig::default()).unwrap();
    let mut batch = encode_batch(&[keyless], Compression::None, 0).unwrap();
    assert!(
        plain.append(&mut batch, T0).is_ok(),
        "keys are optional under delete"
    );
}

#[test]
fn dirty_ratio_and_compaction_lags_decide_when_to_clean() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = compacted(4 << 10, &[("min.cleanable.dirty.ratio", "0.5")]);
    let mut log = PartitionLog::open(dir.path(), cfg.clone()).unwrap();
    write_versions(&mut log, 100, 5, 10, Compression::None);
    log.roll().unwrap();
    let first = log.compact(now_ms(), false).unwrap();
    assert_eq!(first.skipped, None);
    assert!((first.dirty_ratio - 1.0).abs() < 1e-9);
    // A little new data is below the ratio...
    write_versions(&mut log, 5, 1, 5, Compression::None);
    log.roll().unwrap();
    let low = log.compact(now_ms(), false).unwrap();
    assert!(low.skipped.is_some() && low.dirty_ratio < 0.5, "{low:?}");
    // ...unless forced, or overdue by max.compaction.lag.ms.
    let mut overdue = cfg.clone();
    overdue.max_compaction_lag_ms = 1000;
    log.set_config(overdue);
    assert_eq!(log.compact(T0 + 10_000_000, false).unwrap().skipped, None);

    // min.compaction.lag.ms: records younger than the lag stay dirty.
    let dir = tempfile::tempdir().unwrap();
    let mut lagged = cfg;
    lagged.min_compaction_lag_ms = 60_000;
    let mut log = PartitionLog::open(dir.path(), lagged).unwrap();
    write_versions(&mut log, 100, 3, 10, Compression::None);
    log.roll().unwrap();
    let young = log.compact(T0 + 1_000, true).unwrap();
    assert!(young.skipped.is_some(), "{young:?}");
    assert_eq!(log.compact(T0 + 120_000, true).unwrap().skipped, None);

    // Not compacted at all under the delete policy.
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), LogConfig::default()).unwrap();
    assert!(log.compact(now_ms(), true).unwrap().skipped.is_some());
}

#[test]
fn max_compaction_lag_caps_the_active_segment_age() {
    let c = compacted(1 << 30, &[("max.compaction.lag.ms", "100")]);
    assert_eq!(c.roll_ms(), 100);
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), c).unwrap();
    let now = now_ms();
    let mut one = encode_batch(&[record("k", Some("v".into()), T0)], Compression::None, 0).unwrap();
    log.append(&mut one.clone(), now).unwrap();
    log.append(&mut one, now + 1_000).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 1]);
}

#[test]
fn appends_and_rolls_during_a_pass_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), compacted(4 << 10, &[])).unwrap();
    let mut written = write_versions(&mut log, 100, 5, 10, Compression::Lz4);
    log.roll().unwrap();
    let job = log.begin_compaction(now_ms(), true).unwrap();
    // Meanwhile: more data, new segments.
    written.extend(write_versions(&mut log, 100, 1, 10, Compression::None));
    let cleaned = job.run().unwrap();
    let stats = log.finish_compaction(cleaned).unwrap();
    assert_eq!(stats.skipped, None);
    assert!(stats.segments_cleaned > 0);
    // The new versions are in segments the pass did not map: older values stay until the
    // next pass, but nothing newer is lost.
    let seen: BTreeMap<Vec<u8>, Entry> = read_all(&log)
        .into_iter()
        .map(|e| (e.1.clone(), e))
        .collect();
    for e in latest(&written, true) {
        assert_eq!(seen.get(&e.1), Some(&e));
    }
    log.roll().unwrap();
    log.compact(now_ms(), true).unwrap();
    assert_records(&read_all(&log), &latest(&written, true));
}

#[test]
fn truncation_or_retention_during_a_pass_is_respected() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), compacted(4 << 10, &[])).unwrap();
    write_versions(&mut log, 100, 5, 10, Compression::None);
    log.roll().unwrap();
    let job = log.begin_compaction(now_ms(), true).unwrap();
    let second = log.begin_compaction(now_ms(), true).unwrap();
    let skipped = second.run().unwrap();
    assert!(
        log.finish_compaction(skipped).unwrap().skipped.is_some(),
        "one pass at a time"
    );
    log.truncate_to(300).unwrap();
    let stats = log.finish_compaction(job.run().unwrap()).unwrap();
    assert_eq!(
        stats.skipped,
        Some("the log was truncated during compaction")
    );
    assert_eq!(log.log_end_offset(), 300);
    assert!(!log_files(dir.path())
        .iter()
        .any(|n| n.ends_with(".cleaned")));

    // Retention deletes the oldest segments mid-pass: the rest is still swapped in.
    let dir = tempfile::tempdir().unwrap();
    let cfg = compacted(
        4 << 10,
        &[
            ("cleanup.policy", "compact,delete"),
            ("retention.bytes", "8000"),
        ],
    );
    let mut log = PartitionLog::open(dir.path(), cfg).unwrap();
    write_versions(&mut log, 100, 5, 10, Compression::None);
    log.roll().unwrap();
    let job = log.begin_compaction(now_ms(), true).unwrap();
    assert!(log.apply_retention(T0, i64::MAX).unwrap() > 0);
    let start = log.log_start_offset();
    let stats = log.finish_compaction(job.run().unwrap()).unwrap();
    assert!(stats.segments_cleaned > 0, "{stats:?}");
    assert!(read_all(&log).iter().all(|e| e.0 >= start));
    assert!(!log_files(dir.path())
        .iter()
        .any(|n| n.ends_with(".cleaned")));
}

#[test]
fn a_small_map_cleans_in_several_passes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = compacted(4 << 10, &[("delete.retention.ms", "86400000")]);
    let mut log = PartitionLog::open(dir.path(), cfg).unwrap();
    let written = write_versions(&mut log, 300, 4, 20, Compression::Snappy);
    log.roll().unwrap();
    let end = log.log_end_offset();
    let mut passes = 0;
    loop {
        let job = log.begin_compaction(now_ms(), true).unwrap();
        let stats = log
            .finish_compaction(job.with_max_map_entries(100).run().unwrap())
            .unwrap();
        passes += 1;
        if stats.cleaned_up_to == end {
            break;
        }
        assert!(passes < 100);
    }
    assert!(passes > 3);
    assert_records(&read_all(&log), &latest(&written, true));
}

#[test]
fn control_batches_are_kept_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), compacted(1 << 20, &[])).unwrap();
    let mut marker = encode_batch(
        &[record("k", Some("commit".into()), T0)],
        Compression::None,
        0,
    )
    .unwrap();
    let mut header = BatchHeader::parse(&marker).unwrap();
    header.attributes |= ATTR_CONTROL;
    header.write_to(&mut marker);
    write_crc(&mut marker);
    log.append(&mut marker, T0).unwrap();
    let mut newer =
        encode_batch(&[record("k", Some("v".into()), T0)], Compression::None, 0).unwrap();
    log.append(&mut newer, T0).unwrap();
    log.roll().unwrap();
    log.compact(now_ms(), true).unwrap();
    assert_eq!(
        read_all(&log).iter().map(|e| e.0).collect::<Vec<_>>(),
        vec![0, 1]
    );
}

/// A snapshot of a live log dir, as a crash would leave it: a file deleted between listing
/// and copying (a background segment close) is simply not in the snapshot.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        match fs::copy(entry.path(), to.join(entry.file_name())) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            other => {
                other.unwrap();
            }
        }
    }
}

#[test]
fn an_interrupted_swap_is_rolled_back_or_completed_on_open() {
    let root = tempfile::tempdir().unwrap();
    let (live, before) = (root.path().join("live"), root.path().join("before"));
    let cfg = compacted(4 << 10, &[]);
    let mut log = PartitionLog::open(&live, cfg.clone()).unwrap();
    write_versions(&mut log, 200, 5, 10, Compression::Gzip);
    log.roll().unwrap();
    log.close().unwrap();
    copy_dir(&live, &before);
    let old_bases = log_files(&before);
    let expected_before = read_all(&PartitionLog::open(&before, cfg.clone()).unwrap());
    let mut log = PartitionLog::open(&live, cfg.clone()).unwrap();
    log.compact(now_ms(), true).unwrap();
    let expected_after = read_all(&log);
    let cleaned_bases: Vec<i64> = log.segment_base_offsets();
    let closed = &cleaned_bases[..cleaned_bases.len() - 1];
    log.close().unwrap();
    let stem = |b: i64| crate::storage::segment::file_stem(b);

    // Crashed before the commit: the .cleaned files are dropped, the old log stays.
    let case = root.path().join("cleaned");
    copy_dir(&before, &case);
    for &b in closed {
        fs::copy(
            live.join(format!("{}.log", stem(b))),
            case.join(format!("{}.log.cleaned", stem(b))),
        )
        .unwrap();
    }
    let log = PartitionLog::open(&case, cfg.clone()).unwrap();
    assert_records(&read_all(&log), &expected_before);
    assert!(!log_files(&case).iter().any(|n| n.ends_with(".cleaned")));

    // Crashed after the commit, with none, or some, of the old files deleted.
    for delete_some in [false, true] {
        let case = root.path().join(format!("swap-{delete_some}"));
        copy_dir(&before, &case);
        for &b in closed {
            fs::copy(
                live.join(format!("{}.log", stem(b))),
                case.join(format!("{}.log.swap", stem(b))),
            )
            .unwrap();
        }
        if delete_some {
            let active = format!("{}.log", stem(*cleaned_bases.last().unwrap()));
            let old_logs = old_bases
                .iter()
                .filter(|n| n.ends_with(".log") && **n != active);
            for name in old_logs.step_by(3).take(4) {
                fs::remove_file(case.join(name)).unwrap();
                let _ = fs::remove_file(case.join(name.replace(".log", ".index")));
            }
        }
        let log = PartitionLog::open(&case, cfg.clone()).unwrap();
        assert_records(&read_all(&log), &expected_after);
        assert_eq!(log.segment_base_offsets(), cleaned_bases);
        assert!(!log_files(&case).iter().any(|n| n.ends_with(".swap")));
    }
}

/// Not a test: compaction throughput. `cargo test --release -p kafkalite-core
/// compaction_throughput -- --ignored --nocapture`
#[test]
#[ignore = "benchmark"]
fn compaction_throughput() {
    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), compacted(64 << 20, &[])).unwrap();
        let mut inputs = Vec::with_capacity(100);
        // Hex of a xorshift stream: values that compress about 2:1, like real payloads.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut value = || {
            (0..6)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("{x:016x}")
                })
                .collect::<String>()
        };
        for _ in 0..10 {
            for chunk in (0..100_000).collect::<Vec<_>>().chunks(100) {
                inputs.clear();
                for &k in chunk {
                    inputs.push(record(&format!("key-{k:08}"), Some(value()), T0));
                }
                log.append(&mut encode_batch(&inputs, codec, 0).unwrap(), T0)
                    .unwrap();
            }
        }
        log.roll().unwrap();
        let started = std::time::Instant::now();
        let job = log.begin_compaction(now_ms(), true).unwrap();
        let snapshot = started.elapsed();
        let cleaned = job.run().unwrap();
        let started = std::time::Instant::now();
        let stats = log.finish_compaction(cleaned).unwrap();
        let swap = started.elapsed();
        println!("{codec:?}: lock held {snapshot:?} to snapshot, {swap:?} to swap in");
        let secs = stats.duration.as_secs_f64();
        println!(
            "{codec:?}: {:.1} MB -> {:.1} MB, {} records kept, {} removed, {secs:.3} s: \
             {:.0} MB/s, {:.2} M records/s",
            stats.bytes_before as f64 / 1e6,
            stats.bytes_after as f64 / 1e6,
            stats.records_kept,
            stats.records_removed,
            stats.mb_per_sec(),
            (stats.records_kept + stats.records_removed) as f64 / 1e6 / secs
        );
        assert_eq!(stats.records_kept, 100_000);
    }
}
