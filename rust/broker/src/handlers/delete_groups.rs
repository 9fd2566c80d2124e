//! DeleteGroups (v0-3): an Empty group goes with its committed offsets (tombstoned in
//! `__consumer_offsets`); one with members is NON_EMPTY_GROUP, an unknown one
//! GROUP_ID_NOT_FOUND. A share group (KIP-932) goes the same way, its share-partition
//! state with it (tombstoned in `__share_group_state`). v3's per-group error message stays
//! null: Kafka 4.4 fills it only for a streams group whose internal topics could not be
//! deleted and for a coordinator failure, neither of which has a cause to name here.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;

use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DeleteGroupsRequest::decode(&mut body, version)?;
    let results = request
        .groups_names
        .iter()
        .map(|id| {
            DeletableGroupResult::default()
                .with_group_id(id.clone())
                .with_error_code(if authz::group(state, ctx, authz::operation::DELETE, id) {
                    match state.share.delete_group(&id.0) {
                        Some(outcome) => {
                            outcome.err().map_or(crate::errors::codes::NONE, |e| e.code)
                        }
                        None => state.groups.delete_group(&id.0),
                    }
                } else {
                    crate::errors::codes::GROUP_AUTHORIZATION_FAILED
                })
        })
        .collect();
    encode(
        &DeleteGroupsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}
