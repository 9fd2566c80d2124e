//! Share sessions (KIP-932), as Kafka's `ShareSessionCache` keeps them: one per (group,
//! member) on the partition leader, holding the partitions the member fetches, so each
//! ShareFetch after the first names only what changed. Epoch 0 opens a session (replacing
//! the member's old one), -1 closes it (the member's acquired records are released), any
//! other must be the session's next epoch: else SHARE_SESSION_NOT_FOUND or
//! INVALID_SHARE_SESSION_EPOCH.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

use crate::errors::{codes, ApiError};

pub const INITIAL_EPOCH: i32 = 0;
pub const FINAL_EPOCH: i32 = -1;

#[derive(Debug, Default)]
pub struct ShareSession {
    /// The epoch the next request must carry.
    pub next_epoch: i32,
    pub partitions: BTreeSet<(Uuid, i32)>,
}

#[derive(Default)]
pub struct ShareSessions {
    sessions: HashMap<(String, String), ShareSession>,
    max_sessions: usize,
}

/// What a request's epoch did to its session.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Opened,
    Continued,
    Closed,
}

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

impl ShareSessions {
    #[must_use]
    pub fn with_limit(max_sessions: usize) -> ShareSessions {
        ShareSessions {
            sessions: HashMap::new(),
            max_sessions,
        }
    }

    /// Check `epoch` for `member`'s session and step it. `added`/`forgotten` change its
    /// partitions (a closing request changes nothing).
    pub fn step(
        &mut self,
        group: &str,
        member: &str,
        epoch: i32,
        added: &[(Uuid, i32)],
        forgotten: &[(Uuid, i32)],
    ) -> Result<Step, ApiError> {
        let key = (group.to_string(), member.to_string());
        match epoch {
            INITIAL_EPOCH => {
                if !self.sessions.contains_key(&key) && self.sessions.len() >= self.max_sessions {
                    return Err(ApiError::new(
                        codes::SHARE_SESSION_LIMIT_REACHED,
                        "The limit of share sessions has been reached.",
                    ));
                }
                let session = ShareSession {
                    next_epoch: 1,
                    partitions: added.iter().copied().collect(),
                };
                self.sessions.insert(key, session);
                Ok(Step::Opened)
            }
            FINAL_EPOCH => {
                if self.sessions.remove(&key).is_none() {
                    return Err(not_found(member));
                }
                Ok(Step::Closed)
            }
            _ => {
                let Some(session) = self.sessions.get_mut(&key) else {
                    return Err(not_found(member));
                };
                if session.next_epoch != epoch {
                    return Err(ApiError::new(
                        codes::INVALID_SHARE_SESSION_EPOCH,
                        format!(
                            "The share session epoch is invalid: expected {}, got {epoch}.",
                            session.next_epoch
                        ),
                    ));
                }
                session.next_epoch = next(epoch);
                session.partitions.extend(added.iter().copied());
                for p in forgotten {
                    session.partitions.remove(p);
                }
                Ok(Step::Continued)
            }
        }
    }

    /// The partitions of `member`'s session.
    #[must_use]
    pub fn partitions(&self, group: &str, member: &str) -> Vec<(Uuid, i32)> {
        self.sessions
            .get(&(group.to_string(), member.to_string()))
            .map(|s| s.partitions.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Keep only the sessions `keep(group, member)` says are still wanted.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        self.sessions.retain(|(g, m), _| keep(g, m));
    }

    /// Drop `member`'s session (it left the group or its session expired).
    pub fn remove(&mut self, group: &str, member: &str) {
        self.sessions
            .remove(&(group.to_string(), member.to_string()));
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

fn not_found(member: &str) -> ApiError {
    ApiError::new(
        codes::SHARE_SESSION_NOT_FOUND,
        format!("The share session for member {member} was not found."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_open_continue_and_close() {
        let t = Uuid::from_u128(1);
        let mut s = ShareSessions::with_limit(1);
        assert_eq!(
            s.step("g", "m", 1, &[], &[]).unwrap_err().code,
            codes::SHARE_SESSION_NOT_FOUND
        );
        assert_eq!(s.step("g", "m", 0, &[(t, 0)], &[]).unwrap(), Step::Opened);
        assert_eq!(
            s.step("g", "x", 0, &[], &[]).unwrap_err().code,
            codes::SHARE_SESSION_LIMIT_REACHED
        );
        assert_eq!(
            s.step("g", "m", 2, &[], &[]).unwrap_err().code,
            codes::INVALID_SHARE_SESSION_EPOCH
        );
        assert_eq!(
            s.step("g", "m", 1, &[(t, 1)], &[(t, 0)]).unwrap(),
            Step::Continued
        );
        assert_eq!(s.partitions("g", "m"), vec![(t, 1)]);
        assert_eq!(s.step("g", "m", 2, &[], &[]).unwrap(), Step::Continued);
        assert_eq!(s.step("g", "m", -1, &[], &[]).unwrap(), Step::Closed);
        assert!(s.is_empty());
    }
}
