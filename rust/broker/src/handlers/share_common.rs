//! What ShareFetch and ShareAcknowledge share: the request's group and member checks and
//! the acknowledgement batches as the share module takes them.

use uuid::Uuid;

use crate::errors::{codes, ApiError};
use crate::share::partition_state::AckBatch;

/// The group id and member id a share request must carry.
pub fn ids(group: Option<&str>, member: Option<&str>) -> Result<(String, String), ApiError> {
    let group = group
        .filter(|g| !g.is_empty())
        .ok_or_else(|| ApiError::new(codes::INVALID_REQUEST, "GroupId can't be empty."))?;
    let member = member
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::new(codes::INVALID_REQUEST, "MemberId can't be empty."))?;
    Ok((group.to_string(), member.to_string()))
}

/// One partition's acknowledgements.
pub struct PartitionAcks {
    pub topic_id: Uuid,
    pub partition: i32,
    pub batches: Vec<AckBatch>,
}

/// Apply acknowledgements partition by partition: each partition's outcome.
pub fn apply(
    state: &crate::state::BrokerState,
    group: &str,
    member: &str,
    acks: &[PartitionAcks],
    renew: bool,
    authorized: &dyn Fn(Uuid) -> bool,
) -> Vec<(Uuid, i32, Option<ApiError>)> {
    acks.iter()
        .map(|a| {
            let outcome = if authorized(a.topic_id) {
                state
                    .share
                    .acknowledge(group, member, a.topic_id, a.partition, &a.batches, renew)
                    .err()
            } else {
                Some(ApiError::new(
                    codes::TOPIC_AUTHORIZATION_FAILED,
                    "Not authorized to access topics: [Topic authorization failed.]",
                ))
            };
            (a.topic_id, a.partition, outcome)
        })
        .collect()
}
