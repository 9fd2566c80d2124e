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
    pub last_caught_up_ms: i64,
    last_fetch_ms: i64,
    last_fetch_leader_end: i64,
}

#[derive(Debug, Default)]
pub struct ReplicaProgress {
    followers: HashMap<i32, FollowerProgress>,
    /// The log end when this broker took the current epoch: a follower joins the ISR only
    /// once it has everything from before (Kafka's leaderEpochStartOffset check).
    pub epoch_start_offset: i64,
    /// An ISR proposed to the controller side and not yet seen in a snapshot, with when.
    pub pending_isr: Option<(Vec<i32>, i64)>,
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
                        last_caught_up_ms: now_ms,
                        last_fetch_ms: now_ms,
                        last_fetch_leader_end: -1,
                    },
                )
            })
            .collect();
        self.epoch_start_offset = log_end;
        self.pending_isr = None;
    }

    /// The replica set changed within a term (the first snapshot after a partition opened,
    /// a reassignment): followers new to it start as caught up now, the others keep
    /// what they reported.
    pub fn track(&mut self, followers: &[i32], now_ms: i64) {
        self.followers.retain(|id, _| followers.contains(id));
        for &id in followers {
            self.followers.entry(id).or_insert(FollowerProgress {
                log_end: -1,
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

    #[must_use]
    pub fn follower(&self, replica: i32) -> Option<FollowerProgress> {
        self.followers.get(&replica).copied()
    }

    /// The high watermark the ISR allows: the smallest log end over its members (`leader`
    /// has `leader_end`); `None` while some member's log end is unknown.
    ///
    /// A member a pending proposal adds counts from the moment it is proposed (Kafka's
    /// maximal ISR): the controller may make it leader as soon as the proposal is
    /// committed, so nothing may be acknowledged that it lacks.
    #[must_use]
    pub fn isr_high_watermark(&self, leader: i32, isr: &[i32], leader_end: i64) -> Option<i64> {
        let mut hw = leader_end;
        let adding = self
            .pending_isr
            .iter()
            .flat_map(|(proposed, _)| proposed.iter())
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

    /// Whether a proposal older than `resend_ms` still adds members to `isr` and one of
    /// them has not caught up within `lag_ms`: had it been committed, its snapshot would
    /// have come back by now.
    #[must_use]
    pub fn unanswered_additions_lagging(
        &self,
        isr: &[i32],
        lag_ms: i64,
        now_ms: i64,
        resend_ms: i64,
    ) -> bool {
        let Some((proposed, at)) = &self.pending_isr else {
            return false;
        };
        now_ms - at >= resend_ms
            && proposed.iter().any(|id| {
                !isr.contains(id)
                    && self
                        .followers
                        .get(id)
                        .is_none_or(|f| now_ms - f.last_caught_up_ms > lag_ms)
            })
    }

    /// Whether a proposal is in flight (younger than `resend_ms`).
    #[must_use]
    pub fn proposal_pending(&self, now_ms: i64, resend_ms: i64) -> bool {
        self.pending_isr
            .as_ref()
            .is_some_and(|(_, at)| now_ms - at < resend_ms)
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

    #[test]
    fn a_proposed_member_holds_the_high_watermark_until_the_proposal_is_withdrawn() {
        let mut p = ReplicaProgress::default();
        p.become_leader(&[2, 3], 10, 1_000);
        p.record_fetch(2, 10, 10, 1_000);
        p.record_fetch(3, 8, 10, 1_000);
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(10));
        // 3 is proposed for the ISR: from then on nothing it lacks is acknowledged.
        p.pending_isr = Some((vec![1, 2, 3], 1_000));
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(8));
        assert!(!p.unanswered_additions_lagging(&[1, 2], 500, 1_400, 2_000));
        // Unanswered past the resend time while 3 stopped fetching: withdrawn.
        assert!(p.unanswered_additions_lagging(&[1, 2], 500, 3_100, 2_000));
        p.record_fetch(3, 12, 12, 3_100);
        assert!(!p.unanswered_additions_lagging(&[1, 2], 500, 3_100, 2_000));
        assert_eq!(p.isr_high_watermark(1, &[1, 2], 12), Some(10));
    }
}
