//! Verifying closed segments after the fact, as ZFS and Ceph scrub: every batch's header,
//! CRC-32C and offsets, read in large chunks outside the log's lock. A flipped byte in an
//! old segment would otherwise be served as stored (clients with CRC checks stop at it,
//! others deliver the corrupt value); a scrubbed one is marked (`damage`) and refused.
//!
//! After a damaged batch the walk resumes at the next sound boundary: just past the batch
//! when its header still gives its length, else at the next offset-index entry (index
//! entries are batch starts), else the segment's end.

use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use crate::storage::damage::{Damage, DamageAction};
use crate::storage::scan::{read_header_checked, scan_valid_until};

/// A snapshot of one segment to scrub, taken under the log's lock and used without it.
pub struct ScrubTarget {
    pub base_offset: i64,
    pub file: Arc<File>,
    pub size: u64,
    pub log_path: PathBuf,
    /// Byte positions of the segment's offset-index entries, ascending.
    pub index_positions: Vec<u64>,
}

/// What scrubbing one segment found.
#[derive(Debug, Default)]
pub struct SegmentScrub {
    pub bytes: u64,
    pub batches: u64,
    pub damages: Vec<Damage>,
    /// False when `pace` stopped the walk before the end.
    pub finished: bool,
}

/// Verify every batch of `target`. `pace(bytes)` is called after each sound batch; it may
/// sleep (to keep to a rate) or stop the walk.
pub fn scrub_segment(
    target: &ScrubTarget,
    mut pace: impl FnMut(u64) -> ControlFlow<()>,
) -> io::Result<SegmentScrub> {
    let mut out = SegmentScrub::default();
    let mut position = 0;
    let mut next_offset = target.base_offset;
    while position < target.size {
        let end = scan_valid_until(
            &target.file,
            target.size,
            position,
            next_offset,
            |_, header| {
                out.bytes += header.total_size() as u64;
                out.batches += 1;
                next_offset = header.last_offset() + 1;
                pace(header.total_size() as u64)
            },
        )?;
        let Some(why) = end.problem else {
            out.finished = end.valid == target.size;
            return Ok(out);
        };
        let from = end.valid;
        let to = resume_after(target, from)?;
        out.damages.push(Damage {
            segment: target.base_offset,
            segment_size: target.size,
            from,
            to,
            first_offset: next_offset,
            action: DamageAction::Fail,
            why,
        });
        position = to;
    }
    out.finished = true;
    Ok(out)
}

/// Where the next sound batch may start after a damaged one at `from`.
fn resume_after(target: &ScrubTarget, from: u64) -> io::Result<u64> {
    if let Ok(Some(header)) = read_header_checked(&target.file, from, target.size)? {
        return Ok(from + header.total_size() as u64);
    }
    let next = target.index_positions.partition_point(|&p| p <= from);
    Ok(target
        .index_positions
        .get(next)
        .copied()
        .unwrap_or(target.size))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::*;
    use crate::records::{encode_batch, Compression, RecordInput};

    /// Ten batches of one 100-byte record at offsets 100.., and their positions.
    fn segment() -> (File, Vec<u64>, u64) {
        let file = tempfile::tempfile().unwrap();
        let mut positions = Vec::new();
        let mut end = 0;
        for i in 0..10i64 {
            let record = RecordInput {
                timestamp: 1_000,
                key: None,
                value: Some(vec![i as u8; 100]),
                headers: Vec::new(),
            };
            let mut batch = encode_batch(&[record], Compression::None, 0).unwrap();
            batch[..8].copy_from_slice(&(100 + i).to_be_bytes());
            file.write_all_at(&batch, end).unwrap();
            positions.push(end);
            end += batch.len() as u64;
        }
        (file, positions, end)
    }

    fn target(file: File, index_positions: Vec<u64>, size: u64) -> ScrubTarget {
        ScrubTarget {
            base_offset: 100,
            file: Arc::new(file),
            size,
            log_path: PathBuf::from("00000000000000000100.log"),
            index_positions,
        }
    }

    #[test]
    fn a_sound_segment_has_no_damage_and_pace_can_stop_it() {
        let (file, positions, size) = segment();
        let t = target(file, positions, size);
        let all = scrub_segment(&t, |_| ControlFlow::Continue(())).unwrap();
        assert!(all.finished && all.damages.is_empty());
        assert_eq!((all.batches, all.bytes), (10, size));
        let mut seen = 0;
        let stopped = scrub_segment(&t, |_| {
            seen += 1;
            if seen == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert!(!stopped.finished);
        assert_eq!(stopped.batches, 3);
    }

    #[test]
    fn a_flipped_record_byte_is_one_damaged_batch() {
        let (file, positions, size) = segment();
        file.write_all_at(&[0xee], positions[4] + 80).unwrap();
        let t = target(file, vec![], size);
        let out = scrub_segment(&t, |_| ControlFlow::Continue(())).unwrap();
        assert_eq!(out.batches, 9, "the batches after it still check");
        let [d] = &out.damages[..] else {
            panic!("{:?}", out.damages)
        };
        assert_eq!(
            (d.from, d.to, d.first_offset),
            (positions[4], positions[5], 104)
        );
        assert!(d.why.contains("CRC"), "{}", d.why);
    }

    #[test]
    fn a_broken_length_resumes_at_the_next_index_entry() {
        let (file, positions, size) = segment();
        file.write_all_at(&[0x7f], positions[2] + 8).unwrap(); // batch length far too long
        let t = target(file, vec![positions[0], positions[6]], size);
        let out = scrub_segment(&t, |_| ControlFlow::Continue(())).unwrap();
        let [d] = &out.damages[..] else {
            panic!("{:?}", out.damages)
        };
        assert_eq!(
            (d.from, d.to, d.first_offset),
            (positions[2], positions[6], 102)
        );
        assert_eq!(out.batches, 2 + 4);
        // Without an index entry after it, the damage runs to the segment's end.
        let t = target(Arc::try_unwrap(t.file).unwrap(), vec![], size);
        let out = scrub_segment(&t, |_| ControlFlow::Continue(())).unwrap();
        assert_eq!(
            (out.damages[0].from, out.damages[0].to),
            (positions[2], size)
        );
    }
}
