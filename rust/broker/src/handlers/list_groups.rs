//! ListGroups (v0-5): every group this broker coordinates with its protocol type, its
//! state from v4 (which may filter by state names) and its type from v5 (KIP-848: which
//! may filter by type names, case-insensitively, as Kafka's `types_filter`);
//! COORDINATOR_LOAD_IN_PROGRESS alongside them while a `__consumer_offsets` partition is
//! still loading, as Kafka answers.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::coordinator::runtime::PartitionedCoordinator;
use crate::groups::errors;
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
    let request = ListGroupsRequest::decode(&mut body, version)?;
    let filter: Vec<String> = request
        .states_filter
        .iter()
        .map(ToString::to_string)
        .collect();
    let types: Vec<String> = request
        .types_filter
        .iter()
        .map(ToString::to_string)
        .collect();
    // Share groups (KIP-932) are listed with protocol type and group type "share".
    let shares = state.share.list().into_iter().filter_map(|(group_id, s)| {
        let keep = filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(s));
        keep.then(|| crate::groups::ListedGroup {
            group_id,
            protocol_type: "share".to_string(),
            group_type: "share",
            state: s,
        })
    });
    let groups = state
        .groups
        .list(&filter)
        .into_iter()
        .chain(shares)
        .filter(|g| authz::may_list_group(state, ctx, &g.group_id))
        .map(|g| {
            let kind = g.group_type;
            (g, kind)
        })
        .filter(|(_, kind)| types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(kind)))
        .map(|(g, kind)| {
            let mut listed = ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(g.group_id)))
                .with_protocol_type(StrBytes::from_string(g.protocol_type));
            if version >= 4 {
                listed = listed.with_group_state(StrBytes::from_static_str(g.state));
            }
            if version >= 5 {
                listed = listed.with_group_type(StrBytes::from_static_str(kind));
            }
            listed
        })
        .collect();
    let error = if state.groups.shards().is_loading() {
        errors::COORDINATOR_LOAD_IN_PROGRESS
    } else {
        errors::NONE
    };
    let response = ListGroupsResponse::default()
        .with_error_code(error)
        .with_groups(groups);
    encode(&response, version).map(Some)
}
