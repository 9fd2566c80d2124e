//! SCRAM-SHA-256 / SCRAM-SHA-512, server side (RFC 5802, RFC 7677), as Kafka's
//! `ScramSaslServer` runs it: client-first, server-first, client-final, server-final.
//! Only salted credentials (salt, iterations, StoredKey, ServerKey) are ever kept; the
//! password is never seen by the broker.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ring::{digest, hmac, pbkdf2, rand::SecureRandom};

/// The two SCRAM mechanisms Kafka has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The code AlterUserScramCredentials / DescribeUserScramCredentials use.
    #[must_use]
    pub fn wire_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    #[must_use]
    pub fn from_wire_type(t: i8) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.wire_type() == t)
    }

    /// Kafka's minimum iteration count (`ScramMechanism.minIterations`).
    #[must_use]
    pub fn min_iterations(self) -> i32 {
        4096
    }

    fn hmac_alg(self) -> hmac::Algorithm {
        match self {
            ScramMechanism::Sha256 => hmac::HMAC_SHA256,
            ScramMechanism::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn digest_alg(self) -> &'static digest::Algorithm {
        match self {
            ScramMechanism::Sha256 => &digest::SHA256,
            ScramMechanism::Sha512 => &digest::SHA512,
        }
    }

    fn pbkdf2_alg(self) -> pbkdf2::Algorithm {
        match self {
            ScramMechanism::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            ScramMechanism::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        let key = hmac::Key::new(self.hmac_alg(), key);
        hmac::sign(&key, data).as_ref().to_vec()
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        digest::digest(self.digest_alg(), data).as_ref().to_vec()
    }
}

/// What the broker keeps for one user and mechanism (Kafka's `ScramCredential`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl ScramCredential {
    /// From a salted password (what AlterUserScramCredentials carries).
    #[must_use]
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        let client_key = mechanism.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }

    /// From a password (the `kafkalite user add` path and tests).
    #[must_use]
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        let n = std::num::NonZeroU32::new(iterations.max(1) as u32).expect("at least 1");
        let mut salted = vec![0u8; mechanism.digest_alg().output_len()];
        pbkdf2::derive(
            mechanism.pbkdf2_alg(),
            n,
            salt,
            password.as_bytes(),
            &mut salted,
        );
        Self::from_salted_password(mechanism, salt, &salted, iterations)
    }

    /// Kafka's text form (`ScramCredentialUtils.credentialToString`), as kept in
    /// ZooKeeper's `/config/users/<user>` and in our credentials file.
    #[must_use]
    pub fn to_kafka_string(&self) -> String {
        format!(
            "salt={},stored_key={},server_key={},iterations={}",
            B64.encode(&self.salt),
            B64.encode(&self.stored_key),
            B64.encode(&self.server_key),
            self.iterations
        )
    }

    pub fn from_kafka_string(s: &str) -> Option<ScramCredential> {
        let mut salt = None;
        let mut stored = None;
        let mut server = None;
        let mut iterations = None;
        for part in s.split(',') {
            let (k, v) = part.split_once('=')?;
            match k {
                "salt" => salt = B64.decode(v).ok(),
                "stored_key" => stored = B64.decode(v).ok(),
                "server_key" => server = B64.decode(v).ok(),
                "iterations" => iterations = v.parse().ok(),
                _ => {}
            }
        }
        Some(ScramCredential {
            salt: salt?,
            stored_key: stored?,
            server_key: server?,
            iterations: iterations?,
        })
    }
}

/// Random bytes for nonces and salts.
#[must_use]
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut out)
        .expect("the system has randomness");
    out
}

fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A SCRAM exchange in progress on one connection.
pub enum ScramServer {
    /// Waiting for client-first.
    Start(ScramMechanism),
    /// Sent server-first; waiting for client-final.
    SentFirst {
        mechanism: ScramMechanism,
        user: String,
        credential: ScramCredential,
        nonce: String,
        client_first_bare: String,
        server_first: String,
        gs2_header: String,
    },
    Done,
}

/// One step's outcome.
pub enum Step {
    /// Send these bytes and wait for the next message.
    Continue(Vec<u8>),
    /// Authenticated as `user`; send these bytes (server-final) and stop.
    Done { user: String, reply: Vec<u8> },
}

/// Kafka's SCRAM username escaping: `=2C` is ',' and `=3D` is '='.
fn unescape_username(s: &str) -> Option<String> {
    let out = s.replace("=2C", ",").replace("=3D", "=");
    (!out.contains('=')).then_some(out)
}

impl ScramServer {
    #[must_use]
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer::Start(mechanism)
    }

    /// Take the client's next message. `lookup` finds a user's credential. An `Err` is
    /// the message for SASL_AUTHENTICATION_FAILED.
    pub fn step(
        &mut self,
        message: &[u8],
        lookup: impl Fn(&str, ScramMechanism) -> Option<ScramCredential>,
    ) -> Result<Step, String> {
        let text = std::str::from_utf8(message).map_err(|_| "SCRAM message is not UTF-8")?;
        match std::mem::replace(self, ScramServer::Done) {
            ScramServer::Start(mechanism) => {
                let (gs2_header, bare) = split_client_first(text)?;
                let mut user = None;
                let mut client_nonce = None;
                for attr in bare.split(',') {
                    match attr.split_once('=') {
                        Some(("n", v)) => user = unescape_username(v),
                        Some(("r", v)) => client_nonce = Some(v.to_string()),
                        // Extensions (tokenauth=...) carry nothing we act on.
                        _ => {}
                    }
                }
                let user = user.ok_or("SCRAM client-first has no valid username")?;
                let client_nonce = client_nonce.ok_or("SCRAM client-first has no nonce")?;
                let credential = lookup(&user, mechanism)
                    .ok_or("Authentication failed: Invalid user credentials")?;
                // Alphanumeric, as Kafka's (older librdkafka mishandles '+' and '/').
                let suffix: String = random_bytes(24)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let nonce = format!("{client_nonce}{suffix}");
                let server_first = format!(
                    "r={nonce},s={},i={}",
                    B64.encode(&credential.salt),
                    credential.iterations
                );
                let reply = server_first.clone().into_bytes();
                *self = ScramServer::SentFirst {
                    mechanism,
                    user,
                    credential,
                    nonce,
                    client_first_bare: bare.to_string(),
                    server_first,
                    gs2_header: gs2_header.to_string(),
                };
                Ok(Step::Continue(reply))
            }
            ScramServer::SentFirst {
                mechanism,
                user,
                credential,
                nonce,
                client_first_bare,
                server_first,
                gs2_header,
            } => {
                let (without_proof, proof) = text
                    .rsplit_once(",p=")
                    .ok_or("SCRAM client-final has no proof")?;
                let mut binding = None;
                let mut final_nonce = None;
                for attr in without_proof.split(',') {
                    match attr.split_once('=') {
                        Some(("c", v)) => binding = Some(v),
                        Some(("r", v)) => final_nonce = Some(v),
                        _ => {}
                    }
                }
                if binding != Some(B64.encode(gs2_header.as_bytes()).as_str()) {
                    return Err("Authentication failed: invalid channel binding".into());
                }
                // Kafka checks `endsWith`: librdkafka before 2.1 sends the client nonce
                // twice (its own, then the combined one from server-first).
                if !final_nonce.is_some_and(|n| n.ends_with(nonce.as_str())) {
                    return Err(
                        "Authentication failed: Invalid client nonce in the final client message"
                            .into(),
                    );
                }
                let proof = B64.decode(proof).map_err(|_| "SCRAM proof is not base64")?;
                let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
                let signature = mechanism.hmac(&credential.stored_key, auth_message.as_bytes());
                if proof.len() != signature.len() {
                    return Err("Authentication failed: Invalid client credentials".into());
                }
                let client_key: Vec<u8> =
                    proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
                if !equal_in_constant_time(&mechanism.hash(&client_key), &credential.stored_key) {
                    return Err("Authentication failed: Invalid client credentials".into());
                }
                let server_signature =
                    mechanism.hmac(&credential.server_key, auth_message.as_bytes());
                let reply = format!("v={}", B64.encode(server_signature)).into_bytes();
                Ok(Step::Done { user, reply })
            }
            ScramServer::Done => Err("SCRAM exchange already finished".into()),
        }
    }
}

/// `gs2-header` and `client-first-message-bare`. Channel binding is not supported (as in
/// Kafka): the flag must be `n` or `y`.
fn split_client_first(text: &str) -> Result<(&str, &str), String> {
    let mut parts = text.splitn(3, ',');
    let flag = parts.next().unwrap_or_default();
    let authzid = parts.next().ok_or("SCRAM client-first is malformed")?;
    let bare = parts.next().ok_or("SCRAM client-first is malformed")?;
    if !matches!(flag, "n" | "y") {
        return Err(format!("SCRAM channel binding {flag:?} is not supported"));
    }
    if !(authzid.is_empty() || authzid.starts_with("a=")) {
        return Err("SCRAM client-first is malformed".into());
    }
    let header_len = flag.len() + authzid.len() + 2;
    Ok((&text[..header_len], bare))
}

#[cfg(test)]
#[path = "scram_tests.rs"]
mod tests;
