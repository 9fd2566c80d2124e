//! The checks OffsetCommit and OffsetFetch make against a consumer-protocol group: the
//! member epoch stands where the classic protocol has the generation.

use super::group::ConsumerGroup;
use kafkalite_core::error_codes as errors;

impl ConsumerGroup {
    /// OffsetCommit (`epoch` is the request's generation id or member epoch). A commit
    /// with a negative epoch comes from an admin or a standalone consumer: allowed while
    /// the group has no members. Members using this protocol must commit with v9 or later;
    /// classic members commit with their generation (their member epoch), at any version,
    /// and a stale one is ILLEGAL_GENERATION to them.
    pub fn validate_commit(
        &self,
        member_id: &str,
        epoch: i32,
        api_version: i16,
    ) -> Result<(), i16> {
        if epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(errors::UNKNOWN_MEMBER_ID)?;
        let classic = member.uses_classic_protocol();
        if !classic && api_version < 9 {
            return Err(errors::UNSUPPORTED_VERSION);
        }
        if epoch != member.epoch() {
            return Err(stale(classic));
        }
        Ok(())
    }

    /// TxnOffsetCommit, as Kafka 4.4 checks a transactional commit: as OffsetCommit but at
    /// any version (the producer sends the consumer's group metadata), and a producer
    /// outside the group (epoch -1, no member, no instance) may commit while members are
    /// in it. An epoch older than the member's is refused as stale here; Kafka 4.4 accepts
    /// it for the partitions assigned to the member since before that epoch.
    pub fn validate_txn_commit(
        &self,
        member_id: &str,
        instance: Option<&str>,
        epoch: i32,
    ) -> Result<(), i16> {
        let outsider = epoch == -1 && member_id.is_empty() && instance.is_none();
        if (epoch < 0 && self.members.is_empty()) || outsider {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(errors::UNKNOWN_MEMBER_ID)?;
        if epoch != member.epoch() {
            return Err(stale(member.uses_classic_protocol()));
        }
        Ok(())
    }

    /// OffsetFetch v9 naming a member: it must be one, at its current epoch. Without a
    /// member id (an admin) anything goes.
    pub fn validate_fetch(&self, member_id: Option<&str>, epoch: i32) -> Result<(), i16> {
        let Some(member_id) = member_id else {
            return Ok(());
        };
        if epoch < 0 && member_id.is_empty() {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(errors::UNKNOWN_MEMBER_ID)?;
        if epoch != member.epoch() {
            return Err(stale(member.uses_classic_protocol()));
        }
        Ok(())
    }
}

fn stale(classic: bool) -> i16 {
    if classic {
        errors::ILLEGAL_GENERATION
    } else {
        errors::STALE_MEMBER_EPOCH
    }
}
