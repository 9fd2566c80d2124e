//! DeleteTopics: by name, or by topic id from v6 (a topic named by both is INVALID_REQUEST,
//! as Kafka answers). A `timeout_ms` of 0 or less is REQUEST_TIMED_OUT for every topic and
//! deletes nothing, as Kafka 4.1.1 answers. In cluster mode the request's topics are asked
//! of the controller together, each answered within `timeout_ms` on its own.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    DeleteTopicsRequest, DeleteTopicsResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::security::quotas::mutation::MutationQuota;
use crate::state::{admin_wait_for, BrokerState, INTERNAL_OFFSETS_TOPIC};

/// A topic as the request names it: by name, or (v6) by id with no name, or (v6, refused)
/// by both.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Target {
    Name(String),
    Id(uuid::Uuid),
    Both(String, uuid::Uuid),
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DeleteTopicsRequest::decode(&mut body, version)?;
    let targets: Vec<Target> = request
        .topic_names
        .iter()
        .map(|n| Target::Name(n.0.to_string()))
        .chain(request.topics.iter().map(|t| match &t.name {
            Some(n) if !t.topic_id.is_nil() => Target::Both(n.0.to_string(), t.topic_id),
            Some(n) => Target::Name(n.0.to_string()),
            None => Target::Id(t.topic_id),
        }))
        .collect();
    let mut counts: HashMap<&Target, usize> = HashMap::new();
    for t in &targets {
        *counts.entry(t).or_default() += 1;
    }
    let mut quota =
        state
            .security
            .quotas
            .mutations(&ctx.principal().name, ctx.client_id, version >= 5);
    let checked: Vec<Checked> = targets
        .iter()
        .map(|t| {
            // Kafka 4.1.1's controller gives up on a request whose deadline has passed
            // before deleting anything: REQUEST_TIMED_OUT with no message (fuzzer-found).
            if request.timeout_ms <= 0 && counts[t] == 1 {
                if let Some(result) = timed_out(t) {
                    return Checked::Answered(result);
                }
            }
            check(state, ctx, t, counts[t] > 1, &mut quota)
        })
        .collect();
    let names = checked
        .iter()
        .filter_map(|c| match c {
            Checked::Delete(_, name) => Some(name.clone()),
            Checked::Answered(_) => None,
        })
        .collect();
    let mut outcomes = state
        .delete_topics(names, admin_wait_for(request.timeout_ms))
        .into_iter();
    let responses = checked
        .into_iter()
        .map(|c| match c {
            Checked::Answered(result) => result,
            Checked::Delete(result, name) => {
                let outcome = outcomes.next().expect("one outcome per topic deleted");
                if outcome.is_ok() {
                    // Committed offsets of a deleted topic are tombstoned, as Kafka does;
                    // outside the registry's admin lock (lock order: groups, group, admin,
                    // partition log).
                    state.groups.topic_deleted(&name);
                }
                answer(result, Some(name), outcome)
            }
        })
        .collect();
    ctx.throttle.at_least(quota.throttle_ms());
    encode(
        &DeleteTopicsResponse::default()
            .with_responses(responses)
            .with_throttle_time_ms(quota.throttle_ms()),
        version,
    )
    .map(Some)
}

/// The answer for `target` in a request whose timeout has passed (a topic named by both
/// name and id is refused first, as Kafka does).
fn timed_out(target: &Target) -> Option<DeletableTopicResult> {
    let result = DeletableTopicResult::default()
        .with_error_code(codes::REQUEST_TIMED_OUT)
        .with_error_message(None);
    match target {
        Target::Name(n) => {
            Some(result.with_name(Some(TopicName(StrBytes::from_string(n.clone())))))
        }
        Target::Id(id) => Some(result.with_name(None).with_topic_id(*id)),
        Target::Both(..) => None,
    }
}

/// A topic of the request, checked: answered already, or to delete (by this name).
enum Checked {
    Answered(DeletableTopicResult),
    Delete(DeletableTopicResult, String),
}

fn check(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    target: &Target,
    duplicated: bool,
    quota: &mut MutationQuota<'_>,
) -> Checked {
    let mut result = DeletableTopicResult::default();
    let name = match target {
        Target::Name(name) => Some(name.clone()),
        Target::Id(id) => {
            result = result.with_topic_id(*id);
            state.topic_by_id(*id).map(|t| t.name.clone())
        }
        // Kafka refuses the pair before looking either up, echoing both (the conformance
        // fuzzer found kafkalite deleting the named topic).
        Target::Both(name, id) => {
            return Checked::Answered(
                result
                    .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
                    .with_topic_id(*id)
                    .with_error_code(codes::INVALID_REQUEST)
                    .with_error_message(Some(StrBytes::from_static_str(
                        "You may not specify both topic name and topic id.",
                    ))),
            );
        }
    };
    let outcome = match &name {
        _ if duplicated => Err(ApiError::new(
            codes::INVALID_REQUEST,
            "the topic appears more than once in the request",
        )),
        // Only an id can fail to resolve to a name.
        None => Err(ApiError::new(
            codes::UNKNOWN_TOPIC_ID,
            format!("unknown topic id {}", result.topic_id),
        )),
        Some(n) if !authz::topic(state, ctx, authz::operation::DELETE, n) => Err(ApiError::new(
            codes::TOPIC_AUTHORIZATION_FAILED,
            "Authorization failed.",
        )),
        Some(n) if n == INTERNAL_OFFSETS_TOPIC => Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("the internal topic {n} holds committed offsets and cannot be deleted"),
        )),
        Some(n) => {
            let topic = state.topic(n);
            if let Some(t) = &topic {
                result = result.with_topic_id(t.id);
            }
            // Each partition deleted is one mutation; an unknown topic costs nothing.
            topic.map_or(Ok(()), |t| quota.record(i64::from(t.partition_count())))
        }
    };
    match (outcome, name) {
        (Ok(()), Some(n)) => Checked::Delete(result, n),
        (outcome, name) => Checked::Answered(answer(result, name, outcome)),
    }
}

fn answer(
    result: DeletableTopicResult,
    name: Option<String>,
    outcome: Result<(), ApiError>,
) -> DeletableTopicResult {
    let result = result.with_name(name.map(|n| TopicName(StrBytes::from_string(n))));
    match outcome {
        Ok(()) => result,
        Err(e) => result
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message))),
    }
}
