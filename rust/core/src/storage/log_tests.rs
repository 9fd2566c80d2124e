//! Log-level unit tests: roll, reads across segments, retention, truncation, recovery.

use std::fs;
use std::path::Path;

use crate::records::{decode_records, encode_batch, Compression, RecordInput};
use crate::storage::{LogConfig, PartitionLog};

/// Ten 100-byte records keyed `k{i}-{j}`; the damage tests build logs from it too.
pub(super) fn batch(i: i64) -> Vec<u8> {
    let records: Vec<RecordInput> = (0..10)
        .map(|j| RecordInput {
            timestamp: 1_000 + i * 10 + j,
            key: Some(format!("k{i}-{j}").into_bytes()),
            value: Some(vec![i as u8; 100]),
            headers: Vec::new(),
        })
        .collect();
    encode_batch(&records, Compression::None, 0).unwrap()
}

fn config(pairs: &[(&str, &str)]) -> LogConfig {
    LogConfig::from_pairs(pairs.iter().copied()).unwrap()
}

fn fill(log: &mut PartitionLog, n: i64) {
    for i in 0..n {
        let info = log.append(&mut batch(i), 0).unwrap();
        assert_eq!(info.first_offset, i * 10);
    }
}

fn offsets_read(log: &PartitionLog) -> Vec<i64> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while let Some(slice) = log.read(offset, 1 << 20, None).unwrap() {
        let mut buf = vec![0u8; slice.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&*slice.file, &mut buf, slice.position).unwrap();
        let mut rest = &buf[..];
        while !rest.is_empty() {
            let size = 12 + i32::from_be_bytes(rest[8..12].try_into().unwrap()) as usize;
            out.extend(
                decode_records(&rest[..size])
                    .unwrap()
                    .iter()
                    .map(|r| r.offset)
                    .filter(|&o| o >= offset),
            );
            rest = &rest[size..];
        }
        offset = *out.last().unwrap() + 1;
    }
    out
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

#[test]
fn rolls_on_segment_bytes_and_names_files_by_base_offset() {
    let dir = tempfile::tempdir().unwrap();
    let size = batch(0).len();
    let mut log = PartitionLog::open(
        dir.path(),
        config(&[("segment.bytes", &(size * 3).to_string())]),
    )
    .unwrap();
    fill(&mut log, 7);
    assert_eq!(log.segment_base_offsets(), vec![0, 30, 60]);
    assert_eq!(
        segment_files(dir.path()),
        [
            "00000000000000000000.log",
            "00000000000000000030.log",
            "00000000000000000060.log"
        ]
    );
    assert_eq!(offsets_read(&log), (0..70).collect::<Vec<_>>());
}

#[test]
fn rolls_when_the_index_is_full_or_the_segment_is_old() {
    let dir = tempfile::tempdir().unwrap();
    // 24 bytes hold two 12-byte time index entries; with an entry per batch after the first,
    // the fourth batch starts a new segment.
    let mut log = PartitionLog::open(
        dir.path(),
        config(&[("segment.index.bytes", "24"), ("index.interval.bytes", "0")]),
    )
    .unwrap();
    fill(&mut log, 4);
    assert_eq!(log.segment_base_offsets(), vec![0, 30]);
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), config(&[("segment.ms", "100")])).unwrap();
    let now = crate::storage::clock::now_ms();
    log.append(&mut batch(0), now).unwrap();
    log.append(&mut batch(1), now + 50).unwrap();
    // Counted from the segment's creation, not from the records' (ancient) timestamps.
    log.append(&mut batch(2), now + 5_000).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 20]);
}

#[test]
fn retention_by_bytes_and_time_takes_whole_segments_the_active_one_included() {
    let dir = tempfile::tempdir().unwrap();
    let size = batch(0).len();
    let cfg = config(&[
        ("segment.bytes", &(size * 2).to_string()),
        ("retention.bytes", &(size * 3).to_string()),
    ]);
    let mut log = PartitionLog::open(dir.path(), cfg).unwrap();
    fill(&mut log, 9);
    assert_eq!(log.segment_base_offsets(), vec![0, 20, 40, 60, 80]);
    assert_eq!(log.apply_retention(0, i64::MAX).unwrap(), 3);
    assert_eq!(log.segment_base_offsets(), vec![60, 80]);
    assert_eq!(log.log_start_offset(), 60);

    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&[("segment.bytes", &size.to_string()), ("retention.ms", "50")]);
    let mut log = PartitionLog::open(dir.path(), cfg).unwrap();
    fill(&mut log, 3);
    // Max timestamps are 1009, 1019, 1029: at now=1065 only the first is older than 50 ms.
    assert_eq!(log.apply_retention(1_065, i64::MAX).unwrap(), 1);
    // Nothing past the high watermark goes, even when expired.
    assert_eq!(log.apply_retention(1_000_000, 25).unwrap(), 1);
    assert_eq!(log.segment_base_offsets(), vec![20]);
    // Then the active segment too, as in Kafka: a new empty one starts at the log end.
    assert_eq!(log.apply_retention(1_000_000, 30).unwrap(), 1);
    assert_eq!(log.segment_base_offsets(), vec![30]);
    assert_eq!(log.log_start_offset(), 30);
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(log.apply_retention(1_000_000, 30).unwrap(), 0);
    assert_eq!(
        log.append(&mut batch(3), 2_000_000).unwrap().first_offset,
        30
    );
}

#[test]
fn truncation_cuts_at_batch_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let size = batch(0).len();
    let mut log = PartitionLog::open(
        dir.path(),
        config(&[("segment.bytes", &(size * 2).to_string())]),
    )
    .unwrap();
    fill(&mut log, 6);
    log.truncate_to(25).unwrap();
    assert_eq!(log.log_end_offset(), 20);
    assert_eq!(log.segment_base_offsets(), vec![0, 20]);
    assert_eq!(offsets_read(&log), (0..20).collect::<Vec<_>>());
    assert_eq!(log.append(&mut batch(2), 0).unwrap().first_offset, 20);
}

#[test]
fn recovery_cuts_a_torn_tail_and_rebuilds_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&[("index.interval.bytes", "0")]);
    {
        let mut log = PartitionLog::open(dir.path(), cfg.clone()).unwrap();
        fill(&mut log, 5);
        // Dropped without close(): as after a crash, no clean-shutdown marker.
    }
    let log_path = dir.path().join("00000000000000000000.log");
    let full = fs::metadata(&log_path).unwrap().len();
    let size = batch(0).len() as u64;
    fs::OpenOptions::new()
        .write(true)
        .open(&log_path)
        .unwrap()
        .set_len(full - size / 2)
        .unwrap();
    // The active segment's index may not be on disk yet after a crash; make sure it is not.
    let _ = fs::remove_file(dir.path().join("00000000000000000000.index"));
    let log = PartitionLog::open(dir.path(), cfg).unwrap();
    assert_eq!(log.log_end_offset(), 40);
    assert_eq!(fs::metadata(&log_path).unwrap().len(), 4 * size);
    assert_eq!(offsets_read(&log), (0..40).collect::<Vec<_>>());
    assert_eq!(
        fs::metadata(dir.path().join("00000000000000000000.index"))
            .unwrap()
            .len(),
        3 * 8
    );
}

#[test]
fn clean_close_is_trusted_and_appends_continue() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = PartitionLog::open(dir.path(), LogConfig::default()).unwrap();
        fill(&mut log, 3);
        log.close().unwrap();
        assert!(
            log.read(0, 100, None).is_err(),
            "a closed log refuses reads"
        );
    }
    let mut log = PartitionLog::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(log.append(&mut batch(3), 0).unwrap().first_offset, 30);
}

#[test]
fn shared_append_writes_the_same_bytes_as_in_place_append() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut in_place = PartitionLog::open(a.path(), LogConfig::default()).unwrap();
    let mut shared = PartitionLog::open(b.path(), LogConfig::default()).unwrap();
    let mut two = batch(0);
    two.extend(batch(1));
    for _ in 0..3 {
        in_place.append(&mut two.clone(), 0).unwrap();
        shared.append_shared(&two, 0).unwrap();
    }
    let name = "00000000000000000000.log";
    assert_eq!(
        fs::read(a.path().join(name)).unwrap(),
        fs::read(b.path().join(name)).unwrap()
    );
    assert_eq!(offsets_read(&shared), (0..60).collect::<Vec<_>>());
}

/// Not a test: where does append time go? `cargo test --release -p kafkalite-core
/// append_breakdown -- --ignored --nocapture` (KAFKALITE_IO_BENCH_DIR picks the filesystem).
#[test]
#[ignore = "benchmark"]
fn append_breakdown() {
    use std::time::Instant;
    let base = std::env::var("KAFKALITE_IO_BENCH_DIR").unwrap_or_else(|_| "/tmp".into());
    let records: Vec<RecordInput> = (0..1000)
        .map(|_| RecordInput {
            timestamp: 0,
            key: None,
            value: Some(vec![7; 1024]),
            headers: Vec::new(),
        })
        .collect();
    let mut batch = encode_batch(&records, Compression::None, 0).unwrap();
    let gib = (1usize << 30) / batch.len();
    for round in 0..3 {
        let warm = Path::new(&base).join("kafkalite-warm");
        {
            use std::io::Write;
            let mut f = fs::File::create(&warm).unwrap();
            for _ in 0..1280 {
                f.write_all(&batch).unwrap();
            }
        }
        fs::remove_file(&warm).unwrap();
        let dir = tempfile::tempdir_in(&base).unwrap();
        let mut log =
            PartitionLog::open(dir.path(), config(&[("max.message.bytes", "4194304")])).unwrap();
        let started = Instant::now();
        for _ in 0..gib {
            log.append(&mut batch, 0).unwrap();
        }
        let append = started.elapsed().as_secs_f64();
        let started = Instant::now();
        for _ in 0..gib {
            std::hint::black_box(crate::records::batch::crc32c(&batch[21..]));
        }
        let crc = started.elapsed().as_secs_f64();
        println!(
            "round {round}: append {:.0} MiB/s, crc alone {:.0} MiB/s",
            1024.0 / append,
            1024.0 / crc
        );
    }
}

#[test]
fn a_batch_whose_crc_fails_during_the_write_leaves_the_log_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), config(&[])).unwrap();
    fill(&mut log, 3);
    let active = dir.path().join("00000000000000000000.log");
    let size = fs::metadata(&active).unwrap().len();
    // A flipped bit in a record: the header checks pass, only the CRC (checked while the
    // write is in flight) catches it.
    let mut bad = batch(3);
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    for shared in [false, true] {
        let err = if shared {
            log.append_shared(&bad, 0).unwrap_err()
        } else {
            log.append(&mut bad.clone(), 0).unwrap_err()
        };
        assert!(err.to_string().contains("CRC"), "{err}");
        assert_eq!(log.log_end_offset(), 30);
        assert_eq!(fs::metadata(&active).unwrap().len(), size);
    }
    // The next good append takes the offsets and the file position the bad one did not.
    assert_eq!(log.append(&mut batch(3), 0).unwrap().first_offset, 30);
    assert_eq!(offsets_read(&log), (0..40).collect::<Vec<_>>());
    drop(log);
    let reopened = PartitionLog::open(dir.path(), config(&[])).unwrap();
    assert_eq!(offsets_read(&reopened), (0..40).collect::<Vec<_>>());
}
