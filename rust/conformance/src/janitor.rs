//! Keeps the fuzzed brokers inside their file limits. Mutated CreateTopics and
//! CreatePartitions frames ask for thousands of partitions at a time (8,193 seen), each
//! holding an open file; Kafka exits when it reaches its descriptor limit, and from then on
//! nothing is compared. Every few seconds the janitor lists each broker's topics and, once
//! the ones the scripts did not make hold more than [`PARTITIONS_KEPT_MAX`] partitions,
//! deletes them there (on its own connections, uncompared, never a fuzz frame).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use kafka_protocol::messages::{DeleteTopicsRequest, MetadataRequest};

use crate::scripts::topic;
use crate::session::{Session, SIDE_NAMES};

/// Partitions of fuzz-made topics a broker may hold before the janitor deletes them: well
/// under a 20,000-descriptor limit even after the next 8,193-partition CreateTopics.
pub const PARTITIONS_KEPT_MAX: usize = 2_000;

const EVERY: Duration = Duration::from_secs(2);

/// Topics the janitor deleted, per side (kafkalite first).
pub type Deleted = [u64; 2];

/// Each side's topic names and partition counts, or nothing if it did not answer.
fn topics(s: &mut Session, side: usize) -> Option<Vec<(String, usize)>> {
    let request = MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false);
    let answer = s.call_unrecorded(side, &request, 12).ok()?;
    Some(
        answer
            .topics
            .iter()
            .filter_map(|t| Some((t.name.as_ref()?.to_string(), t.partitions.len())))
            .collect(),
    )
}

/// Delete fuzz-made topics until `stop` is set. The topics present when it starts (the
/// scripts' own, and internal ones) are never deleted.
pub fn run(kafkalite: &str, kafka: &str, stop: &AtomicBool) -> Result<Deleted, String> {
    let mut s = Session::new(kafkalite, kafka)?;
    let mut keep: [Option<HashSet<String>>; 2] = [None, None];
    let mut deleted: Deleted = [0, 0];
    while !stop.load(Relaxed) {
        for side in 0..2 {
            let Some(listed) = topics(&mut s, side) else {
                continue;
            };
            let Some(kept) = &keep[side] else {
                keep[side] = Some(listed.into_iter().map(|(name, _)| name).collect());
                continue;
            };
            let made: Vec<&(String, usize)> = listed
                .iter()
                .filter(|(name, _)| !kept.contains(name) && !name.starts_with("__"))
                .collect();
            if made.iter().map(|(_, n)| n).sum::<usize>() <= PARTITIONS_KEPT_MAX {
                continue;
            }
            let request = DeleteTopicsRequest::default()
                .with_timeout_ms(30_000)
                .with_topic_names(made.iter().map(|(name, _)| topic(name)).collect());
            match s.call_unrecorded(side, &request, 4) {
                Ok(answer) => {
                    deleted[side] += answer
                        .responses
                        .iter()
                        .filter(|r| r.error_code == 0)
                        .count() as u64;
                }
                Err(e) => eprintln!("janitor: deleting on {}: {e}", SIDE_NAMES[side]),
            }
        }
        let mut slept = Duration::ZERO;
        while slept < EVERY && !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            slept += Duration::from_millis(100);
        }
    }
    Ok(deleted)
}
