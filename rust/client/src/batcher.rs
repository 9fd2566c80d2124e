//! [`RecordBatcher`]: records to per-partition RecordBatches as the Java producer's
//! accumulator builds them, for writers that hold many rows at once (the Spark sink's Arrow
//! columns). Partitions follow Kafka's default partitioner: the record's own partition
//! when given, else murmur2 of the key, else (no key) one partition until its batch is
//! full, then the next, as the sticky partitioner does. An idempotent producer's batches
//! get consecutive sequence numbers per partition.

use std::collections::BTreeMap;

use kafkalite_core::records::builder::record_size_max;
use kafkalite_core::records::{BatchBuilder, BatchProducer, Compression, HeaderRef};
use kafkalite_core::Result;

use crate::partitioner::partition_for_key;

/// One finished batch: (partition, RecordBatch bytes, records).
pub type Batch = (i32, Vec<u8>, usize);

pub struct RecordBatcher {
    num_partitions: i32,
    compression: Compression,
    batch_bytes: usize,
    /// (producer id, epoch) of an idempotent producer.
    producer: Option<(i64, i16)>,
    /// The next base sequence per partition.
    sequences: BTreeMap<i32, i32>,
    sticky: i32,
    /// The open batch of each partition, by partition index.
    open: Vec<Option<BatchBuilder>>,
    done: Vec<Batch>,
    /// Buffers to build batches in before allocating new ones.
    spare: Vec<Vec<u8>>,
    /// What a new buffer reserves.
    capacity_bytes: usize,
}

impl RecordBatcher {
    /// Batches of at most `batch_bytes` (unless one record alone is bigger) for a topic of
    /// `num_partitions` (at least 1; the caller bounds it). `sequences` holds the next
    /// base sequence per partition (missing: 0); `sticky` is the partition keyless records
    /// start at; `spare` are buffers to reuse and `capacity_bytes` what a fresh one
    /// reserves.
    #[must_use]
    pub fn new(
        num_partitions: i32,
        compression: Compression,
        batch_bytes: usize,
        producer: Option<(i64, i16)>,
        sequences: BTreeMap<i32, i32>,
        sticky: i32,
    ) -> RecordBatcher {
        assert!(num_partitions >= 1, "a topic has at least one partition");
        let mut open = Vec::new();
        open.resize_with(num_partitions as usize, || None);
        RecordBatcher {
            num_partitions,
            compression,
            batch_bytes,
            producer,
            sequences,
            sticky: sticky.rem_euclid(num_partitions),
            open,
            done: Vec::new(),
            spare: Vec::new(),
            capacity_bytes: batch_bytes.min(1 << 20),
        }
    }

    /// Reuse `spare` buffers (their pages are mapped already) and reserve at most
    /// `capacity_bytes` for each new one.
    #[must_use]
    pub fn with_buffers(mut self, spare: Vec<Vec<u8>>, capacity_bytes: usize) -> RecordBatcher {
        self.spare = spare;
        self.capacity_bytes = capacity_bytes.min(self.batch_bytes);
        self
    }

    /// Add one record. `partition` must be within the topic when given.
    pub fn add(
        &mut self,
        timestamp: i64,
        partition: Option<i32>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<()> {
        let (mut partition, sticky) = match (partition, key) {
            (Some(p), _) => (p, false),
            (None, Some(key)) => (partition_for_key(key, self.num_partitions), false),
            (None, None) => (self.sticky, true),
        };
        debug_assert!((0..self.num_partitions).contains(&partition));
        let need = record_size_max(key, value, headers);
        while let Some(batch) = &self.open[partition as usize] {
            if batch.is_empty() || batch.size_bytes() + need <= self.batch_bytes {
                break;
            }
            self.seal(partition)?;
            if !sticky {
                break;
            }
            // The sticky partitioner moves on once a batch is full.
            self.sticky = (self.sticky + 1) % self.num_partitions;
            partition = self.sticky;
        }
        let (compression, capacity) = (self.compression, self.capacity_bytes);
        let spare = &mut self.spare;
        self.open[partition as usize]
            .get_or_insert_with(|| match spare.pop() {
                Some(buffer) => BatchBuilder::reusing(compression, buffer),
                None => BatchBuilder::new(compression, capacity),
            })
            .append(timestamp, key, value, headers)
    }

    /// Every batch: the full ones in the order they filled, then the open ones by
    /// partition. Also returns the spare buffers left unused.
    pub fn finish(mut self) -> Result<(Vec<Batch>, Vec<Vec<u8>>)> {
        for partition in 0..self.num_partitions {
            if self.open[partition as usize].is_some() {
                self.seal(partition)?;
            }
        }
        Ok((self.done, self.spare))
    }

    fn seal(&mut self, partition: i32) -> Result<()> {
        let Some(batch) = self.open[partition as usize].take() else {
            return Ok(());
        };
        let count = batch.records();
        let producer = match self.producer {
            Some((id, epoch)) => {
                let sequence = self.sequences.entry(partition).or_insert(0);
                let base_sequence = *sequence;
                *sequence = sequence.wrapping_add(count as i32) & i32::MAX;
                BatchProducer {
                    id,
                    epoch,
                    base_sequence,
                }
            }
            None => BatchProducer::NONE,
        };
        self.done
            .push((partition, batch.finish(0, producer)?, count));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafkalite_core::records::{decode_records, validate_batch};

    fn values(batch: &[u8]) -> Vec<Vec<u8>> {
        decode_records(batch)
            .unwrap()
            .into_iter()
            .map(|r| r.value.unwrap())
            .collect()
    }

    #[test]
    fn batches_stay_within_batch_bytes_and_carry_consecutive_sequences() {
        let mut batcher = RecordBatcher::new(
            3,
            Compression::None,
            1_000,
            Some((7, 1)),
            BTreeMap::from([(2, 40)]),
            0,
        );
        for i in 0..30u8 {
            batcher.add(1, Some(2), None, Some(&[i; 100]), &[]).unwrap();
        }
        let (batches, _) = batcher.finish().unwrap();
        assert!(batches.len() > 3);
        let mut sequence = 40;
        let mut seen = Vec::new();
        for (partition, bytes, count) in &batches {
            assert_eq!(*partition, 2);
            assert!(bytes.len() <= 1_000, "{} bytes", bytes.len());
            let header = validate_batch(bytes).unwrap();
            assert_eq!((header.producer_id, header.base_sequence), (7, sequence));
            sequence += *count as i32;
            seen.extend(values(bytes));
        }
        assert_eq!(seen, (0..30u8).map(|i| vec![i; 100]).collect::<Vec<_>>());
    }

    #[test]
    fn keyless_records_stick_to_a_partition_until_its_batch_is_full() {
        let mut batcher = RecordBatcher::new(3, Compression::None, 500, None, BTreeMap::new(), 5);
        for _ in 0..12 {
            batcher.add(1, None, None, Some(&[0; 100]), &[]).unwrap();
        }
        let (batches, _) = batcher.finish().unwrap();
        let partitions: Vec<i32> = batches.iter().map(|b| b.0).collect();
        // Sticky starts at 5 mod 3 = 2 and moves on with each full batch.
        assert_eq!(partitions[..3], [2, 0, 1]);
        assert_eq!(batches.iter().map(|b| b.2).sum::<usize>(), 12);
    }

    #[test]
    fn keys_go_where_murmur2_puts_them_and_spare_buffers_are_used_first() {
        let spare = vec![Vec::with_capacity(4096), Vec::with_capacity(4096)];
        let mut batcher =
            RecordBatcher::new(4, Compression::Zstd, 1 << 20, None, BTreeMap::new(), 0)
                .with_buffers(spare, 1 << 10);
        for i in 0..50 {
            let key = format!("user-{i}");
            batcher
                .add(1, None, Some(key.as_bytes()), Some(b"a"), &[])
                .unwrap();
        }
        let (batches, spare) = batcher.finish().unwrap();
        assert_eq!(batches.len(), 4, "50 keys reach every partition");
        for (partition, bytes, _) in &batches {
            for record in decode_records(bytes).unwrap() {
                assert_eq!(*partition, partition_for_key(&record.key.unwrap(), 4));
            }
        }
        assert!(
            spare.is_empty(),
            "both spare buffers were used before new ones"
        );
    }
}
