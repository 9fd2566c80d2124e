//! DescribeClientQuotas (v0–1): the quotas of every entity the filter matches (Kafka's
//! `ClientQuotasImage.describe`: exact name, `<default>`, or any entity of a type; `strict`
//! asks for entities with exactly the filter's types). A bad filter is INVALID_REQUEST
//! with Kafka's message, and no entries. Needs DESCRIBE_CONFIGS on the cluster.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    DescribeClientQuotasRequest, DescribeClientQuotasResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::acl::op;
use crate::security::authz;
use crate::security::quotas::entity::Filter;
use crate::state::BrokerState;

fn refused(code: i16, message: String, version: i16) -> anyhow::Result<Option<ResponseBody>> {
    encode(
        &DescribeClientQuotasResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message)))
            .with_entries(None),
        version,
    )
    .map(Some)
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeClientQuotasRequest::decode(&mut body, version)?;
    if !authz::cluster(state, ctx, op::DESCRIBE_CONFIGS) {
        return refused(
            codes::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.".into(),
            version,
        );
    }
    let components: Vec<(String, i8, Option<String>)> = request
        .components
        .iter()
        .map(|c| {
            (
                c.entity_type.to_string(),
                c.match_type,
                c._match.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    let filter = match Filter::new(&components, request.strict) {
        Ok(f) => f,
        Err(message) => return refused(codes::INVALID_REQUEST, message, version),
    };
    let entries = state
        .security
        .quotas
        .store
        .all()
        .into_iter()
        .filter(|(entity, _)| filter.matches(entity))
        .map(|(entity, values)| {
            EntryData::default()
                .with_entity(
                    entity
                        .into_iter()
                        .map(|(ty, name)| {
                            EntityData::default()
                                .with_entity_type(StrBytes::from_string(ty))
                                .with_entity_name(name.map(StrBytes::from_string))
                        })
                        .collect(),
                )
                .with_values(
                    values
                        .into_iter()
                        .map(|(key, value)| {
                            ValueData::default()
                                .with_key(StrBytes::from_string(key))
                                .with_value(value)
                        })
                        .collect(),
                )
        })
        .collect();
    encode(
        // Kafka sends an empty (not null) message with a successful describe.
        &DescribeClientQuotasResponse::default()
            .with_error_message(Some(StrBytes::default()))
            .with_entries(Some(entries)),
        version,
    )
    .map(Some)
}
