//! The state of one share-partition (a share group's view of one topic partition), kept by
//! the partition's leader as Kafka's `SharePartition` keeps it: the share-partition start
//! offset (every record below it is done with), the end offset (the next record never yet
//! acquired), and between them the in-flight records, each available, acquired (by one
//! member, under a lock that expires), acknowledged or archived, with its delivery count.
//!
//! Rules, as Kafka's: a record is acquired only while available; a member acknowledges only
//! records it holds (else INVALID_RECORD_STATE, and none of that partition's batches is
//! applied); a released or lock-expired record becomes available again unless its delivery
//! count reached `share.delivery.count.limit`, then it is archived; a rejected one is
//! archived; the start offset moves past every leading acknowledged or archived record.

use std::collections::BTreeMap;

use crate::errors::{codes, ApiError};

/// A record's delivery state; the numbers are Kafka's `RecordState` ids, as persisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordState {
    Available = 0,
    Acquired = 1,
    Acknowledged = 2,
    Archived = 4,
}

impl RecordState {
    #[must_use]
    pub fn from_id(id: i8) -> Option<RecordState> {
        match id {
            0 => Some(RecordState::Available),
            1 => Some(RecordState::Acquired),
            2 => Some(RecordState::Acknowledged),
            4 => Some(RecordState::Archived),
            _ => None,
        }
    }
}

/// Acknowledge types of ShareFetch/ShareAcknowledge batches.
pub mod ack {
    pub const GAP: i8 = 0;
    pub const ACCEPT: i8 = 1;
    pub const RELEASE: i8 = 2;
    pub const REJECT: i8 = 3;
    pub const RENEW: i8 = 4;
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct InFlight {
    state: RecordState,
    delivery_count: i16,
    /// The member holding an acquired record.
    owner: Option<String>,
    lock_until_ms: i64,
}

/// One acknowledgement batch as the request carries it.
#[derive(Clone, Debug)]
pub struct AckBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    /// One type for the whole range, or one per offset.
    pub types: Vec<i8>,
}

/// Acquired offsets handed to a member: (first, last, delivery count).
pub type Acquired = (i64, i64, i16);

/// What acquisition and acknowledgement are bounded by (the group's configs).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub lock_duration_ms: i64,
    pub delivery_count_limit: i16,
    pub max_record_locks: i64,
}

#[derive(Clone, Debug, Default)]
pub struct SharePartitionState {
    start_offset: i64,
    end_offset: i64,
    records: BTreeMap<i64, InFlight>,
    /// Bumped whenever the persisted view changes (what the coordinator writes).
    pub state_epoch: i32,
}

/// A persisted batch: (first, last, state id, delivery count), as ShareSnapshotValue has it.
pub type StateBatch = (i64, i64, i8, i16);

impl SharePartitionState {
    /// A share-partition starting at `start_offset` with nothing in flight.
    #[must_use]
    pub fn starting_at(start_offset: i64) -> SharePartitionState {
        SharePartitionState {
            start_offset,
            end_offset: start_offset,
            records: BTreeMap::new(),
            state_epoch: 0,
        }
    }

    /// Rebuild from persisted state: acquired records come back available (their locks
    /// died with the broker that granted them).
    #[must_use]
    pub fn from_persisted(start_offset: i64, batches: &[StateBatch]) -> SharePartitionState {
        let mut s = SharePartitionState::starting_at(start_offset);
        for &(first, last, state, delivery_count) in batches {
            let state = match RecordState::from_id(state) {
                Some(RecordState::Acquired) | None => RecordState::Available,
                Some(other) => other,
            };
            for offset in first.max(start_offset)..=last {
                s.records.insert(
                    offset,
                    InFlight {
                        state,
                        delivery_count,
                        owner: None,
                        lock_until_ms: 0,
                    },
                );
                s.end_offset = s.end_offset.max(offset + 1);
            }
        }
        s.advance_start();
        s
    }

    #[must_use]
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    #[must_use]
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    /// The persisted view: start offset and the in-flight records as runs of equal state
    /// and delivery count (acquired records persist as available, as Kafka writes them).
    #[must_use]
    pub fn persisted(&self) -> (i64, Vec<StateBatch>) {
        let mut out: Vec<StateBatch> = Vec::new();
        for (&offset, r) in &self.records {
            let state = match r.state {
                RecordState::Acquired => RecordState::Available,
                s => s,
            } as i8;
            match out.last_mut() {
                Some(last)
                    if last.1 + 1 == offset && last.2 == state && last.3 == r.delivery_count =>
                {
                    last.1 = offset;
                }
                _ => out.push((offset, offset, state, r.delivery_count)),
            }
        }
        (self.start_offset, out)
    }

    /// Records acknowledged or archived at or above the start offset (Kafka's
    /// `deliveryCompleteCount`).
    #[must_use]
    pub fn delivery_complete_count(&self) -> i32 {
        let n = self
            .records
            .values()
            .filter(|r| matches!(r.state, RecordState::Acknowledged | RecordState::Archived))
            .count();
        i32::try_from(n).unwrap_or(i32::MAX)
    }

    /// Counts by state: (available in flight, acquired, acknowledged, archived).
    #[must_use]
    pub fn counts(&self) -> [usize; 4] {
        let mut c = [0; 4];
        for r in self.records.values() {
            let i = match r.state {
                RecordState::Available => 0,
                RecordState::Acquired => 1,
                RecordState::Acknowledged => 2,
                RecordState::Archived => 3,
            };
            c[i] += 1;
        }
        c
    }

    /// Move the start offset to `offset` (the log's start moved past it, or an admin reset):
    /// everything below is dropped.
    pub fn move_start_to(&mut self, offset: i64) {
        if offset <= self.start_offset {
            return;
        }
        self.start_offset = offset;
        self.end_offset = self.end_offset.max(offset);
        self.records = self.records.split_off(&offset);
        self.advance_start();
    }

    /// The first offset a fetch could acquire: the lowest available record, else the end.
    #[must_use]
    pub fn next_fetch_offset(&self) -> i64 {
        self.records
            .iter()
            .find(|(_, r)| r.state == RecordState::Available)
            .map_or(self.end_offset, |(&o, _)| o)
    }

    /// Whether a fetch could acquire anything below `high_watermark`.
    #[must_use]
    pub fn has_acquirable(&self, high_watermark: i64, limits: &Limits) -> bool {
        self.records
            .values()
            .any(|r| r.state == RecordState::Available)
            || (self.end_offset < high_watermark
                && self.end_offset - self.start_offset < limits.max_record_locks)
    }

    /// Acquire for `member` the acquirable offsets of `batches` (base, last, skipped), in
    /// order, stopping after the batch that reaches `max_records` (`strict`: at exactly
    /// `max_records`, Kafka's record-limit acquire mode). Skipped batches (control batches,
    /// and aborted ones under read_committed) are archived outright: no member ever sees
    /// them as records. Returns the acquired runs and, per batch, whether it holds any
    /// acquired offset (the batches to send).
    pub fn acquire(
        &mut self,
        member: &str,
        batches: &[(i64, i64, bool)],
        max_records: usize,
        strict: bool,
        limits: &Limits,
        now_ms: i64,
    ) -> (Vec<Acquired>, Vec<bool>) {
        let mut runs: Vec<Acquired> = Vec::new();
        let mut sent = vec![false; batches.len()];
        let mut count = 0usize;
        for (i, &(base, last, control)) in batches.iter().enumerate() {
            if count >= max_records {
                break;
            }
            for offset in base.max(self.start_offset)..=last {
                let fresh = offset >= self.end_offset;
                if fresh && offset - self.start_offset >= limits.max_record_locks {
                    break;
                }
                if strict && count >= max_records {
                    break;
                }
                if control {
                    if fresh
                        || self.records.get(&offset).map(|r| r.state)
                            == Some(RecordState::Available)
                    {
                        self.records.insert(
                            offset,
                            InFlight {
                                state: RecordState::Archived,
                                delivery_count: 0,
                                owner: None,
                                lock_until_ms: 0,
                            },
                        );
                        self.end_offset = self.end_offset.max(offset + 1);
                    }
                    continue;
                }
                let delivery_count = if fresh {
                    1
                } else {
                    match self.records.get(&offset) {
                        Some(r) if r.state == RecordState::Available => {
                            r.delivery_count.saturating_add(1)
                        }
                        // Between start and end without an entry: never delivered.
                        None => 1,
                        Some(_) => continue,
                    }
                };
                self.records.insert(
                    offset,
                    InFlight {
                        state: RecordState::Acquired,
                        delivery_count,
                        owner: Some(member.to_string()),
                        lock_until_ms: now_ms.saturating_add(limits.lock_duration_ms),
                    },
                );
                self.end_offset = self.end_offset.max(offset + 1);
                sent[i] = true;
                count += 1;
                match runs.last_mut() {
                    Some(run) if run.1 + 1 == offset && run.2 == delivery_count => run.1 = offset,
                    _ => runs.push((offset, offset, delivery_count)),
                }
            }
        }
        self.advance_start();
        (runs, sent)
    }

    /// Apply `member`'s acknowledgements: all of them or, on the first invalid one, none.
    /// Returns whether a record became available again (a waiting fetch may take it).
    pub fn acknowledge(
        &mut self,
        member: &str,
        batches: &[AckBatch],
        renew_allowed: bool,
        limits: &Limits,
        now_ms: i64,
    ) -> Result<bool, ApiError> {
        // Validate first.
        for b in batches {
            if b.first_offset > b.last_offset {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!(
                        "Last offset {} is lower than first offset {}",
                        b.last_offset, b.first_offset
                    ),
                ));
            }
            // None for a span too wide to count (it could never match the types anyway).
            let span = b
                .last_offset
                .checked_sub(b.first_offset)
                .and_then(|d| d.checked_add(1));
            if b.types.is_empty()
                || (b.types.len() != 1 && i64::try_from(b.types.len()).ok() != span)
            {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!(
                        "Acknowledge types count {} does not match the batch {}-{}",
                        b.types.len(),
                        b.first_offset,
                        b.last_offset
                    ),
                ));
            }
            for (k, offset) in (b.first_offset..=b.last_offset).enumerate() {
                let ty = b.types[if b.types.len() == 1 { 0 } else { k }];
                if !(ack::GAP..=ack::RENEW).contains(&ty) || (ty == ack::RENEW && !renew_allowed) {
                    return Err(ApiError::new(
                        codes::INVALID_REQUEST,
                        format!("Invalid acknowledge type {ty}"),
                    ));
                }
                let held = self.records.get(&offset).is_some_and(|r| {
                    r.state == RecordState::Acquired && r.owner.as_deref() == Some(member)
                });
                if !held {
                    return Err(ApiError::new(
                        codes::INVALID_RECORD_STATE,
                        format!("The record state is invalid. The acknowledgement of delivery could not be completed (offset {offset})."),
                    ));
                }
            }
        }
        let mut released = false;
        for b in batches {
            for (k, offset) in (b.first_offset..=b.last_offset).enumerate() {
                let ty = b.types[if b.types.len() == 1 { 0 } else { k }];
                let r = self.records.get_mut(&offset).expect("validated");
                match ty {
                    ack::ACCEPT => Self::settle(r, RecordState::Acknowledged),
                    ack::REJECT | ack::GAP => Self::settle(r, RecordState::Archived),
                    ack::RELEASE => {
                        released |= Self::release_one(r, limits.delivery_count_limit);
                    }
                    _ => r.lock_until_ms = now_ms.saturating_add(limits.lock_duration_ms),
                }
            }
        }
        self.advance_start();
        self.state_epoch = self.state_epoch.wrapping_add(1);
        Ok(released)
    }

    /// Release every record `member` holds (its share session closed or it left the
    /// group). Returns how many came back.
    pub fn release_member(&mut self, member: &str, limits: &Limits) -> usize {
        let mut n = 0;
        for r in self.records.values_mut() {
            if r.state == RecordState::Acquired && r.owner.as_deref() == Some(member) {
                Self::release_one(r, limits.delivery_count_limit);
                n += 1;
            }
        }
        if n > 0 {
            self.advance_start();
            self.state_epoch = self.state_epoch.wrapping_add(1);
        }
        n
    }

    /// Release every record whose acquisition lock expired by `now_ms`. Returns how many.
    pub fn expire_locks(&mut self, now_ms: i64, limits: &Limits) -> usize {
        let mut n = 0;
        for r in self.records.values_mut() {
            if r.state == RecordState::Acquired && r.lock_until_ms <= now_ms {
                Self::release_one(r, limits.delivery_count_limit);
                n += 1;
            }
        }
        if n > 0 {
            self.advance_start();
            self.state_epoch = self.state_epoch.wrapping_add(1);
        }
        n
    }

    fn settle(r: &mut InFlight, state: RecordState) {
        r.state = state;
        r.owner = None;
        r.lock_until_ms = 0;
    }

    /// Back to available, or archived at the delivery limit; true when available.
    fn release_one(r: &mut InFlight, delivery_count_limit: i16) -> bool {
        if r.delivery_count >= delivery_count_limit {
            Self::settle(r, RecordState::Archived);
            false
        } else {
            Self::settle(r, RecordState::Available);
            true
        }
    }

    fn advance_start(&mut self) {
        while let Some(entry) = self.records.first_entry() {
            // An offset below the end with no entry was never in a batch read (a gap left
            // by compaction): there is nothing there to deliver.
            self.start_offset = self.start_offset.max(*entry.key());
            if !matches!(
                entry.get().state,
                RecordState::Acknowledged | RecordState::Archived
            ) {
                break;
            }
            entry.remove();
            self.start_offset += 1;
        }
        // Leading records already gone (dropped below a moved start): nothing to keep.
        if self.records.is_empty() {
            self.start_offset = self.start_offset.max(self.end_offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        lock_duration_ms: 1000,
        delivery_count_limit: 3,
        max_record_locks: 2000,
    };

    fn ack(first: i64, last: i64, ty: i8) -> AckBatch {
        AckBatch {
            first_offset: first,
            last_offset: last,
            types: vec![ty],
        }
    }

    #[test]
    fn two_members_never_hold_the_same_record() {
        let mut s = SharePartitionState::starting_at(0);
        let (a, sent) = s.acquire("a", &[(0, 4, false), (5, 9, false)], 3, false, &LIMITS, 0);
        assert_eq!(
            a,
            vec![(0, 4, 1)],
            "whole batches, stopping after max records"
        );
        assert_eq!(sent, vec![true, false]);
        let (b, _) = s.acquire("b", &[(0, 4, false), (5, 9, false)], 100, false, &LIMITS, 0);
        assert_eq!(b, vec![(5, 9, 1)]);
        assert_eq!(s.end_offset(), 10);
        // b cannot acknowledge a's records.
        let e = s
            .acknowledge("b", &[ack(0, 0, ack::ACCEPT)], false, &LIMITS, 0)
            .unwrap_err();
        assert_eq!(e.code, codes::INVALID_RECORD_STATE);
        s.acknowledge("a", &[ack(0, 4, ack::ACCEPT)], false, &LIMITS, 0)
            .unwrap();
        assert_eq!(s.start_offset(), 5);
    }

    #[test]
    fn release_redelivers_reject_archives_and_the_limit_archives() {
        let mut s = SharePartitionState::starting_at(0);
        s.acquire("a", &[(0, 1, false)], 10, false, &LIMITS, 0);
        let mut types = AckBatch {
            first_offset: 0,
            last_offset: 1,
            types: vec![ack::REJECT, ack::RELEASE],
        };
        assert!(s
            .acknowledge("a", &[types.clone()], false, &LIMITS, 0)
            .unwrap());
        assert_eq!(s.start_offset(), 1, "the rejected record is done with");
        assert_eq!(s.next_fetch_offset(), 1);
        for round in 2..=3 {
            let (got, _) = s.acquire("b", &[(0, 1, false)], 10, false, &LIMITS, 0);
            assert_eq!(got, vec![(1, 1, round)]);
            types = ack(1, 1, ack::RELEASE);
            s.acknowledge("b", &[types.clone()], false, &LIMITS, 0)
                .unwrap();
        }
        // Delivered three times (the limit) and released: archived, never again.
        assert_eq!(s.start_offset(), 2);
        assert_eq!(
            s.acquire("c", &[(0, 1, false)], 10, false, &LIMITS, 0).0,
            vec![]
        );
    }

    #[test]
    fn an_expired_lock_makes_the_record_available() {
        let mut s = SharePartitionState::starting_at(10);
        s.acquire("a", &[(10, 12, false)], 10, false, &LIMITS, 0);
        assert_eq!(s.expire_locks(999, &LIMITS), 0);
        assert_eq!(s.expire_locks(1000, &LIMITS), 3);
        let (got, _) = s.acquire("b", &[(10, 12, false)], 10, false, &LIMITS, 1000);
        assert_eq!(got, vec![(10, 12, 2)]);
        // The old holder's late acknowledgement is refused.
        let e = s.acknowledge("a", &[ack(10, 12, ack::ACCEPT)], false, &LIMITS, 1000);
        assert_eq!(e.unwrap_err().code, codes::INVALID_RECORD_STATE);
    }

    #[test]
    fn invalid_batches_apply_nothing() {
        let mut s = SharePartitionState::starting_at(0);
        s.acquire("a", &[(0, 3, false)], 10, false, &LIMITS, 0);
        let bad = [ack(0, 1, ack::ACCEPT), ack(5, 5, ack::ACCEPT)];
        assert!(s.acknowledge("a", &bad, false, &LIMITS, 0).is_err());
        assert_eq!(s.start_offset(), 0, "the valid first batch was not applied");
        let renew = ack(0, 0, ack::RENEW);
        assert_eq!(
            s.acknowledge("a", std::slice::from_ref(&renew), false, &LIMITS, 0)
                .unwrap_err()
                .code,
            codes::INVALID_REQUEST
        );
        s.acknowledge("a", &[renew], true, &LIMITS, 900).unwrap();
        assert_eq!(
            s.expire_locks(1000, &LIMITS),
            3,
            "offset 0's lock was renewed"
        );
        let huge = AckBatch {
            first_offset: i64::MIN,
            last_offset: i64::MAX,
            types: vec![1, 1],
        };
        assert_eq!(
            s.acknowledge("a", &[huge], false, &LIMITS, 0)
                .unwrap_err()
                .code,
            codes::INVALID_REQUEST
        );
        let reversed = AckBatch {
            first_offset: 2,
            last_offset: 1,
            types: vec![1],
        };
        assert_eq!(
            s.acknowledge("a", &[reversed], false, &LIMITS, 0)
                .unwrap_err()
                .code,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn the_start_offset_passes_gaps_in_the_log() {
        // Compaction left offsets 3-6 out: batches 0-2 and 7-9.
        let mut s = SharePartitionState::starting_at(0);
        s.acquire("a", &[(0, 2, false), (7, 9, false)], 10, false, &LIMITS, 0);
        s.acknowledge("a", &[ack(0, 2, ack::ACCEPT)], false, &LIMITS, 0)
            .unwrap();
        assert_eq!(s.start_offset(), 7);
        s.acknowledge("a", &[ack(7, 9, ack::ACCEPT)], false, &LIMITS, 0)
            .unwrap();
        assert_eq!((s.start_offset(), s.end_offset()), (10, 10));
    }

    #[test]
    fn record_limit_mode_stops_inside_a_batch() {
        let mut s = SharePartitionState::starting_at(0);
        let (got, sent) = s.acquire("a", &[(0, 9, false)], 4, true, &LIMITS, 0);
        assert_eq!((got, sent), (vec![(0, 3, 1)], vec![true]));
        assert_eq!(s.next_fetch_offset(), 4);
    }

    #[test]
    fn persisted_state_round_trips_and_drops_locks() {
        let mut s = SharePartitionState::starting_at(0);
        s.acquire("a", &[(0, 5, false), (6, 6, true)], 10, false, &LIMITS, 0);
        s.acknowledge(
            "a",
            &[AckBatch {
                first_offset: 1,
                last_offset: 2,
                types: vec![ack::ACCEPT, ack::REJECT],
            }],
            false,
            &LIMITS,
            0,
        )
        .unwrap();
        let (start, batches) = s.persisted();
        assert_eq!(start, 0);
        assert_eq!(
            batches,
            vec![
                (0, 0, 0, 1),
                (1, 1, 2, 1),
                (2, 2, 4, 1),
                (3, 5, 0, 1),
                (6, 6, 4, 0)
            ]
        );
        let back = SharePartitionState::from_persisted(start, &batches);
        assert_eq!(back.persisted(), (start, batches));
        assert_eq!(back.next_fetch_offset(), 0);
        assert_eq!(back.end_offset(), 7);
        assert_eq!(back.delivery_complete_count(), 3);
    }
}
