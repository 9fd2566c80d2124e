//! DescribeUserScramCredentials: each user's SCRAM mechanisms and iteration counts (never
//! salts or keys), all users when none is named.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeUserScramCredentialsRequest::decode(&mut body, version)?;
    let known = state.security.scram.describe();
    let infos = |user: &str| -> Vec<CredentialInfo> {
        known[user]
            .iter()
            .map(|(m, iterations)| {
                CredentialInfo::default()
                    .with_mechanism(m.wire_type())
                    .with_iterations(*iterations)
            })
            .collect()
    };
    let result = |user: &str| {
        DescribeUserScramCredentialsResult::default()
            .with_user(StrBytes::from_string(user.to_string()))
    };
    // Null or empty: every user (Kafka's reading; librdkafka sends an empty array).
    let results = match request.users.filter(|u| !u.is_empty()) {
        None => known
            .keys()
            .map(|u| result(u).with_credential_infos(infos(u)))
            .collect(),
        Some(users) => {
            let mut seen = HashSet::new();
            let duplicates: HashSet<String> = users
                .iter()
                .filter(|u| !seen.insert(u.name.to_string()))
                .map(|u| u.name.to_string())
                .collect();
            let mut reported = HashSet::new();
            users
                .iter()
                .filter(|u| reported.insert(u.name.to_string()))
                .map(|u| {
                    let name = u.name.as_str();
                    if duplicates.contains(name) {
                        result(name)
                            .with_error_code(codes::DUPLICATE_RESOURCE)
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
                            ))))
                    } else if known.contains_key(name) {
                        result(name).with_credential_infos(infos(name))
                    } else {
                        result(name)
                            .with_error_code(codes::RESOURCE_NOT_FOUND)
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "Attempt to describe a user credential that does not exist: {name}"
                            ))))
                    }
                })
                .collect()
        }
    };
    encode(
        &DescribeUserScramCredentialsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}
