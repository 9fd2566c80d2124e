//! AlterUserScramCredentials: the client salts the password itself and sends the salted
//! password; the broker keeps only StoredKey and ServerKey derived from it (Kafka's
//! checks: a known mechanism, 4096..=16384 iterations, a user named once per
//! mechanism, deletions of existing credentials only). One result per user.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::sasl::scram::{ScramCredential, ScramMechanism};
use crate::security::shared_store;
use crate::state::BrokerState;

type Failures = BTreeMap<String, (i16, String)>;

/// Keep the first failure of `user`.
fn fail(failures: &mut Failures, user: &str, code: i16, message: String) {
    failures.entry(user.to_string()).or_insert((code, message));
}

/// Kafka's bound (`ScramMechanism.maxIterations`).
const MAX_ITERATIONS: i32 = 16384;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AlterUserScramCredentialsRequest::decode(&mut body, version)?;
    // Per user: the first failure, if any (a user's changes apply all or not at all).
    let mut failures: BTreeMap<String, (i16, String)> = BTreeMap::new();
    let mut users: Vec<String> = Vec::new();
    // As Kafka: a user named twice among the deletions, or twice among the upsertions,
    // is a duplicate (whatever the mechanisms); one deletion and one upsertion of the same
    // user are not (each is judged on its own).
    let mut duplicate_pairs = HashSet::new();
    let deleted = request.deletions.iter().map(|d| d.name.to_string());
    let upserted = request.upsertions.iter().map(|u| u.name.to_string());
    for list in [deleted.collect::<Vec<_>>(), upserted.collect()] {
        let mut seen = HashSet::new();
        for name in list {
            if !users.contains(&name) {
                users.push(name.clone());
            }
            if !seen.insert(name.clone()) {
                duplicate_pairs.insert(name);
            }
        }
    }
    for user in &duplicate_pairs {
        fail(
            &mut failures,
            user,
            codes::DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request".into(),
        );
    }
    let existing = state.security.scram.describe();
    let mut deletions = Vec::new();
    for d in &request.deletions {
        let name = d.name.to_string();
        match ScramMechanism::from_wire_type(d.mechanism) {
            None => fail(
                &mut failures,
                &name,
                codes::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism".into(),
            ),
            Some(_) if name.is_empty() => fail(
                &mut failures,
                &name,
                codes::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty".into(),
            ),
            Some(m)
                if !existing
                    .get(&name)
                    .is_some_and(|ms| ms.iter().any(|(k, _)| *k == m)) =>
            {
                fail(
                    &mut failures,
                    &name,
                    codes::RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist".into(),
                )
            }
            Some(m) => deletions.push((name, m)),
        }
    }
    let mut upserts = Vec::new();
    for u in &request.upsertions {
        let name = u.name.to_string();
        match ScramMechanism::from_wire_type(u.mechanism) {
            None => fail(
                &mut failures,
                &name,
                codes::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism".into(),
            ),
            Some(_) if name.is_empty() => fail(
                &mut failures,
                &name,
                codes::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty".into(),
            ),
            Some(m) if u.iterations < m.min_iterations() => fail(
                &mut failures,
                &name,
                codes::UNACCEPTABLE_CREDENTIAL,
                "Too few iterations".to_string(),
            ),
            Some(_) if u.iterations > MAX_ITERATIONS => fail(
                &mut failures,
                &name,
                codes::UNACCEPTABLE_CREDENTIAL,
                "Too many iterations".to_string(),
            ),
            Some(_) if u.salt.is_empty() || u.salted_password.is_empty() => fail(
                &mut failures,
                &name,
                codes::UNACCEPTABLE_CREDENTIAL,
                "Salt and salted password must not be empty".into(),
            ),
            Some(m) => upserts.push((
                name,
                m,
                ScramCredential::from_salted_password(m, &u.salt, &u.salted_password, u.iterations),
            )),
        }
    }
    upserts.retain(|(user, _, _)| !failures.contains_key(user));
    deletions.retain(|(user, _)| !failures.contains_key(user));
    if let Err(e) = shared_store::alter_scram(state, upserts, &deletions) {
        for user in &users {
            fail(
                &mut failures,
                user,
                codes::UNKNOWN_SERVER_ERROR,
                format!("cannot store credentials: {e}"),
            );
        }
    }
    let results = users
        .iter()
        .map(|user| {
            let result = AlterUserScramCredentialsResult::default()
                .with_user(StrBytes::from_string(user.clone()));
            match failures.get(user) {
                Some((code, message)) => result
                    .with_error_code(*code)
                    .with_error_message(Some(StrBytes::from_string(message.clone()))),
                // Kafka sends a null message with no error (the codec's default is "").
                None => result.with_error_message(None),
            }
        })
        .collect();
    encode(
        &AlterUserScramCredentialsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}
