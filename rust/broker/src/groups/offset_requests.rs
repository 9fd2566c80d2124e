//! The group coordinator's offset requests: OffsetCommit, OffsetFetch and OffsetDelete,
//! and the upkeep of committed offsets (a deleted topic's commits, retention).

use std::sync::Arc;

use kafkalite_core::storage::clock::now_ms;

use super::coordinator::{FetchedTopic, GroupCoordinator};
use super::group::{Group, GroupState};
use super::offsets::Committed;
use super::offsets_topic::Write;
use kafkalite_core::error_codes as errors;

impl GroupCoordinator {
    /// OffsetCommit of already validated partitions: persisted, then visible. An error
    /// applies to every partition. `generation` is the member epoch in a consumer-protocol
    /// group, whose members must commit with OffsetCommit v9 or later (`api_version`).
    pub fn commit_offsets(
        self: &Arc<Self>,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        commits: Vec<(String, i32, Committed)>,
        api_version: i16,
    ) -> Result<(), i16> {
        // Simple consumers may commit to a group that does not exist yet; a member of a
        // group that does not exist is from an older life of it.
        self.with_group(group_id, generation < 0, |g, cx| {
            match &g.consumer {
                Some(cg) => cg.validate_commit(member_id, generation, api_version)?,
                None => g.validate_commit(generation, member_id, instance, cx)?,
            }
            if commits.is_empty() {
                return Ok(());
            }
            let writes: Vec<Write> = commits
                .iter()
                .map(|(t, p, c)| Write::Offset(t, *p, Some(c)))
                .collect();
            self.append_replicated(group_id, &writes)
                .map_err(|e| e.code)?;
            for (topic, partition, c) in commits {
                g.offsets.insert(topic, partition, c);
            }
            Ok(())
        })?
        .unwrap_or(Err(errors::ILLEGAL_GENERATION))
    }

    /// OffsetFetch v9 by a member (`member`: its id and epoch): a consumer-protocol group
    /// checks them first (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); classic groups do not.
    pub fn fetch_offsets_as(
        self: &Arc<Self>,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
        member: Option<(&str, i32)>,
    ) -> Result<Vec<FetchedTopic>, i16> {
        if let Some((member_id, epoch)) = member {
            let checked = self.with_group(group_id, false, |g, _| {
                g.consumer
                    .as_ref()
                    .map_or(Ok(()), |cg| cg.validate_fetch(Some(member_id), epoch))
            })?;
            checked.unwrap_or(Ok(()))?;
        }
        self.fetch_offsets(group_id, topics)
    }

    /// OffsetFetch: the requested partitions (`None`: everything the group committed), or
    /// a group-level error.
    pub fn fetch_offsets(
        self: &Arc<Self>,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
    ) -> Result<Vec<FetchedTopic>, i16> {
        let fetched = self.with_group(group_id, false, |g, _| {
            let wanted = topics.clone().unwrap_or_else(|| g.offsets.by_topic());
            wanted
                .into_iter()
                .map(|(topic, partitions)| {
                    let partitions = partitions
                        .into_iter()
                        .map(|p| (p, g.offsets.get(&topic, p).cloned()))
                        .collect();
                    (topic, partitions)
                })
                .collect()
        })?;
        Ok(fetched.unwrap_or_else(|| {
            topics
                .unwrap_or_default()
                .into_iter()
                .map(|(t, parts)| (t, parts.into_iter().map(|p| (p, None)).collect()))
                .collect()
        }))
    }

    /// OffsetDelete: per-partition errors, or a group-level error. Unlike OffsetCommit,
    /// Kafka refuses "" as the group here.
    pub fn delete_offsets(
        self: &Arc<Self>,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<i16>, i16> {
        if group_id.is_empty() {
            return Err(errors::INVALID_GROUP_ID);
        }
        self.with_group(group_id, false, |g, _| {
            let deletable = |g: &Group, topic: &str| match (&g.consumer, g.state) {
                // A consumer-protocol group keeps the offsets of topics it subscribes to.
                (Some(cg), _) if !cg.members.is_empty() => Ok(!cg.is_subscribed_to(topic)),
                (_, GroupState::Empty) => Ok(true),
                (
                    _,
                    GroupState::PreparingRebalance
                    | GroupState::CompletingRebalance
                    | GroupState::Stable,
                ) if g.is_consumer_group() => Ok(!g.is_subscribed_to(topic)),
                _ => Err(errors::NON_EMPTY_GROUP),
            };
            let mut result = Vec::with_capacity(partitions.len());
            let mut gone = Vec::new();
            for (topic, partition) in partitions {
                if deletable(g, topic)? {
                    result.push(errors::NONE);
                    if g.offsets.get(topic, *partition).is_some() {
                        gone.push((topic.as_str(), *partition));
                    }
                } else {
                    result.push(errors::GROUP_SUBSCRIBED_TO_TOPIC);
                }
            }
            let writes: Vec<Write> = gone
                .iter()
                .map(|(t, p)| Write::Offset(t, *p, None))
                .collect();
            if !writes.is_empty() {
                self.append_replicated(group_id, &writes)
                    .map_err(|e| e.code)?;
            }
            for (topic, partition) in gone {
                g.offsets.remove(topic, partition);
            }
            Ok(result)
        })?
        .unwrap_or(Err(errors::GROUP_ID_NOT_FOUND))
    }

    /// Forget the commits of a deleted topic (call without holding the registry's locks).
    pub fn topic_deleted(self: &Arc<Self>, topic: &str) {
        for (id, cell) in self.snapshot() {
            self.with_cell(&cell, |g, _| {
                let partitions = g.offsets.partitions_of(topic);
                let writes: Vec<Write> = partitions
                    .iter()
                    .map(|p| Write::Offset(topic, *p, None))
                    .collect();
                if self.append(&id, &writes, false).is_ok() {
                    for p in partitions {
                        g.offsets.remove(topic, p);
                    }
                }
            });
        }
    }

    /// Expire offsets past `offsets.retention.minutes`, then remove groups left with
    /// nothing (Kafka's periodic cleanup).
    pub fn expire_offsets(self: &Arc<Self>) {
        let now = now_ms();
        let retention = self.config.offsets_retention_ms;
        for (id, cell) in self.snapshot() {
            let removable = self
                .with_cell(&cell, |g, _| {
                    let expired = g.expired_offsets(now, retention);
                    let writes: Vec<Write> = expired
                        .iter()
                        .map(|(t, p)| Write::Offset(t, *p, None))
                        .collect();
                    if self.append(&id, &writes, false).is_ok() {
                        for (t, p) in &expired {
                            g.offsets.remove(t, *p);
                        }
                    }
                    g.is_removable()
                })
                .unwrap_or(false);
            if removable {
                self.remove_group(&id, &cell, |g| g.is_removable());
            }
        }
    }
}
