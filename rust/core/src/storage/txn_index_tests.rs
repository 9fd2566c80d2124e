use super::*;
use crate::records::{encode_producer_batch, BatchProducer, Compression, RecordInput};
use crate::storage::LogConfig;

fn txn_batch(pid: i64, seq: i32, n: usize) -> Vec<u8> {
    let records: Vec<RecordInput> = (0..n)
        .map(|i| RecordInput {
            timestamp: crate::storage::clock::now_ms(),
            key: Some(vec![b'k']),
            value: Some(vec![i as u8; 8]),
            headers: Vec::new(),
        })
        .collect();
    let producer = BatchProducer {
        id: pid,
        epoch: 0,
        base_sequence: seq,
    };
    let mut b = encode_producer_batch(&records, Compression::None, 0, producer).unwrap();
    b[21..23].copy_from_slice(&ATTR_TRANSACTIONAL.to_be_bytes());
    let crc = crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

#[test]
fn entries_round_trip_in_kafkas_layout() {
    let e = AbortedTxn {
        producer_id: 7,
        first_offset: 10,
        last_offset: 20,
        last_stable_offset: 21,
    };
    let b = e.encode();
    assert_eq!(&b[0..2], &[0, 0]);
    assert_eq!(&b[2..10], &7i64.to_be_bytes());
    assert_eq!(AbortedTxn::decode(&b), Some(e));
    let mut bad = b;
    bad[1] = 1;
    assert_eq!(AbortedTxn::decode(&bad), None);
}

#[test]
fn markers_decode_as_control_batches() {
    let m = marker_batch(5, 2, true, 0, 1_000).unwrap();
    let h = BatchHeader::parse(&m).unwrap();
    assert!(h.is_control() && h.is_transactional());
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (5, 2, -1)
    );
    assert_eq!(control_type(&m), Some(CONTROL_COMMIT));
    let a = marker_batch(5, 2, false, 0, 1_000).unwrap();
    assert_eq!(control_type(&a), Some(CONTROL_ABORT));
    crate::records::validate_batch(&a).unwrap();
}

#[test]
fn lso_aborted_index_and_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::default();
    let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    let mut idx = TxnIndex::open(&log).unwrap();
    // pid 1 writes 0..=2, pid 2 writes 3..=4, pid 1 aborts (5), pid 2 stays open.
    let a = log.append_shared(&txn_batch(1, 0, 3), 0).unwrap();
    idx.on_data(1, a.first_offset);
    let b = log.append_shared(&txn_batch(2, 0, 2), 0).unwrap();
    idx.on_data(2, b.first_offset);
    assert_eq!(idx.first_unstable(), Some(0));
    let m = log
        .append_shared(&marker_batch(1, 0, false, 0, 0).unwrap(), 0)
        .unwrap();
    idx.on_marker(1, m.first_offset, true, 0).unwrap();
    assert_eq!(idx.first_unstable(), Some(3));
    assert_eq!(idx.aborted_between(0, 10), vec![(1, 0)]);
    assert_eq!(idx.aborted_between(6, 10), Vec::<(i64, i64)>::new());
    let bytes = std::fs::read(dir.path().join("00000000000000000000.txnindex")).unwrap();
    assert_eq!(bytes.len(), ENTRY_LEN);
    assert_eq!(AbortedTxn::decode(&bytes).unwrap().last_stable_offset, 3);
    log.close().unwrap();
    drop(log);
    // Reopened: the abort comes from the file, pid 2's open transaction from the tail.
    let log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    let idx = TxnIndex::open(&log).unwrap();
    assert_eq!(idx.aborted_between(0, 10), vec![(1, 0)]);
    assert_eq!(idx.ongoing(), vec![(2, 3)]);
    drop(log);
    // The file lost (unclean shutdown before it was written): the tail scan re-indexes.
    std::fs::remove_file(dir.path().join("00000000000000000000.txnindex")).unwrap();
    let log = PartitionLog::open(dir.path(), config).unwrap();
    let mut idx = TxnIndex::open(&log).unwrap();
    assert_eq!(idx.aborted_between(0, 10), vec![(1, 0)]);
    assert!(dir.path().join("00000000000000000000.txnindex").exists());
    // Truncation below the marker forgets the abort.
    idx.truncate_to(5).unwrap();
    assert!(idx.aborted_between(0, 10).is_empty());
}

#[test]
fn compaction_drops_aborted_batches_and_keeps_markers() {
    use crate::records::decode_records;
    use crate::storage::{compact_shared_with_transactions, CleanupPolicy};
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    let plain = crate::records::encode_batch(
        &[RecordInput {
            timestamp: crate::storage::clock::now_ms(),
            key: Some(vec![b'k']),
            value: Some(b"committed".to_vec()),
            headers: Vec::new(),
        }],
        Compression::None,
        0,
    )
    .unwrap();
    log.append_shared(&plain, 0).unwrap(); // 0
    log.append_shared(&txn_batch(9, 0, 2), 0).unwrap(); // 1..=2, key k
    log.append_shared(&marker_batch(9, 0, false, 0, 0).unwrap(), 0)
        .unwrap(); // 3
    log.roll().unwrap();
    let log = std::sync::Mutex::new(log);
    let aborted = vec![(9, 1, 3)];
    // While the transaction at 1 was open, its segment stays out of a pass.
    let stats =
        compact_shared_with_transactions(&log, i64::MAX / 2, true, aborted.clone(), Some(1))
            .unwrap();
    assert!(stats.skipped.is_some(), "{stats:?}");
    let stats = compact_shared_with_transactions(&log, i64::MAX / 2, true, aborted, None).unwrap();
    assert_eq!(stats.skipped, None);
    let log = log.into_inner().unwrap();
    let slice = log.read(0, 1 << 20, None).unwrap().unwrap();
    let mut buf = vec![0u8; slice.len as usize];
    slice.file.read_exact_at(&mut buf, slice.position).unwrap();
    let mut values = Vec::new();
    let mut controls = 0;
    let mut rest = &buf[..];
    while let Ok(h) = BatchHeader::parse(rest) {
        let batch = &rest[..h.total_size()];
        if h.is_control() {
            controls += 1;
        } else {
            for r in decode_records(batch).unwrap() {
                values.push((r.offset, r.value.unwrap()));
            }
        }
        rest = &rest[h.total_size()..];
    }
    // The aborted values neither survive nor shadow the committed one; the marker stays.
    assert_eq!(values, vec![(0, b"committed".to_vec())]);
    assert_eq!(controls, 1);
}

/// Kafka's cleaner and markers: the marker of a transaction with no data left (aborted
/// here) is stamped with a delete horizon by the first pass and removed by a pass after
/// `delete.retention.ms`; the marker of a transaction whose data is still there stays.
#[test]
fn compaction_removes_markers_of_emptied_transactions_after_delete_retention() {
    use crate::storage::{compact_shared_with_transactions, CleanupPolicy};
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        delete_retention_ms: 1_000,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(dir.path(), config).unwrap();
    log.append_shared(&txn_batch(9, 0, 2), 0).unwrap(); // 0..=1, aborted
    log.append_shared(&marker_batch(9, 0, false, 0, 0).unwrap(), 0)
        .unwrap(); // 2
    log.append_shared(&txn_batch(8, 0, 1), 0).unwrap(); // 3, committed, key k
    log.append_shared(&marker_batch(8, 0, true, 0, 0).unwrap(), 0)
        .unwrap(); // 4
    log.roll().unwrap();
    let log = std::sync::Mutex::new(log);
    let controls = |log: &std::sync::Mutex<PartitionLog>| {
        let log = log.lock().unwrap();
        let slice = log.read(0, 1 << 20, None).unwrap().unwrap();
        let mut buf = vec![0u8; slice.len as usize];
        slice.file.read_exact_at(&mut buf, slice.position).unwrap();
        let mut out = Vec::new();
        let mut rest = &buf[..];
        while let Ok(h) = BatchHeader::parse(rest) {
            if h.is_control() && h.records_count > 0 {
                out.push((h.base_offset, h.producer_id, h.has_delete_horizon()));
            }
            rest = &rest[h.total_size()..];
        }
        out
    };
    let now = 1_000_000;
    let aborted = vec![(9, 0, 2)];
    compact_shared_with_transactions(&log, now, true, aborted.clone(), None).unwrap();
    // First pass: the aborted data goes, its marker is stamped (now + 1 s) and stays.
    assert_eq!(controls(&log), vec![(2, 9, true), (4, 8, false)]);
    // Before the horizon nothing more goes.
    compact_shared_with_transactions(&log, now + 500, true, aborted.clone(), None).unwrap();
    assert_eq!(controls(&log), vec![(2, 9, true), (4, 8, false)]);
    // After it the emptied transaction's marker goes; the committed one keeps its marker.
    compact_shared_with_transactions(&log, now + 1_001, true, aborted, None).unwrap();
    assert_eq!(controls(&log), vec![(4, 8, false)]);
}
