//! UpdateFeatures (v0-2): asks to set finalized feature levels (KIP-584). kafkalite's
//! levels are fixed (`features`): a request for the level already finalized succeeds (a
//! no-op, as Kafka answers it), anything else gets INVALID_UPDATE_VERSION (95) with a
//! message saying why; `validate_only` (v1+) changes nothing either way. v0-1 answer per
//! feature; v2 has no per-feature results, so the first refusal is the request's error.
//! Needs ALTER on the cluster.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{RequestHeader, UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::features;
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
    let request = UpdateFeaturesRequest::decode(&mut body, version)?;
    let mut response = UpdateFeaturesResponse::default();
    if !authz::cluster(state, ctx, authz::operation::ALTER) {
        response.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
        response.error_message = Some(StrBytes::from_static_str(
            "The client is not authorized to update features",
        ));
        return encode(&response, version).map(Some);
    }
    let outcomes: Vec<(StrBytes, Option<String>)> = request
        .feature_updates
        .iter()
        .map(|u| {
            (
                u.feature.clone(),
                features::refuse_update(&u.feature, u.max_version_level),
            )
        })
        .collect();
    if version >= 2 {
        if let Some((_, Some(why))) = outcomes.iter().find(|(_, r)| r.is_some()) {
            response.error_code = codes::INVALID_UPDATE_VERSION;
            response.error_message = Some(StrBytes::from_string(why.clone()));
        }
    } else {
        response.results = outcomes
            .into_iter()
            .map(|(feature, refusal)| {
                let mut r = UpdatableFeatureResult::default();
                r.feature = feature;
                if let Some(why) = refusal {
                    r.error_code = codes::INVALID_UPDATE_VERSION;
                    r.error_message = Some(StrBytes::from_string(why));
                }
                r
            })
            .collect();
    }
    encode(&response, version).map(Some)
}
