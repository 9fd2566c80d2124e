//! Damaged logs: a bad batch header in a closed segment is CORRUPT_MESSAGE, not a gap;
//! recovery says what it cuts; storage errors are logged once per interval; poison batches
//! leave the log as it was.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::Error;
use crate::logging::capture;
use crate::storage::log_tests::batch;
use crate::storage::{LogConfig, PartitionLog};

/// Twelve batches of ten records over segments of five batches: [0, 50, 100].
fn three_segments(dir: &Path) -> (PartitionLog, u64) {
    let size = batch(0).len() as u64;
    let config = LogConfig::from_pairs([
        ("segment.bytes", (size * 5).to_string().as_str()),
        ("index.interval.bytes", "0"),
    ])
    .unwrap();
    let mut log = PartitionLog::open(dir, config).unwrap();
    for i in 0..12 {
        log.append(&mut batch(i), 0).unwrap();
    }
    assert_eq!(log.segment_base_offsets(), [0, 50, 100]);
    (log, size)
}

fn poke(path: &Path, position: u64, bytes: &[u8]) {
    let file = fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all_at(bytes, position).unwrap();
}

#[test]
fn damaged_header_in_a_closed_segment_is_corrupt_not_a_gap() {
    // Magic byte, batch length too long, base offset from another segment.
    let damages: [(u64, &[u8]); 3] = [(16, &[0xff]), (8, &[0x7f]), (0, &[0, 0, 0, 0, 0, 0, 1, 0])];
    for (field, bytes) in damages {
        let dir = tempfile::tempdir().unwrap();
        let (log, size) = three_segments(dir.path());
        let segment = dir.path().join("00000000000000000000.log");
        // The third batch (offsets 20..=29) of the first, closed segment.
        let position = 2 * size;
        poke(&segment, position + field, bytes);
        let (reads, lines) = capture(|| {
            let before = log.read(0, 1 << 20, None).unwrap().unwrap();
            let at = log.read(20, 1 << 20, None);
            let again = log.read(20, 1 << 20, None);
            let after = log.read(25, 1 << 20, None);
            let next = log.read(50, 1 << 20, None).unwrap().unwrap();
            (before, at, again, after, next)
        });
        let (before, at, again, after, next) = reads;
        // What precedes the damage still reads, and stops short of it.
        assert_eq!((before.first_offset, before.len), (0, 2 * size), "{field}");
        for result in [at, again, after] {
            let err = result.unwrap_err();
            assert!(matches!(err, Error::CorruptRecord(_)), "{field}: {err}");
            assert_eq!(err.kafka_code(), 2);
            let text = err.to_string();
            assert!(text.contains("00000000000000000000.log"), "{text}");
            assert!(text.contains(&format!("at byte {position}")), "{text}");
        }
        assert_eq!(next.first_offset, 50, "later segments still read");
        // Offsets the index reaches past the damaged batch are intact and still served.
        assert_eq!(
            log.read(30, 1 << 20, None).unwrap().unwrap().first_offset,
            30
        );
        assert_eq!(lines.len(), 1, "logged once: {lines:?}");
        assert!(
            lines[0].contains("ERROR corrupt batch header in log segment"),
            "{lines:?}"
        );
        assert!(lines[0].contains("(kafkalite.log.LogSegment)"), "{lines:?}");
    }
}

#[test]
fn recovery_logs_what_it_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = three_segments(dir.path());
    // Dropped without close(), as after a crash; then the newest segment loses 100 bytes.
    drop(log);
    let newest = dir.path().join("00000000000000000100.log");
    let full = fs::metadata(&newest).unwrap().len();
    let (size, torn) = (batch(10).len() as u64, batch(11).len() as u64);
    assert_eq!(full, size + torn);
    fs::OpenOptions::new()
        .write(true)
        .open(&newest)
        .unwrap()
        .set_len(full - 100)
        .unwrap();
    let (log, lines) = capture(|| PartitionLog::open(dir.path(), LogConfig::default()).unwrap());
    assert_eq!(log.log_end_offset(), 110);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    for expected in [
        "WARN Found invalid data in log segment",
        "00000000000000000100.log at byte",
        &format!("from {} to {size} bytes", full - 100),
        &format!("dropping {} bytes", torn - 100),
        "a batch of offsets 110..=119",
        "now ends before offset 110",
        "(a torn write)",
        "(kafkalite.log.LogLoader)",
    ] {
        assert!(line.contains(expected), "{expected:?} not in {line}");
    }
}

#[test]
fn recovery_logs_later_segments_it_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let (log, size) = three_segments(dir.path());
    drop(log);
    // A flipped CRC byte in the middle segment: recovery cuts there, and the newest
    // segment, which follows the cut, goes as well.
    // Roll's background syncs may still move the recovery point; then start recovery at 0.
    std::thread::sleep(std::time::Duration::from_millis(200));
    fs::write(dir.path().join("recovery-point-offset"), "0").unwrap();
    poke(
        &dir.path().join("00000000000000000050.log"),
        size + 30,
        &[0xee],
    );
    let (log, lines) = capture(|| PartitionLog::open(dir.path(), LogConfig::default()).unwrap());
    assert_eq!(log.log_end_offset(), 60);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].contains("00000000000000000050.log at byte"),
        "{lines:?}"
    );
    assert!(lines[0].contains("CRC"), "{lines:?}");
    assert!(
        lines[1].contains("Deleting 1 segment(s)") && lines[1].contains("base offset 100"),
        "{lines:?}"
    );
}

/// A batch the scrubber marked, then a crash: recovery steps over the marked bytes instead of
/// cutting there, so the sound batches after them and the later segments (acknowledged
/// long ago) are all kept, and the mark still refuses the damaged offsets.
#[test]
fn recovery_keeps_what_follows_a_batch_the_scrubber_marked() {
    use crate::storage::scrubber::scrub_segment;
    use std::ops::ControlFlow;

    let dir = tempfile::tempdir().unwrap();
    let (mut log, size) = three_segments(dir.path());
    // A flipped record byte in the third batch (offsets 20..=29) of the first segment.
    poke(
        &dir.path().join("00000000000000000000.log"),
        2 * size + 100,
        &[0xee],
    );
    for target in log.scrub_targets(false) {
        let out = scrub_segment(&target, |_| ControlFlow::Continue(())).unwrap();
        log.record_damage(&target, out.damages).unwrap();
    }
    assert_eq!(log.damaged().len(), 1);
    // A crash: no clean shutdown, and recovery starts at 0.
    drop(log);
    std::thread::sleep(std::time::Duration::from_millis(200));
    fs::remove_file(dir.path().join(".kafkalite-clean-shutdown")).ok();
    fs::write(dir.path().join("recovery-point-offset"), "0").unwrap();

    let (log, lines) = capture(|| PartitionLog::open(dir.path(), LogConfig::default()).unwrap());
    assert_eq!(log.log_end_offset(), 120, "{lines:?}");
    assert_eq!(log.segment_base_offsets(), [0, 50, 100]);
    assert_eq!(log.damaged().len(), 1, "the mark still holds");
    assert!(log.read(20, 1 << 20, None).is_err());
    for offset in [0, 30, 50, 110] {
        let read = log.read(offset, 1 << 20, None).unwrap().unwrap();
        assert_eq!(read.first_offset, offset);
    }
    assert!(
        lines.iter().any(|l| l.contains("steps over bytes")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("Deleting")), "{lines:?}");
}

#[test]
fn storage_errors_are_logged_once_per_interval_per_log_dir() {
    let enospc = || Error::Io(std::io::Error::from_raw_os_error(libc::ENOSPC));
    let dir = tempfile::tempdir().unwrap();
    let partition = dir.path().join("t-0");
    let ((), lines) = capture(|| {
        for _ in 0..5 {
            let e = super::dir_failure::report(&partition, "appending to", enospc());
            assert_eq!(e.kafka_code(), 56);
        }
        // Not a storage error: not reported.
        super::dir_failure::report(&partition, "appending to", Error::corrupt("bad"));
    });
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert!(
        line.contains("ERROR Error while appending to partition t-0"),
        "{line}"
    );
    assert!(line.contains(&dir.path().display().to_string()), "{line}");
    assert!(line.contains("No space left on device"), "{line}");
}

#[test]
fn poison_batches_leave_the_log_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = three_segments(dir.path());
    let end = (log.log_end_offset(), log.size_bytes());
    let good = batch(0);
    let mut zeroed = good.clone();
    zeroed[61..].fill(0);
    let mut gzip_flag = good.clone();
    gzip_flag[22] |= 1;
    for mut bad in [zeroed, gzip_flag] {
        crate::records::batch::write_crc(&mut bad);
        let shared = log.append_shared(&bad, 0).unwrap_err();
        let in_place = log.append(&mut bad.clone(), 0).unwrap_err();
        for e in [shared, in_place] {
            assert!(matches!(e.kafka_code(), 2 | 87), "{e}");
        }
        assert_eq!((log.log_end_offset(), log.size_bytes()), end);
    }
    log.append(&mut batch(12), 0).unwrap();
    assert_eq!(log.log_end_offset(), 130);
}

/// The scrubber's marks: a flipped record byte (CRC, header intact) in a closed segment is
/// found, refused with CORRUPT_MESSAGE where plain reads would serve it, kept over a
/// restart, and served around once the operator says skip.
#[test]
fn scrubbed_damage_is_refused_then_skipped_on_request() {
    use crate::storage::damage::DamageAction;
    use crate::storage::scrubber::scrub_segment;
    use std::ops::ControlFlow;

    let dir = tempfile::tempdir().unwrap();
    let (mut log, size) = three_segments(dir.path());
    let segment = dir.path().join("00000000000000000000.log");
    poke(&segment, 2 * size + 100, &[0xee]); // inside the third batch's records
                                             // Unscrubbed, the damaged batch is served as stored (its header is sound).
    assert_eq!(log.read(0, 1 << 20, None).unwrap().unwrap().len, 5 * size);

    let mut found = Vec::new();
    for target in log.scrub_targets(false) {
        let out = scrub_segment(&target, |_| ControlFlow::Continue(())).unwrap();
        assert!(out.finished);
        let new = log.record_damage(&target, out.damages).unwrap();
        found.extend(new);
    }
    let [d] = &found[..] else { panic!("{found:?}") };
    assert_eq!(
        (d.segment, d.from, d.to, d.first_offset),
        (0, 2 * size, 3 * size, 20)
    );

    // Reads stop short of it, refuse it, and carry on after it.
    assert_eq!(log.read(0, 1 << 20, None).unwrap().unwrap().len, 2 * size);
    for offset in [20, 25, 29] {
        let err = log.read(offset, 1 << 20, None).unwrap_err();
        assert_eq!(err.kafka_code(), 2, "{err}");
        assert!(err.to_string().contains("failed verification"), "{err}");
    }
    assert_eq!(
        log.read(30, 1 << 20, None).unwrap().unwrap().first_offset,
        30
    );

    // The mark survives a restart; skip serves around it, as a compaction gap.
    log.close().unwrap();
    let mut log = PartitionLog::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(log.damaged().len(), 1);
    assert!(log.read(20, 1 << 20, None).is_err());
    assert_eq!(log.set_damage_action(DamageAction::Skip).unwrap(), 1);
    let after = log.read(20, 1 << 20, None).unwrap().unwrap();
    assert_eq!(after.first_offset, 30);
    // Truncating the log below it drops the mark.
    log.truncate_to(15).unwrap();
    assert!(log.damaged().is_empty());
}
