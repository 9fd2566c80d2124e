//! Offsets committed inside a transaction (TxnOffsetCommit), as Kafka's group coordinator
//! keeps them: written at once to the group's `__consumer_offsets` partition as a
//! transactional batch of the producer, held aside (not visible to OffsetFetch) until the
//! transaction's marker reaches that partition, then made the group's committed offsets
//! (COMMIT) or dropped (ABORT). Being in the log, they survive a restart or a move of the
//! coordinator: replay holds them aside again until their marker (`offsets_topic`).

use std::sync::Arc;

use super::coordinator::GroupCoordinator;
use super::offsets::{Committed, PendingTxnOffset};
use super::offsets_topic::Write;
use kafkalite_core::error_codes as errors;

/// Who commits a TxnOffsetCommit: the consumer's group metadata as the producer sent it.
#[derive(Clone, Debug)]
pub struct TxnCommitter {
    /// The generation (classic protocol) or member epoch (consumer protocol); -1 for a
    /// producer not in the group.
    pub generation: i32,
    pub member_id: String,
    pub instance: Option<String>,
    /// The request's version: from 6 (KIP-1319) a member of a group that does not exist
    /// is GROUP_ID_NOT_FOUND and a stale member epoch STALE_MEMBER_EPOCH; before, both
    /// are ILLEGAL_GENERATION.
    pub api_version: i16,
}

impl GroupCoordinator {
    /// TxnOffsetCommit of already validated partitions: persisted as the producer's
    /// transactional batch, then held until the transaction ends. The committer is checked
    /// as Kafka's group coordinator checks a transactional commit (`TxnCommitter`;
    /// `Group::validate_txn_commit`): a group that does not exist is created for a
    /// committer outside it (generation -1), as Kafka does.
    pub fn txn_offset_commit(
        self: &Arc<Self>,
        group_id: &str,
        committer: &TxnCommitter,
        producer_id: i64,
        producer_epoch: i16,
        commits: Vec<(String, i32, Committed)>,
    ) -> Result<(), i16> {
        let v6 = committer.api_version >= 6;
        let checked = |g: &super::group::Group| {
            let verdict = match &g.consumer {
                Some(cg) => cg.validate_txn_commit(
                    &committer.member_id,
                    committer.instance.as_deref(),
                    committer.generation,
                ),
                None => g.validate_txn_commit(
                    committer.generation,
                    &committer.member_id,
                    committer.instance.as_deref(),
                ),
            };
            verdict.map_err(|code| match code {
                errors::STALE_MEMBER_EPOCH if !v6 => errors::ILLEGAL_GENERATION,
                other => other,
            })
        };
        let missing = if v6 {
            errors::GROUP_ID_NOT_FOUND
        } else {
            errors::ILLEGAL_GENERATION
        };
        self.with_group(group_id, committer.generation < 0, |g, _| {
            checked(g)?;
            if commits.is_empty() {
                return Ok(());
            }
            let writes: Vec<Write> = commits
                .iter()
                .map(|(t, p, c)| Write::Offset(t, *p, Some(c)))
                .collect();
            self.append_transactional(group_id, &writes, (producer_id, producer_epoch))
                .map_err(|e| e.code)?;
            let mut pending = self.pending_txn.lock().expect("lock");
            let held = pending.entry(producer_id).or_default();
            for (topic, partition, committed) in commits {
                held.retain(|p| !p.same_partition(group_id, &topic, partition));
                held.push(PendingTxnOffset {
                    group: group_id.to_string(),
                    topic,
                    partition,
                    committed,
                });
            }
            Ok(())
        })?
        .unwrap_or(Err(missing))
    }

    /// A marker of `producer_id` was written to `__consumer_offsets` partition `index`:
    /// its offsets for the groups of that partition become committed (or are dropped).
    pub fn complete_txn_offsets(self: &Arc<Self>, index: i32, producer_id: i64, commit: bool) {
        let settled: Vec<PendingTxnOffset> = {
            let mut pending = self.pending_txn.lock().expect("lock");
            let Some(held) = pending.get_mut(&producer_id) else {
                return;
            };
            let (here, elsewhere): (Vec<_>, Vec<_>) = held
                .drain(..)
                .partition(|p| self.index_of(&p.group) == Some(index));
            *held = elsewhere;
            if held.is_empty() {
                pending.remove(&producer_id);
            }
            here
        };
        if !commit {
            return;
        }
        let mut by_group: std::collections::BTreeMap<String, Vec<PendingTxnOffset>> =
            std::collections::BTreeMap::new();
        for p in settled {
            by_group.entry(p.group.clone()).or_default().push(p);
        }
        for (group, offsets) in by_group {
            // Already in the log, made committed by the marker: only memory changes.
            let _ = self.with_group(&group, true, |g, _| {
                for p in offsets {
                    g.offsets.insert(p.topic, p.partition, p.committed);
                }
            });
        }
    }

    /// Does an open transaction hold an offset for this group partition (OffsetFetch with
    /// `require_stable` answers UNSTABLE_OFFSET_COMMIT then)?
    #[must_use]
    pub fn has_pending_offsets(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn
            .lock()
            .expect("lock")
            .values()
            .flatten()
            .any(|p| p.same_partition(group, topic, partition))
    }

    /// Forget the held offsets of the groups of partition `index` (it was unloaded).
    pub(super) fn drop_pending_of(&self, index: i32) {
        let mut pending = self.pending_txn.lock().expect("lock");
        for held in pending.values_mut() {
            held.retain(|p| self.index_of(&p.group) != Some(index));
        }
        pending.retain(|_, held| !held.is_empty());
    }
}
