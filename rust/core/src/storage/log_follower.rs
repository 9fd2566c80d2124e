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
