//! FindCoordinator (v0-6, batched keys from v4): on a single node this broker coordinates
//! every group and every transactional id; in a cluster the coordinator of a group (key
//! type 0) is the leader of its `__consumer_offsets` partition, and that of a
//! transactional id (key type 1) the leader of its `__transaction_state` partition
//! (`coordinator::runtime::locate`). The first request asks the controller side to create
//! the internal topic, as Kafka does, answering COORDINATOR_NOT_AVAILABLE meanwhile.
//! Each key needs DESCRIBE on its group or transactional id first (else
//! GROUP_AUTHORIZATION_FAILED / TRANSACTIONAL_ID_AUTHORIZATION_FAILED for that key alone).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::{AdminOp, BrokerNode};
use crate::coordinator::runtime::{locate, PartitionedCoordinator};
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::acl::resource;
use crate::security::authz;
use crate::state::BrokerState;

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = FindCoordinatorRequest::decode(&mut body, version)?;
    let denied = |key: &str| -> Option<ApiError> {
        let (kind, code, message) = match request.key_type {
            KEY_TYPE_GROUP => (
                resource::GROUP,
                codes::GROUP_AUTHORIZATION_FAILED,
                "Group authorization failed.",
            ),
            KEY_TYPE_TRANSACTION => (
                resource::TRANSACTIONAL_ID,
                codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "Transactional Id authorization failed.",
            ),
            _ => return None,
        };
        // Kafka's per-key answers (v4+) carry no message; the old form has the error's.
        let message = if version >= 4 { "" } else { message };
        (!authz::allowed(state, ctx, authz::operation::DESCRIBE, kind, key))
            .then(|| ApiError::new(code, message))
    };
    let answer = |key: &str| -> Result<BrokerNode, ApiError> {
        if let Some(refusal) = denied(key) {
            return Err(refusal);
        }
        match request.key_type {
            KEY_TYPE_GROUP => coordinator_of(state, ctx, key, &state.groups, group_topic),
            KEY_TYPE_TRANSACTION => {
                coordinator_of(state, ctx, key, &state.transactions, transaction_topic)
            }
            // Kafka: a key type it does not know (neither group nor transaction) is a bad
            // request.
            // In Kafka's words: INVALID_REQUEST's own message.
            _ => Err(ApiError::new(
                codes::INVALID_REQUEST,
                "This most likely occurs because of a request being malformed by the client \
                 library or the message was sent to an incompatible broker. See the broker logs \
                 for more details.",
            )),
        }
    };
    let response = if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| {
                let base = Coordinator::default().with_key(key.clone());
                match answer(key) {
                    // Kafka names success with an empty message in the per-key answers.
                    Ok(node) => base
                        .with_node_id(BrokerId(node.node_id))
                        .with_host(StrBytes::from_string(node.host))
                        .with_port(node.port)
                        .with_error_message(Some(StrBytes::from_static_str(""))),
                    Err(e) => base
                        .with_node_id(BrokerId(-1))
                        .with_port(-1)
                        .with_error_code(e.code)
                        .with_error_message(Some(StrBytes::from_string(e.message))),
                }
            })
            .collect();
        FindCoordinatorResponse::default().with_coordinators(coordinators)
    } else {
        match answer(&request.key) {
            // Kafka names success by its error's own message, "NONE", before v4.
            Ok(node) => FindCoordinatorResponse::default()
                .with_node_id(BrokerId(node.node_id))
                .with_host(StrBytes::from_string(node.host))
                .with_port(node.port)
                .with_error_message(Some(StrBytes::from_static_str("NONE"))),
            Err(e) => FindCoordinatorResponse::default()
                .with_error_code(e.code)
                .with_error_message(Some(StrBytes::from_string(e.message)))
                .with_node_id(BrokerId(-1))
                .with_port(-1),
        }
    };
    encode(&response, version).map(Some)
}

/// How a coordinator's internal topic is created: (partitions, replication factor,
/// configs).
type TopicSpec = (i32, i16, std::collections::BTreeMap<String, String>);

fn group_topic(state: &BrokerState) -> TopicSpec {
    let c = state.groups.config();
    (
        c.offsets_topic_partitions,
        c.offsets_topic_replication_factor,
        c.offsets_topic_configs(),
    )
}

fn transaction_topic(state: &BrokerState) -> TopicSpec {
    let c = state.transactions.config();
    (
        c.log_partitions,
        c.log_replication_factor,
        c.log_topic_configs(),
    )
}

/// The broker coordinating `key` for `coordinator`.
fn coordinator_of<C: PartitionedCoordinator>(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    key: &str,
    coordinator: &Arc<C>,
    spec: fn(&BrokerState) -> TopicSpec,
) -> Result<BrokerNode, ApiError> {
    let Some(link) = &state.cluster else {
        coordinator.create_local_topic();
        return Ok(this_node(state, ctx));
    };
    let name = coordinator.topic_name();
    let topic = state.topic(name);
    if topic.is_none()
        && coordinator
            .shards()
            .should_ask_creation(kafkalite_core::storage::clock::now_ms())
    {
        let (partitions, replication_factor, configs) = spec(state);
        link.admin.submit(AdminOp::CreateTopic {
            name: name.to_string(),
            partitions,
            replication_factor,
            assignments: Vec::new(),
            configs,
            validate_only: false,
        });
    }
    locate(
        topic.as_deref(),
        key,
        &state.live_brokers_on(ctx.listener_name()),
    )
}

/// This broker, as clients reach it.
fn this_node(state: &BrokerState, ctx: &RequestContext<'_>) -> BrokerNode {
    let (host, port) = state
        .advertised_endpoint_on(ctx.listener_name())
        .unwrap_or_default();
    BrokerNode {
        node_id: state.config.node_id,
        host,
        port,
        rack: None,
        endpoints: Vec::new(),
    }
}
