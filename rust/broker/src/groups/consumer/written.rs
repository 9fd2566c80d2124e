//! What of a consumer group is in `__consumer_offsets` (`Written`), the records that change
//! it (`ConsumerWrite`), and which members changed since the last write (`Touched`): the
//! types `group` holds and `persist` fills.

use std::collections::{BTreeMap, BTreeSet};

use super::topics::Assignment;
use crate::groups::consumer_records::{
    ConsumerKey, ConsumerValue, CurrentValue, GroupEpochValue, MemberValue, CURRENT_MEMBER,
    GROUP_EPOCH, MEMBER_METADATA, TARGET_EPOCH, TARGET_MEMBER,
};

/// One record to write: a key and its value (`None`: a tombstone).
pub type ConsumerWrite = (ConsumerKey, Option<ConsumerValue>);

/// A consumer group as its records in the log describe it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub group_epoch: Option<GroupEpochValue>,
    pub assignment_epoch: Option<i32>,
    pub members: BTreeMap<String, MemberValue>,
    pub current: BTreeMap<String, CurrentValue>,
    pub targets: BTreeMap<String, Assignment>,
}

impl Written {
    /// Apply one replayed record (`value` `None`: a tombstone).
    pub fn apply(&mut self, key: &ConsumerKey, value: Option<ConsumerValue>) {
        let member = key.member.clone().unwrap_or_default();
        match (key.kind, value) {
            (GROUP_EPOCH, Some(ConsumerValue::GroupEpoch(v))) => self.group_epoch = Some(v),
            (GROUP_EPOCH, None) => self.group_epoch = None,
            (TARGET_EPOCH, Some(ConsumerValue::TargetEpoch(e))) => self.assignment_epoch = Some(e),
            (TARGET_EPOCH, None) => self.assignment_epoch = None,
            (MEMBER_METADATA, Some(ConsumerValue::Member(m))) => {
                self.members.insert(member, m);
            }
            (MEMBER_METADATA, None) => {
                self.members.remove(&member);
            }
            (CURRENT_MEMBER, Some(ConsumerValue::Current(c))) => {
                self.current.insert(member, c);
            }
            (CURRENT_MEMBER, None) => {
                self.current.remove(&member);
            }
            (TARGET_MEMBER, Some(ConsumerValue::Target(a))) => {
                self.targets.insert(member, a);
            }
            (TARGET_MEMBER, None) => {
                self.targets.remove(&member);
            }
            // A value of another kind than its key: not Kafka's; ignored.
            _ => {}
        }
    }

    /// Whether the records describe a group (its epoch record is there).
    #[must_use]
    pub fn exists(&self) -> bool {
        self.group_epoch.is_some()
    }

    /// Tombstones for every record written (the group is deleted or turned classic).
    #[must_use]
    pub fn tombstones(&self, group: &str) -> Vec<ConsumerWrite> {
        let mut out = Vec::new();
        let members: BTreeSet<&String> = self
            .members
            .keys()
            .chain(self.current.keys())
            .chain(self.targets.keys())
            .collect();
        for member in members {
            for kind in [CURRENT_MEMBER, TARGET_MEMBER, MEMBER_METADATA] {
                out.push((key(group, kind, Some(member)), None));
            }
        }
        if self.assignment_epoch.is_some() {
            out.push((key(group, TARGET_EPOCH, None), None));
        }
        if self.group_epoch.is_some() {
            out.push((key(group, GROUP_EPOCH, None), None));
        }
        out
    }
}

pub(super) fn key(group: &str, kind: i16, member: Option<&String>) -> ConsumerKey {
    ConsumerKey {
        kind,
        group: group.to_string(),
        member: member.cloned(),
    }
}

/// Which members an operation changed since the last write.
#[derive(Clone, Debug, Default)]
pub struct Touched {
    pub(super) members: BTreeSet<String>,
    pub(super) all: bool,
}
