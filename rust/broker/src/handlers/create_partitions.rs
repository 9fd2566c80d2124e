//! CreatePartitions: every requested topic gets a result, success included (clients wait
//! for one per topic). In cluster mode the topics that pass the checks are asked of the
//! controller together, each answered within the request's `timeout_ms` on its own.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::{codes, ApiError};
use crate::handlers::create_topics::{check_replicas, PartitionBudget};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::security::quotas::mutation::MutationQuota;
use crate::state::{admin_wait_for, BrokerState, INTERNAL_OFFSETS_TOPIC};

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = CreatePartitionsRequest::decode(&mut body, version)?;
    let mut budget = PartitionBudget::new();
    let mut quota =
        state
            .security
            .quotas
            .mutations(&ctx.principal().name, ctx.client_id, version >= 3);
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &request.topics {
        *counts.entry(t.name.0.as_str()).or_default() += 1;
    }
    // Checked one by one; those that pass are grown together (in cluster mode asked of the
    // controller at once, each answered within the request's timeout on its own).
    let checked: Vec<Result<(), ApiError>> = request
        .topics
        .iter()
        .map(|t| {
            if counts[t.name.0.as_str()] > 1 {
                Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("found multiple requests for topic '{}'", t.name.0),
                ))
            } else if !authz::topic(state, ctx, authz::operation::ALTER, &t.name.0) {
                Err(ApiError::new(
                    codes::TOPIC_AUTHORIZATION_FAILED,
                    "Authorization failed.",
                ))
            } else {
                check(state, t, request.validate_only, &mut budget, &mut quota)
            }
        })
        .collect();
    let grows = request
        .topics
        .iter()
        .zip(&checked)
        .filter(|(_, c)| c.is_ok())
        .map(|(t, _)| {
            let assignments = t
                .assignments
                .iter()
                .flatten()
                .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                .collect();
            (
                t.name.0.to_string(),
                t.count,
                assignments,
                request.validate_only,
            )
        })
        .collect();
    let mut grown = state
        .create_partitions_all(grows, admin_wait_for(request.timeout_ms))
        .into_iter();
    let results = request
        .topics
        .iter()
        .zip(checked)
        .map(|(t, checked)| {
            let outcome = checked.and_then(|()| grown.next().expect("one outcome per growth"));
            let result = CreatePartitionsTopicResult::default().with_name(t.name.clone());
            match outcome {
                Ok(()) => result,
                // Kafka names an unknown topic by its code alone.
                Err(e) if e.code == codes::UNKNOWN_TOPIC_OR_PARTITION => {
                    result.with_error_code(e.code).with_error_message(None)
                }
                Err(e) => result
                    .with_error_code(e.code)
                    .with_error_message(Some(StrBytes::from_string(e.message))),
            }
        })
        .collect();
    ctx.throttle.at_least(quota.throttle_ms());
    encode(
        &CreatePartitionsResponse::default()
            .with_results(results)
            .with_throttle_time_ms(quota.throttle_ms()),
        version,
    )
    .map(Some)
}

/// Whether `t` may grow as asked (its growth counted against the budget and quota).
fn check(
    state: &BrokerState,
    t: &CreatePartitionsTopic,
    validate_only: bool,
    budget: &mut PartitionBudget,
    quota: &mut MutationQuota<'_>,
) -> Result<(), ApiError> {
    let name = t.name.0.as_str();
    // The group coordinator maps groups onto a fixed set of offsets partitions.
    if name == INTERNAL_OFFSETS_TOPIC {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("the partition count of the internal topic {name} cannot be changed"),
        ));
    }
    let topic = match state.require_topic(name) {
        Ok(topic) => topic,
        // Created by the controller since this broker's last snapshot (CreateTopics is
        // answered at commit, as Kafka's controller answers it): the controller checks the
        // count and the assignments against what it wrote, as Kafka's brokers forward the
        // request unchecked. A topic has a partition, so at most count - 1 are added.
        Err(e) if state.cluster.is_some() && e.code == codes::UNKNOWN_TOPIC_OR_PARTITION => {
            return budget.take(i64::from(t.count) - 1);
        }
        Err(e) => return Err(e),
    };
    budget.take(i64::from(t.count) - i64::from(topic.partition_count()))?;
    // Null means "place them anywhere"; a list (even an empty one, as Kafka holds) must
    // name one assignment per added partition.
    if let Some(assignments) = t.assignments.as_ref() {
        let added = t.count - topic.partition_count();
        if added > 0 && assignments.len() != added as usize {
            return Err(ApiError::new(
                codes::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "Attempted to add {added} additional partition(s), but only {} \
                     assignment(s) were specified.",
                    assignments.len()
                ),
            ));
        }
        // A single node checks them itself; a cluster's controller checks them against
        // the registered brokers (as Kafka's does).
        if state.cluster.is_none() {
            for a in assignments {
                check_replicas(state, &a.broker_ids)?;
            }
        }
    }
    let added = i64::from(t.count) - i64::from(topic.partition_count());
    if !validate_only && added > 0 {
        quota.record(added)?;
    }
    Ok(())
}
