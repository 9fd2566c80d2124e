//! Keeps the fuzzed brokers inside their file limits. Mutated CreateTopics and
//! CreatePartitions frames ask for thousands of partitions at a time (8,193 seen), each
//! holding an open file; Kafka exits when it reaches its descriptor limit, and from then on
//! nothing is compared. Every few seconds the janitor lists each broker's topics and, once
//! they hold more than [`PARTITIONS_KEPT_MAX`] partitions, deletes the topics the scripts
//! did not make and the scripts' topics that fuzzed frames grew (a CreatePartitions took a
//! script's topic past 5,837 partitions), largest first, on both brokers alike (on its own
//! connections, uncompared, never a fuzz frame).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use kafka_protocol::messages::{DeleteTopicsRequest, MetadataRequest};

use crate::scripts::topic;
use crate::session::{Session, SIDE_NAMES};

/// Partitions (internal topics aside) a broker may hold before the janitor deletes: well
/// under a 20,000-descriptor limit even after the next 8,193-partition CreateTopics.
pub const PARTITIONS_KEPT_MAX: usize = 4_000;

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

/// The topics to delete from `listed` (names and partition counts; internal topics never)
/// once they hold more than [`PARTITIONS_KEPT_MAX`] partitions: topics not in `kept` or
/// grown past their count there, largest first, until the rest are within half the limit.
fn to_delete(listed: &[(String, usize)], kept: &HashMap<String, usize>) -> Vec<String> {
    let user: Vec<&(String, usize)> = listed
        .iter()
        .filter(|(n, _)| !n.starts_with("__"))
        .collect();
    let mut total: usize = user.iter().map(|(_, n)| n).sum();
    if total <= PARTITIONS_KEPT_MAX {
        return Vec::new();
    }
    let mut victims: Vec<&&(String, usize)> = user
        .iter()
        .filter(|(name, n)| kept.get(name).is_none_or(|&was| *n > was))
        .collect();
    victims.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let mut doomed = Vec::new();
    for (name, n) in victims {
        if total <= PARTITIONS_KEPT_MAX / 2 {
            break;
        }
        total -= n;
        doomed.push(name.clone());
    }
    doomed
}

/// Delete fuzz-made and fuzz-grown topics until `stop` is set. Internal topics, and the
/// scripts' topics at the size they started with, are never deleted.
pub fn run(kafkalite: &str, kafka: &str, stop: &AtomicBool) -> Result<Deleted, String> {
    let mut s = Session::new(kafkalite, kafka)?;
    // Each side's topics when the fuzzing starts, with their partition counts.
    let mut keep: [Option<HashMap<String, usize>>; 2] = [None, None];
    let mut deleted: Deleted = [0, 0];
    while !stop.load(Relaxed) {
        // The same topics go on both sides (what either side must shed), so the janitor
        // itself never leaves a topic on one broker only.
        let mut doomed: Vec<String> = Vec::new();
        for (side, kept) in keep.iter_mut().enumerate() {
            let Some(listed) = topics(&mut s, side) else {
                continue;
            };
            let Some(kept) = kept.as_ref() else {
                *kept = Some(listed.into_iter().collect());
                continue;
            };
            for name in to_delete(&listed, kept) {
                if !doomed.contains(&name) {
                    doomed.push(name);
                }
            }
        }
        if !doomed.is_empty() {
            let request = DeleteTopicsRequest::default()
                .with_timeout_ms(30_000)
                .with_topic_names(doomed.iter().map(|name| topic(name)).collect());
            for side in 0..2 {
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
        }
        let mut slept = Duration::ZERO;
        while slept < EVERY && !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            slept += Duration::from_millis(100);
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_and_grown_topics_go_largest_first_until_half_the_limit_is_left() {
        let kept: HashMap<String, usize> =
            [("script-a".into(), 3), ("script-b".into(), 127)].into();
        let listed = |extra: &[(&str, usize)]| -> Vec<(String, usize)> {
            [("script-a", 3), ("__consumer_offsets", 50)]
                .iter()
                .chain(extra)
                .map(|(n, c)| (n.to_string(), *c))
                .collect()
        };
        assert!(to_delete(&listed(&[("script-b", 127), ("made", 900)]), &kept).is_empty());
        let grown = listed(&[("script-b", 5_838), ("made-1", 10), ("made-2", 300)]);
        assert_eq!(to_delete(&grown, &kept), ["script-b"]);
        let many = listed(&[("m1", 1_500), ("m2", 1_400), ("m3", 1_300), ("m4", 5)]);
        assert_eq!(to_delete(&many, &kept), ["m1", "m2"]);
    }
}
