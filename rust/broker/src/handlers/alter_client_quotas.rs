//! AlterClientQuotas (v0–1): set or remove quota keys of user, client-id, user+client-id
//! and ip entities (null name: the `<default>` entity). Each entity is checked as Kafka's
//! `ClientQuotaControlManager` checks it (entity types and their combination, known keys
//! for the entity, whole numbers for the byte rates) — and a value must be a positive
//! number — and changes all or nothing, with one result per entity; `validate_only` checks
//! without changing. A single node keeps the quotas in its data dir; in cluster mode the
//! controller side writes them to ZooKeeper (`/config/users`, `/config/clients`, as Kafka
//! did) and pushes them to every broker. Needs ALTER_CONFIGS on the cluster.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::AdminOp;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::acl::op;
use crate::security::authz;
use crate::security::quotas::entity::{self, Changes, EntityPairs, QuotaEntity};
use crate::state::BrokerState;

/// An entry's entity and its outcome (Kafka's error code and message on failure).
type Outcome = (EntityPairs, Result<(), (i16, String)>);

/// An entry's checked entity and changes, or (code, message).
fn check(
    pairs: &[(String, Option<String>)],
    ops: &[(String, Option<f64>)],
) -> Result<(QuotaEntity, Changes), String> {
    let entity = entity::entity_of(pairs)?;
    let mut changes: Changes = Vec::new();
    for (key, value) in ops {
        if changes.iter().any(|(k, _)| k == key) {
            return Err(format!(
                "Duplicate quota key {key} not updating quota for this entity {}",
                entity::describe(&entity)
            ));
        }
        entity::check_value(&entity, key, *value)?;
        changes.push((key.clone(), *value));
    }
    Ok((entity, changes))
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AlterClientQuotasRequest::decode(&mut body, version)?;
    let allowed = authz::cluster(state, ctx, op::ALTER_CONFIGS);
    let mut results: Vec<Outcome> = Vec::new();
    let mut accepted: Vec<(QuotaEntity, Changes)> = Vec::new();
    for entry in &request.entries {
        let pairs: EntityPairs = entry
            .entity
            .iter()
            .map(|e| {
                (
                    e.entity_type.to_string(),
                    e.entity_name.as_ref().map(ToString::to_string),
                )
            })
            .collect();
        let ops: Vec<(String, Option<f64>)> = entry
            .ops
            .iter()
            .map(|o| (o.key.to_string(), (!o.remove).then_some(o.value)))
            .collect();
        let outcome = if allowed {
            check(&pairs, &ops).map_err(|m| (codes::INVALID_REQUEST, m))
        } else {
            Err((
                codes::CLUSTER_AUTHORIZATION_FAILED,
                "Cluster authorization failed.".to_string(),
            ))
        };
        let outcome = match outcome {
            Ok((entity, changes)) => {
                if accepted.iter().any(|(e, _)| *e == entity) {
                    Err((
                        codes::INVALID_REQUEST,
                        format!("Ignoring duplicate entity {}", entity::describe(&entity)),
                    ))
                } else {
                    accepted.push((entity, changes));
                    Ok(())
                }
            }
            Err(e) => Err(e),
        };
        results.push((pairs, outcome));
    }
    if !request.validate_only && !accepted.is_empty() {
        if let Err((code, message)) = apply(state, &accepted) {
            for (_, outcome) in &mut results {
                if outcome.is_ok() {
                    *outcome = Err((code, message.clone()));
                }
            }
        }
    }
    let entries = results
        .into_iter()
        .map(|(mut pairs, outcome)| {
            // Kafka answers with the entity's types in its map's order, not the request's.
            pairs.sort_by_key(|(ty, _)| match ty.as_str() {
                entity::CLIENT_ID => 0,
                entity::USER => 1,
                _ => 2,
            });
            let entry = EntryData::default().with_entity(
                pairs
                    .into_iter()
                    .map(|(ty, name)| {
                        EntityData::default()
                            .with_entity_type(StrBytes::from_string(ty))
                            .with_entity_name(name.map(StrBytes::from_string))
                    })
                    .collect(),
            );
            match outcome {
                Ok(()) => entry.with_error_message(None),
                Err((code, message)) => entry
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    encode(
        &AlterClientQuotasResponse::default().with_entries(entries),
        version,
    )
    .map(Some)
}

/// Store the changes: in the data dir, or through the controller side into ZooKeeper.
fn apply(state: &BrokerState, changes: &[(QuotaEntity, Changes)]) -> Result<(), (i16, String)> {
    let quotas = &state.security.quotas.store;
    if quotas.is_local() {
        return quotas.alter(changes).map_err(|e| {
            (
                codes::KAFKA_STORAGE_ERROR,
                format!("cannot store the quotas: {e}"),
            )
        });
    }
    let args: Vec<serde_json::Value> = changes
        .iter()
        .map(|(entity, ops)| {
            serde_json::json!({
                "entity": entity.iter().collect::<Vec<_>>(),
                "ops": ops,
            })
        })
        .collect();
    state
        .ask_controller(AdminOp::Controller {
            op: "alter_client_quotas".into(),
            args: serde_json::Value::Array(args).to_string(),
        })
        .map_err(|e| (e.code, e.message))
}
