//! Incremental reconciliation of one member towards its target assignment (KIP-848's
//! "current assignment builder"). A member first gives up what it must revoke, keeping its
//! epoch; only once its heartbeat no longer reports those partitions does it move to the
//! target epoch and receive new partitions, and only the partitions no other member still
//! holds (a partition has one owner at a time, so no record is consumed twice).

use uuid::Uuid;

use super::topics::{normalized, overlaps, Assignment};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberState {
    /// At the target epoch with all of its target partitions.
    Stable,
    /// Must stop owning `pending_revocation` before it moves on.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions other members still hold.
    UnreleasedPartitions,
}

impl MemberState {
    /// The name Kafka gives the state (`MemberState.toString`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
        }
    }
}

/// A member's side of the reconciliation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: MemberState,
    /// What the member is told it owns.
    pub assigned: Assignment,
    /// What it owned and must give up.
    pub pending_revocation: Assignment,
}

impl Progress {
    /// A member that just joined: epoch 0, nothing owned.
    #[must_use]
    pub fn joining() -> Progress {
        Progress {
            epoch: 0,
            previous_epoch: 0,
            state: MemberState::Stable,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
        }
    }

    /// Every partition this member holds (assigned or not yet revoked).
    pub fn holds(&self) -> impl Iterator<Item = (Uuid, i32)> + '_ {
        self.assigned
            .iter()
            .chain(&self.pending_revocation)
            .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
    }
}

/// The next step of a member towards `target` (at `target_epoch`), given what it reported
/// owning in this heartbeat (`None`: not reported) and whether another member still holds
/// a partition (`held_by_other`).
#[must_use]
pub fn reconcile(
    current: &Progress,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    held_by_other: impl Fn(Uuid, i32) -> bool,
) -> Progress {
    match current.state {
        MemberState::Stable if current.epoch == target_epoch => current.clone(),
        MemberState::UnrevokedPartitions => match owned {
            Some(owned) if !overlaps(owned, &current.pending_revocation) => {
                next(current, target_epoch, target, Some(owned), held_by_other)
            }
            // Still reporting a partition to revoke (or reporting nothing): wait.
            _ => current.clone(),
        },
        MemberState::Stable | MemberState::UnreleasedPartitions => {
            next(current, target_epoch, target, owned, held_by_other)
        }
    }
}

fn next(
    current: &Progress,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    held_by_other: impl Fn(Uuid, i32) -> bool,
) -> Progress {
    let mut retained = Assignment::new();
    let mut revoke = Assignment::new();
    for (topic, parts) in &current.assigned {
        for &p in parts {
            let keep = target.get(topic).is_some_and(|t| t.contains(&p));
            let into = if keep { &mut retained } else { &mut revoke };
            into.entry(*topic).or_default().insert(p);
        }
    }
    // A member that already reports none of them (an eager classic member rejoins owning
    // nothing) has nothing to revoke first.
    let still_owned = owned.is_none_or(|o| overlaps(o, &revoke));
    if !revoke.is_empty() && still_owned {
        return Progress {
            epoch: current.epoch,
            previous_epoch: current.previous_epoch,
            state: MemberState::UnrevokedPartitions,
            assigned: normalized(retained),
            pending_revocation: normalized(revoke),
        };
    }
    let mut assigned = retained;
    let mut unreleased = false;
    for (topic, parts) in target {
        for &p in parts {
            if assigned.get(topic).is_some_and(|a| a.contains(&p)) {
                continue;
            }
            if held_by_other(*topic, p) {
                unreleased = true;
            } else {
                assigned.entry(*topic).or_default().insert(p);
            }
        }
    }
    Progress {
        epoch: target_epoch,
        previous_epoch: if target_epoch == current.epoch {
            current.previous_epoch
        } else {
            current.epoch
        },
        state: if unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        },
        assigned: normalized(assigned),
        pending_revocation: Assignment::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const T: Uuid = Uuid::from_u128(7);

    fn parts(ps: &[i32]) -> Assignment {
        if ps.is_empty() {
            return Assignment::new();
        }
        Assignment::from([(T, ps.iter().copied().collect::<BTreeSet<i32>>())])
    }

    fn stable(epoch: i32, ps: &[i32]) -> Progress {
        Progress {
            epoch,
            previous_epoch: epoch - 1,
            state: MemberState::Stable,
            assigned: parts(ps),
            pending_revocation: Assignment::new(),
        }
    }

    #[test]
    fn a_new_member_gets_free_partitions_at_the_target_epoch() {
        let p = reconcile(&Progress::joining(), 3, &parts(&[0, 1]), None, |_, _| false);
        assert_eq!(
            p,
            Progress {
                previous_epoch: 0,
                ..stable(3, &[0, 1])
            }
        );
    }

    #[test]
    fn revocation_comes_first_and_keeps_the_epoch() {
        let current = stable(2, &[0, 1, 2, 3]);
        let target = parts(&[0, 1]);
        let p = reconcile(&current, 3, &target, Some(&parts(&[0, 1, 2, 3])), |_, _| {
            false
        });
        assert_eq!(p.state, MemberState::UnrevokedPartitions);
        assert_eq!((p.epoch, p.assigned.clone()), (2, parts(&[0, 1])));
        assert_eq!(p.pending_revocation, parts(&[2, 3]));
        // Still reporting partition 3: no progress.
        let same = reconcile(&p, 3, &target, Some(&parts(&[0, 1, 3])), |_, _| false);
        assert_eq!(same, p);
        // Not reporting owned partitions at all: no progress either.
        assert_eq!(reconcile(&p, 3, &target, None, |_, _| false), p);
        // Revoked: on to epoch 3.
        let done = reconcile(&p, 3, &target, Some(&parts(&[0, 1])), |_, _| false);
        assert_eq!(
            done,
            Progress {
                previous_epoch: 2,
                ..stable(3, &[0, 1])
            }
        );
    }

    #[test]
    fn partitions_still_held_elsewhere_wait_until_released() {
        let current = stable(1, &[0]);
        let target = parts(&[0, 1, 2]);
        let held = |_: Uuid, p: i32| p == 2;
        let p = reconcile(&current, 2, &target, Some(&parts(&[0])), held);
        assert_eq!(p.state, MemberState::UnreleasedPartitions);
        assert_eq!((p.epoch, p.assigned.clone()), (2, parts(&[0, 1])));
        let freed = reconcile(&p, 2, &target, Some(&parts(&[0, 1])), |_, _| false);
        assert_eq!(freed.state, MemberState::Stable);
        assert_eq!(freed.assigned, target);
        assert_eq!(freed.previous_epoch, 1);
    }

    #[test]
    fn a_member_that_no_longer_reports_the_partitions_skips_the_revocation() {
        // An eager classic member gave up everything before it rejoined.
        let current = stable(2, &[0, 1, 2, 3]);
        let p = reconcile(&current, 3, &parts(&[0, 1]), Some(&parts(&[])), |_, _| {
            false
        });
        assert_eq!(
            p,
            Progress {
                previous_epoch: 2,
                ..stable(3, &[0, 1])
            }
        );
    }

    #[test]
    fn a_reconciled_member_stays_as_it_is() {
        let current = stable(4, &[1]);
        assert_eq!(
            reconcile(&current, 4, &parts(&[1]), None, |_, _| true),
            current
        );
    }
}
