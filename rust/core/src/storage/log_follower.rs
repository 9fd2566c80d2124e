//! A follower's append (replication): the leader's batches are written as they arrived,
//! with the leader's offsets and leader epochs. Each batch's header and CRC are checked
//! (a bit flipped on the wire must not reach the log), records are not decoded, and the
//! bytes go to the segment in one write.

use super::{AppendInfo, PartitionLog, Result};
use crate::error::Error;
use crate::records::{validate_batch, LOG_OVERHEAD};
use crate::storage::dir_failure;
use crate::storage::segment::WrittenBatch;

/// How many leading bytes of `buf` are whole batches: a Fetch answer may end with a
/// partial batch, which the follower asks for again on its next fetch.
#[must_use]
pub fn complete_batches_len(buf: &[u8]) -> usize {
    let mut position = 0usize;
    while position + LOG_OVERHEAD <= buf.len() {
        let len = i32::from_be_bytes(buf[position + 8..position + 12].try_into().expect("4"));
        let Ok(len) = usize::try_from(len) else {
            break;
        };
        let end = position + LOG_OVERHEAD + len;
        if len == 0 || end > buf.len() {
            break;
        }
        position = end;
    }
    position
}

impl PartitionLog {
    /// Append whole batches copied from the leader, keeping their offsets. A batch that
    /// starts below the log end is refused (the follower must truncate first); gaps above
    /// it are allowed, as compacted leaders have them.
    pub fn append_as_follower(&mut self, buf: &[u8], now_ms: i64) -> Result<AppendInfo> {
        self.check_open()?;
        let mut written = Vec::new();
        let mut next = self.next_offset;
        let mut position = 0usize;
        let mut max_timestamp = -1;
        let mut record_count = 0i64;
        while position < buf.len() {
            let header = validate_batch(&buf[position..])?;
            if header.base_offset < next {
                return Err(Error::corrupt(format!(
                    "replicated batch at offset {} is below the log end {next}",
                    header.base_offset
                )));
            }
            let size = header.total_size();
            written.push(WrittenBatch {
                base_offset: header.base_offset,
                last_offset: header.last_offset(),
                max_timestamp: header.max_timestamp,
                size: size as u64,
            });
            max_timestamp = max_timestamp.max(header.max_timestamp);
            record_count += i64::from(header.records_count);
            next = header.last_offset() + 1;
            position += size;
        }
        let first_offset = written.first().map_or(self.next_offset, |b| b.base_offset);
        if written.is_empty() {
            return Ok(AppendInfo {
                first_offset,
                last_offset: first_offset - 1,
                log_append_time: -1,
                max_timestamp,
                batch_count: 0,
                record_count: 0,
            });
        }
        self.maybe_roll(buf.len() as u64, next - 1, now_ms)
            .map_err(|e| dir_failure::report(&self.dir, "rolling a segment of", e))?;
        let config = self.config.clone();
        self.active()
            .append(&[buf], &written, &config, || Ok(()))
            .map_err(|e| dir_failure::report(&self.dir, "appending to", e))?;
        self.next_offset = next;
        self.messages_since_flush += record_count;
        self.maybe_flush(now_ms)
            .map_err(|e| dir_failure::report(&self.dir, "flushing", e))?;
        Ok(AppendInfo {
            first_offset,
            last_offset: next - 1,
            log_append_time: -1,
            max_timestamp,
            batch_count: written.len(),
            record_count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::BatchHeader;
    use crate::storage::log_tests::batch;
    use crate::storage::LogConfig;

    fn read_all(log: &PartitionLog) -> Vec<u8> {
        let slice = log.read(0, 1 << 30, None).unwrap().unwrap();
        let mut buf = vec![0u8; slice.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&*slice.file, &mut buf, slice.position).unwrap();
        buf
    }

    #[test]
    fn a_follower_keeps_the_leaders_offsets_epochs_and_bytes() {
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut leader = PartitionLog::open(d1.path(), LogConfig::default()).unwrap();
        for i in 0..3 {
            leader
                .append_shared_in_epoch(&batch(i), 0, Some(7))
                .unwrap();
        }
        let bytes = read_all(&leader);
        assert_eq!(
            BatchHeader::parse(&bytes).unwrap().partition_leader_epoch,
            7
        );

        let mut follower = PartitionLog::open(d2.path(), LogConfig::default()).unwrap();
        // A fetch answer cut inside the third batch: only whole batches are appended.
        let cut = &bytes[..bytes.len() - 5];
        let whole = complete_batches_len(cut);
        assert!(whole < cut.len());
        let info = follower.append_as_follower(&cut[..whole], 0).unwrap();
        assert_eq!(
            (info.first_offset, info.last_offset, info.batch_count),
            (0, 19, 2)
        );
        // The same batch again is below the log end: refused, nothing appended.
        assert!(follower.append_as_follower(&cut[..whole], 0).is_err());
        let rest = &bytes[whole..];
        assert_eq!(complete_batches_len(rest), rest.len());
        follower.append_as_follower(rest, 0).unwrap();
        assert_eq!(follower.log_end_offset(), 30);
        assert_eq!(read_all(&follower), bytes);
        // A flipped bit on the wire is caught by the CRC.
        let mut damaged = bytes.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        let d3 = tempfile::tempdir().unwrap();
        let mut other = PartitionLog::open(d3.path(), LogConfig::default()).unwrap();
        assert!(other.append_as_follower(&damaged, 0).is_err());
        assert_eq!(other.log_end_offset(), 0);
    }
}
