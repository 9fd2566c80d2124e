//! ApiVersions (v0-5): what this broker speaks, and from v3 its feature flags (`features`). An unknown request version still gets an answer
//! (KIP-511): error 35 and our list, in a v0 response, so the client can retry. From v5
//! (KIP-1242) a client may name the cluster and node it means to reach: a cluster id that
//! is not this cluster's, or this cluster's with another node id, is REBOOTSTRAP_REQUIRED
//! with no API list (its metadata is stale), as Kafka 4.4 answers.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::supported::SUPPORTED;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

fn api_list() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|&(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect()
}

pub fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<ResponseBody> {
    // As Kafka 4.1.1 (found by the conformance fuzzer): a body that does not parse closes
    // the connection; from v3 a client software name or version that is not Kafka's
    // pattern (invalid UTF-8 included: Java decodes it to U+FFFD, which fails it) is
    // INVALID_REQUEST with no API list, as is (v5) a cluster id without a node id or a
    // node id without a cluster id.
    let mut elsewhere = false;
    let valid = match ApiVersionsRequest::decode(&mut body, version) {
        Ok(r) => {
            elsewhere = meant_for_another(state, &r, version);
            let named = version >= 3
                && software_token(&r.client_software_name)
                && software_token(&r.client_software_version);
            if named {
                // Kept for client-metrics `match` selectors; the first one named stands.
                let _ = ctx.connection.software.set((
                    r.client_software_name.to_string(),
                    r.client_software_version.to_string(),
                ));
            }
            // v5: the cluster id and the node id come together or not at all.
            let paired = r.cluster_id.is_some() == (r.node_id != -1);
            (version < 3 || named) && (version < 5 || paired)
        }
        Err(e) if e.to_string().contains("utf-8") => false,
        Err(e) => anyhow::bail!("ApiVersions v{version} body does not parse: {e}"),
    };
    if !valid {
        let response = ApiVersionsResponse::default()
            .with_error_code(codes::INVALID_REQUEST)
            .with_finalized_features_epoch(-1);
        return encode(&response, version);
    }
    if elsewhere {
        let response = ApiVersionsResponse::default()
            .with_error_code(codes::REBOOTSTRAP_REQUIRED)
            .with_finalized_features_epoch(-1);
        return encode(&response, version);
    }
    let mut response = ApiVersionsResponse::default()
        .with_error_code(0)
        .with_api_keys(api_list());
    if version >= 3 {
        let features = crate::features::all();
        // KAFKA-17011: clients before ApiVersions v4 reject a supported range starting at
        // 0, so Kafka leaves such features out of the supported list below v4.
        let supported = features
            .iter()
            .filter(|f| version >= 4 || f.min_version > 0)
            .map(|f| {
                SupportedFeatureKey::default()
                    .with_name(StrBytes::from_static_str(f.name))
                    .with_min_version(f.min_version)
                    .with_max_version(f.max_version)
            })
            .collect();
        // In a cluster the leader of a partition is often not the transaction's
        // coordinator, and adding a partition from Produce v12 (transaction version 2)
        // would need a broker-to-broker AddPartitionsToTxn: there transaction version 2 is
        // not finalized, so clients add partitions themselves.
        let level = |f: &crate::features::Feature| {
            if f.name == crate::features::TRANSACTION_VERSION && state.cluster.is_some() {
                0
            } else {
                f.finalized
            }
        };
        let finalized = features
            .iter()
            .filter(|f| level(f) > 0)
            .map(|f| {
                FinalizedFeatureKey::default()
                    .with_name(StrBytes::from_static_str(f.name))
                    .with_min_version_level(level(f))
                    .with_max_version_level(level(f))
            })
            .collect();
        response = response
            .with_supported_features(supported)
            .with_finalized_features_epoch(crate::features::FINALIZED_EPOCH)
            .with_finalized_features(finalized);
    }
    encode(&response, version)
}

/// v5: the request names a cluster and node that are not this broker.
fn meant_for_another(state: &BrokerState, r: &ApiVersionsRequest, version: i16) -> bool {
    match (&r.cluster_id, version >= 5) {
        (Some(cluster), true) => {
            cluster.as_str() != state.cluster_id() || r.node_id != state.config.node_id
        }
        _ => false,
    }
}

/// Kafka's pattern for a client software name or version (KIP-511):
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn software_token(text: &str) -> bool {
    let b = text.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.';
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && b.iter().all(inner)
        }
        _ => false,
    }
}

/// The answer to an ApiVersions request at a version we do not know.
pub fn unsupported_version_response() -> anyhow::Result<ResponseBody> {
    let response = ApiVersionsResponse::default()
        .with_error_code(codes::UNSUPPORTED_VERSION)
        .with_api_keys(api_list());
    encode(&response, 0)
}

#[cfg(test)]
mod tests {
    use super::software_token;

    #[test]
    fn software_token_follows_kafkas_pattern() {
        for ok in ["a", "librdkafka", "apache-kafka-java", "2.15.0", "1"] {
            assert!(software_token(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            ".1",
            "bad name",
            "kafk\u{fffd}",
            "a_b",
            "\u{11}",
        ] {
            assert!(!software_token(bad), "{bad:?}");
        }
    }
}
