//! What a partition's leader knows of its followers, learnt from their Fetch requests:
//! each follower's log end offset and when it was last caught up (Kafka's
//! `Replica.updateFetchState`), from which the leader computes the high watermark (the
//! smallest log end over the ISR) and which followers to drop from or add to the ISR.
//! Plain data under the partition's `progress` lock; `replication` acts on it.

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowerProgress {
    /// -1 until the follower has fetched since this broker became leader.
    pub log_end: i64,
    /// The follower's log start as its Fetch said (-1: not said). A consumer is sent to
    /// read from it only at offsets it holds (KIP-392).
    pub log_start: i64,
    pub last_caught_up_ms: i64,
    last_fetch_ms: i64,
    last_fetch_leader_end: i64,
}

/// An ISR proposed to the controller side whose outcome this leader does not know yet.
#[derive(Debug)]
struct Proposal {
    /// The admin operation's id: ids grow in the order the controller side handles them.
    id: u64,
    isr: Vec<i32>,
    at_ms: i64,
}

#[derive(Debug, Default)]
pub struct ReplicaProgress {
    followers: HashMap<i32, FollowerProgress>,
    /// The log end when this broker took the current epoch: a follower joins the ISR only
    /// once it has everything from before (Kafka's leaderEpochStartOffset check).
    pub epoch_start_offset: i64,
    /// Oldest first. A proposal stays here until it is answered (it was written or
    /// refused, and the snapshot that followed has been applied) or a snapshot shows its
    /// outcome; a resend adds to it rather than replacing what may still be written.
    proposals: Vec<Proposal>,
}

impl ReplicaProgress {
    /// Start leading: every follower's log end is unknown; ISR members count as caught up
    /// now, so they are not dropped before they had a chance to fetch.
    pub fn become_leader(&mut self, followers: &[i32], log_end: i64, now_ms: i64) {
        self.followers = followers
            .iter()
            .map(|&id| {
                (
                    id,
                    FollowerProgress {
                        log_end: -1,
                        log_start: -1,
                        last_caught_up_ms: now_ms,
                        last_fetch_ms: now_ms,
                        last_fetch_leader_end: -1,
                    },
                )
            })
            .collect();
        self.epoch_start_offset = log_end;
        self.proposals.clear();
    }

    /// The replica set changed within a term (the first snapshot after a partition opened,
    /// a reassignment): followers new to it start as caught up now, the others keep
    /// what they reported.
    pub fn track(&mut self, followers: &[i32], now_ms: i64) {
        self.followers.retain(|id, _| followers.contains(id));
        for &id in followers {
            self.followers.entry(id).or_insert(FollowerProgress {
                log_end: -1,
                log_start: -1,
                last_caught_up_ms: now_ms,
                last_fetch_ms: now_ms,
                last_fetch_leader_end: -1,
            });
        }
    }

    /// A follower fetched from `fetch_offset` (its log end) while the leader's log ended at
    /// `leader_end`. Caught up when it has everything the leader has, or everything the
    /// leader had at its previous fetch (then it was caught up as of that fetch).
    pub fn record_fetch(&mut self, replica: i32, fetch_offset: i64, leader_end: i64, now_ms: i64) {
        let f = self.followers.entry(replica).or_insert(FollowerProgress {
            log_end: -1,
            log_start: -1,
            last_caught_up_ms: 0,
            last_fetch_ms: now_ms,
            last_fetch_leader_end: -1,
        });
        if fetch_offset >= leader_end {
            f.last_caught_up_ms = f.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= f.last_fetch_leader_end && f.last_fetch_leader_end >= 0 {
            f.last_caught_up_ms = f.last_caught_up_ms.max(f.last_fetch_ms);
        }
        f.log_end = fetch_offset;
        f.last_fetch_leader_end = leader_end;
        f.last_fetch_ms = now_ms;
    }

    /// The log start offset `replica`'s latest Fetch gave (Kafka's follower sends it in
    /// every Fetch; -1 when it does not).
    pub fn record_log_start(&mut self, replica: i32, log_start: i64) {
        if let Some(f) = self.followers.get_mut(&replica) {
            f.log_start = log_start;
        }
    }

    #[must_use]
    pub fn follower(&self, replica: i32) -> Option<FollowerProgress> {
        self.followers.get(&replica).copied()
    }

    /// The high watermark the ISR allows: the smallest log end over its members (`leader`
    /// has `leader_end`); `None` while some member's log end is unknown.
    ///
    /// A member a proposal adds counts from the moment it is proposed until the proposal's
    /// outcome is known (Kafka's maximal ISR): the controller may make it leader as soon
    /// as the proposal is committed, so nothing may be acknowledged that it lacks.
    #[must_use]
    pub fn isr_high_watermark(&self, leader: i32, isr: &[i32], leader_end: i64) -> Option<i64> {
        let mut hw = leader_end;
        let adding = self
            .proposals
            .iter()
            .flat_map(|p| p.isr.iter())
            .filter(|id| !isr.contains(id));
        for &id in isr.iter().chain(adding) {
            if id == leader {
                continue;
            }
            let end = self.followers.get(&id).map_or(-1, |f| f.log_end);
            if end < 0 {
                return None;
            }
            hw = hw.min(end);
        }
        Some(hw)
    }

    /// ISR members (other than `leader`) not caught up within `lag_ms`.
    #[must_use]
    pub fn lagging(&self, leader: i32, isr: &[i32], lag_ms: i64, now_ms: i64) -> Vec<i32> {
        isr.iter()
            .copied()
            .filter(|&id| id != leader)
            .filter(|id| {
                self.followers
                    .get(id)
                    .is_none_or(|f| now_ms - f.last_caught_up_ms > lag_ms)
            })
            .collect()
    }

    /// `isr` (made from the ISR as this leader knows it) went to the controller side as
    /// operation `id`.
    pub fn proposed(&mut self, id: u64, isr: Vec<i32>, now_ms: i64) {
        // A resend stands for the copies before it: it is settled only after them. So
        // resends while the controller side is unreachable do not pile up.
        self.proposals.retain(|p| p.isr != isr);
        self.proposals.push(Proposal {
            id,
            isr,
            at_ms: now_ms,
        });
    }

    /// Operation `id` was answered, after the snapshot that shows its outcome: it and
    /// every proposal before it (handled before it) are settled.
    pub fn answered(&mut self, id: u64) {
        self.proposals.retain(|p| p.id > id);
    }

    /// A snapshot moved the ISR from `old` to `new`. A proposal it equals was written; any
    /// other, made from an ISR the partition no longer has, will be refused.
    pub fn isr_changed(&mut self, old: &[i32], new: &[i32]) {
        if old == new {
            self.proposals.retain(|p| p.isr != new);
        } else {
            self.proposals.clear();
        }
    }

    /// Whether the latest proposal is younger than `resend_ms` and not yet answered.
    #[must_use]
    pub fn proposal_pending(&self, now_ms: i64, resend_ms: i64) -> bool {
        self.proposals
            .last()
            .is_some_and(|p| now_ms - p.at_ms < resend_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caught_up_times_follow_kafkas_rule() {
        let mut p = ReplicaProgress::default();
        p.become_leader(&[2, 3], 10, 1_000);
        assert_eq!(p.isr_high_watermark(1, &[1, 2, 3], 10), None);
        p.record_fetch(2, 10, 10, 1_100);
        p.record_fetch(3, 4, 10, 1_100);
        assert_eq!(p.isr_high_watermark(1, &[1, 2, 3], 10), Some(4));
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 10), Some(10));
        // 3 reaches what the leader had at its previous fetch: caught up as of then.
        p.record_fetch(3, 10, 15, 1_200);
        p.record_fetch(2, 15, 15, 1_200);
        assert_eq!(p.follower(3).unwrap().last_caught_up_ms, 1_100);
        assert_eq!(p.lagging(1, &[1, 2, 3], 500, 1_650), vec![3]);
        assert_eq!(p.lagging(1, &[1, 2, 3], 500, 1_750), vec![2, 3]);
        assert!(p.lagging(1, &[1, 2, 3], 5_000, 1_700).is_empty());
    }

    /// Leader 1 with followers 2 (at 10) and 3 (at 8).
    fn leading_2_and_3() -> ReplicaProgress {
        let mut p = ReplicaProgress::default();
        p.become_leader(&[2, 3], 10, 1_000);
        p.record_fetch(2, 10, 10, 1_000);
        p.record_fetch(3, 8, 10, 1_000);
        p
    }

    #[test]
    fn a_proposed_member_holds_the_high_watermark_until_the_outcome_is_known() {
        let mut p = leading_2_and_3();
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(10));
        // 3 is proposed for the ISR: from then on nothing it lacks is acknowledged, however
        // long the answer takes and though 3 stops fetching.
        p.proposed(7, vec![1, 2, 3], 1_000);
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(8));
        assert!(p.proposal_pending(2_999, 2_000));
        assert!(!p.proposal_pending(3_000, 2_000));
        // A resend, then the answer to the first: the resend may still be written.
        p.proposed(9, vec![1, 2, 3], 3_000);
        assert_eq!(p.proposals.len(), 1);
        p.answered(7);
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(8));
        p.answered(9);
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(10));
    }

    #[test]
    fn a_snapshot_settles_the_proposals_it_decides() {
        let mut p = leading_2_and_3();
        p.proposed(1, vec![1, 2, 3], 1_000);
        // The same ISR again (another topic changed) decides nothing.
        p.isr_changed(&[1, 2], &[1, 2]);
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(8));
        // Written: 3 is a member now.
        p.isr_changed(&[1, 2], &[1, 2, 3]);
        assert!(!p.proposal_pending(1_000, 2_000));
        // Another change makes a proposal from the old ISR stale: it will be refused.
        p.proposed(2, vec![1, 2], 1_100);
        p.isr_changed(&[1, 2, 3], &[1, 3]);
        assert_eq!(p.isr_high_watermark(1, &[1, 3], 12), Some(8));
        assert!(!p.proposal_pending(1_100, 2_000));
    }
}
