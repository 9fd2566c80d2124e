//! CreateTopics: partitions and configs validated as Kafka does; a single node only takes
//! replication factor 1, and manual assignments only onto itself. In cluster mode the
//! controller side assigns replicas over the live brokers: a request's topics are asked of
//! it together (`BrokerState::ask_controller_all`), each answered within the request's
//! `timeout_ms` or REQUEST_TIMED_OUT on its own.
//! A `timeout_ms` of 0 or less is REQUEST_TIMED_OUT for every topic and creates nothing, as
//! Kafka 4.1.1 answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, CreateTopicsResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::AdminOp;
use crate::config::topic as topic_configs;
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::security::quotas::mutation::MutationQuota;
use crate::state::{validate_topic_name, BrokerState};

/// New partitions one CreateTopics or CreatePartitions request may add, as Kafka's
/// controller limits them: each costs a directory and open files, so an absurd count is
/// refused before anything is created.
pub struct PartitionBudget {
    remaining: i64,
}

impl PartitionBudget {
    pub const PER_REQUEST: i64 = 10_000;

    #[must_use]
    pub fn new() -> Self {
        PartitionBudget {
            remaining: Self::PER_REQUEST,
        }
    }

    pub fn take(&mut self, partitions: i64) -> Result<(), ApiError> {
        if partitions > self.remaining {
            return Err(ApiError::new(
                codes::POLICY_VIOLATION,
                format!(
                    "excessively large number of partitions per request: {partitions} would \
                     exceed the limit of {} new partitions in one request",
                    Self::PER_REQUEST
                ),
            ));
        }
        self.remaining -= partitions.max(0);
        Ok(())
    }
}

impl Default for PartitionBudget {
    fn default() -> Self {
        Self::new()
    }
}

struct Created {
    partitions: i32,
    replication_factor: i16,
    configs: BTreeMap<String, String>,
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = CreateTopicsRequest::decode(&mut body, version)?;
    let mut budget = PartitionBudget::new();
    let mut quota =
        state
            .security
            .quotas
            .mutations(&ctx.principal().name, ctx.client_id, version >= 6);
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &request.topics {
        *counts.entry(t.name.0.as_str()).or_default() += 1;
    }
    let mut outcomes = Vec::with_capacity(request.topics.len());
    // In cluster mode the controller side's operations, asked all together below.
    let mut asked: Vec<AdminOp> = Vec::new();
    for topic in &request.topics {
        let outcome = if counts[topic.name.0.as_str()] > 1 {
            Outcome::Done(Err(ApiError::new(
                codes::INVALID_REQUEST,
                format!("found multiple requests for topic '{}'", topic.name.0),
            )))
        } else if !authz::may_create_topic(state, ctx, &topic.name.0) {
            Outcome::Done(Err(ApiError::new(
                codes::TOPIC_AUTHORIZATION_FAILED,
                "Authorization failed.",
            )))
        } else if request.timeout_ms <= 0 {
            // Kafka 4.1.1's controller gives up on a request whose deadline has passed
            // before creating (or validating) anything: REQUEST_TIMED_OUT, no message,
            // nothing created (the conformance fuzzer found kafkalite creating it).
            Outcome::Answered(
                CreatableTopicResult::default()
                    .with_name(topic.name.clone())
                    .with_error_code(codes::REQUEST_TIMED_OUT)
                    .with_error_message(None)
                    .with_num_partitions(-1)
                    .with_replication_factor(-1),
            )
        } else {
            match create_one(state, topic, request.validate_only, &mut budget, &mut quota) {
                Ok((created, Some(op))) => {
                    asked.push(op);
                    Outcome::Asked(created, asked.len() - 1)
                }
                Ok((created, None)) => Outcome::Done(Ok(created)),
                Err(e) => Outcome::Done(Err(e)),
            }
        };
        outcomes.push(outcome);
    }
    let mut answers: Vec<Option<Result<String, ApiError>>> = if asked.is_empty() {
        Vec::new()
    } else {
        let wait_ms = crate::state::admin_wait_for(request.timeout_ms);
        state
            .ask_controller_all(asked, wait_ms)
            .into_iter()
            .map(Some)
            .collect()
    };
    let results = request
        .topics
        .iter()
        .zip(outcomes)
        .map(|(topic, outcome)| match outcome {
            Outcome::Answered(result) => result,
            Outcome::Done(done) => respond(state, topic, done, version),
            Outcome::Asked(created, k) => {
                let answer = answers[k].take().expect("one answer per operation");
                respond(state, topic, answer.map(|_| created), version)
            }
        })
        .collect();
    ctx.throttle.at_least(quota.throttle_ms());
    encode(
        &CreateTopicsResponse::default()
            .with_topics(results)
            .with_throttle_time_ms(quota.throttle_ms()),
        version,
    )
    .map(Some)
}

/// Where a topic of the request stands before the answers are written.
enum Outcome {
    /// The whole answer, as is.
    Answered(CreatableTopicResult),
    Done(Result<Created, ApiError>),
    /// Asked of the controller side: the operation's index among those asked.
    Asked(Created, usize),
}

fn respond(
    state: &BrokerState,
    topic: &CreatableTopic,
    outcome: Result<Created, ApiError>,
    version: i16,
) -> CreatableTopicResult {
    let result = CreatableTopicResult::default().with_name(topic.name.clone());
    match outcome {
        Ok(created) => {
            // Success carries a null message (Kafka's; the codec's default is "").
            let mut result = result
                .with_error_message(None)
                .with_num_partitions(created.partitions)
                .with_replication_factor(created.replication_factor);
            result = match state.topic(&topic.name.0) {
                Some(t) => result.with_topic_id(t.id),
                // validate_only: Kafka still answers with a fresh topic id (v7+).
                None => result.with_topic_id(uuid::Uuid::new_v4()),
            };
            if version >= 5 {
                result = result.with_configs(Some(describe(state, &created.configs)));
            }
            result
        }
        Err(e) => result
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message)))
            .with_num_partitions(-1)
            .with_replication_factor(-1),
    }
}

fn create_one(
    state: &BrokerState,
    topic: &CreatableTopic,
    validate_only: bool,
    budget: &mut PartitionBudget,
    quota: &mut MutationQuota<'_>,
) -> Result<(Created, Option<AdminOp>), ApiError> {
    let name = topic.name.0.as_str();
    validate_topic_name(name)?;
    if state.topic(name).is_some() {
        return Err(ApiError::new(
            codes::TOPIC_ALREADY_EXISTS,
            format!("Topic '{name}' already exists."),
        ));
    }
    if state.cluster.is_some() {
        return create_in_cluster(state, topic, validate_only, budget, quota);
    }
    let (partitions, replication_factor) = layout(state, topic)?;
    budget.take(i64::from(partitions))?;
    let configs = requested_configs(state, topic)?;
    if !validate_only {
        quota.record(i64::from(partitions))?;
    }
    state.create_topic(name, partitions, configs.clone(), validate_only)?;
    Ok((
        Created {
            partitions,
            replication_factor,
            configs,
        },
        None,
    ))
}

/// Config overrides of the request, normalised as the broker keeps them.
fn requested_configs(
    state: &BrokerState,
    topic: &CreatableTopic,
) -> Result<BTreeMap<String, String>, ApiError> {
    let mut configs = BTreeMap::new();
    for c in &topic.configs {
        let Some(value) = &c.value else {
            return Err(ApiError::new(
                codes::INVALID_CONFIG,
                format!("null value not supported for topic config {}", c.name),
            ));
        };
        configs.insert(c.name.to_string(), value.to_string());
    }
    topic_configs::normalize_all(&state.dynamic.live(), &configs)
}

/// Cluster mode: check what needs no cluster knowledge here; the operation that lets the
/// controller side check the rest against the live brokers (replication factor,
/// assignment) and create.
fn create_in_cluster(
    state: &BrokerState,
    topic: &CreatableTopic,
    validate_only: bool,
    budget: &mut PartitionBudget,
    quota: &mut MutationQuota<'_>,
) -> Result<(Created, Option<AdminOp>), ApiError> {
    let manual = !topic.assignments.is_empty();
    if manual && (topic.num_partitions != -1 || topic.replication_factor != -1) {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "both numPartitions or replicationFactor and replicasAssignments were set; \
             both cannot be used at the same time",
        ));
    }
    let partitions = match (manual, topic.num_partitions) {
        (true, _) => topic.assignments.len() as i32,
        (false, -1) => state.config.num_partitions,
        (false, n) => n,
    };
    let replication_factor = match (manual, topic.replication_factor) {
        (true, _) => topic.assignments[0].broker_ids.len() as i16,
        (false, -1) => state.config.default_replication_factor,
        (false, n) => n,
    };
    if replication_factor <= 0 {
        return Err(ApiError::new(
            codes::INVALID_REPLICATION_FACTOR,
            "replication factor must be larger than 0, or -1 to use the default value",
        ));
    }
    if partitions < 1 {
        return Err(ApiError::new(
            codes::INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ));
    }
    budget.take(i64::from(partitions))?;
    let configs = requested_configs(state, topic)?;
    state.log_config(&configs)?;
    if !validate_only {
        quota.record(i64::from(partitions))?;
    }
    let op = AdminOp::CreateTopic {
        name: topic.name.0.to_string(),
        partitions,
        replication_factor,
        assignments: topic
            .assignments
            .iter()
            .map(|a| {
                (
                    a.partition_index,
                    a.broker_ids.iter().map(|b| b.0).collect(),
                )
            })
            .collect(),
        configs: configs.clone(),
        validate_only,
    };
    Ok((
        Created {
            partitions,
            replication_factor,
            configs,
        },
        Some(op),
    ))
}

/// Partition count and replication factor, from the request or the broker defaults.
fn layout(state: &BrokerState, topic: &CreatableTopic) -> Result<(i32, i16), ApiError> {
    if !topic.assignments.is_empty() {
        if topic.num_partitions != -1 || topic.replication_factor != -1 {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "both numPartitions or replicationFactor and replicasAssignments were set; \
                 both cannot be used at the same time",
            ));
        }
        let mut indexes: Vec<i32> = topic
            .assignments
            .iter()
            .map(|a| a.partition_index)
            .collect();
        indexes.sort_unstable();
        if indexes.iter().enumerate().any(|(i, &p)| p != i as i32) {
            return Err(ApiError::new(
                codes::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "partitions should be numbered 0 through {}, got {indexes:?}",
                    indexes.len() - 1
                ),
            ));
        }
        for a in &topic.assignments {
            check_replicas(state, &a.broker_ids)?;
        }
        return Ok((topic.assignments.len() as i32, 1));
    }
    let factor = if topic.replication_factor == -1 {
        state.config.default_replication_factor
    } else {
        topic.replication_factor
    };
    if factor <= 0 {
        return Err(ApiError::new(
            codes::INVALID_REPLICATION_FACTOR,
            "replication factor must be larger than 0, or -1 to use the default value",
        ));
    }
    if factor > 1 {
        return Err(ApiError::new(
            codes::INVALID_REPLICATION_FACTOR,
            format!(
                "Unable to replicate the partition {factor} time(s): The target replication \
                 factor of {factor} cannot be reached because only 1 broker(s) are registered \
                 or some brokers have all their log directories cordoned."
            ),
        ));
    }
    let partitions = if topic.num_partitions == -1 {
        state.config.num_partitions
    } else {
        topic.num_partitions
    };
    Ok((partitions, factor))
}

/// A manual assignment of one partition: this node must be its only replica.
pub fn check_replicas(state: &BrokerState, replicas: &[BrokerId]) -> Result<(), ApiError> {
    let node = state.config.node_id;
    match replicas {
        [b] if b.0 == node => Ok(()),
        [] => Err(ApiError::new(
            codes::INVALID_REPLICA_ASSIGNMENT,
            "the manual partition assignment includes an empty replica list",
        )),
        _ => {
            let stranger = replicas.iter().find(|b| b.0 != node);
            Err(ApiError::new(
                codes::INVALID_REPLICA_ASSIGNMENT,
                match stranger {
                    Some(b) => format!(
                        "the manual partition assignment includes broker {}, but no such \
                         broker is registered (this is single node {node})",
                        b.0
                    ),
                    None => format!(
                        "the manual partition assignment includes broker {node} more than once"
                    ),
                },
            ))
        }
    }
}

fn describe(
    state: &BrokerState,
    overrides: &BTreeMap<String, String>,
) -> Vec<CreatableTopicConfigs> {
    topic_configs::effective(&state.dynamic.live(), overrides)
        .into_iter()
        .map(|e| {
            CreatableTopicConfigs::default()
                .with_name(StrBytes::from_static_str(e.key.name))
                .with_value(Some(StrBytes::from_string(e.value)))
                .with_read_only(false)
                .with_is_sensitive(false)
                .with_config_source(e.source)
        })
        .collect()
}
