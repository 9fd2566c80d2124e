//! SASL/OAUTHBEARER (RFC 7628) with Kafka's two server-side validations:
//! - unsecured JWTs (`OAuthBearerUnsecuredValidatorCallbackHandler`, Kafka's default,
//!   meant for development): an unsigned token (`alg` "none") whose principal claim
//!   (`sub` unless `unsecuredValidatorPrincipalClaimName` says otherwise) names the user
//!   and whose `exp` has not passed (give or take `unsecuredValidatorAllowableClockSkewMs`);
//! - signed JWTs (`OAuthBearerValidatorCallbackHandler`): RS256/384/512 checked against
//!   the RSA keys of a JWKS file (`sasl.oauthbearer.jwks.endpoint.url=file:...`), with
//!   `sasl.oauthbearer.expected.audience`, `.expected.issuer`, `.sub.claim.name`,
//!   `.clock.skew.seconds`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::Value;

/// The bearer token of a client's initial response (RFC 7628: a GS2 header, then
/// 0x01-separated key=value pairs with `auth=Bearer <token>`).
fn bearer_token(message: &[u8]) -> Result<&str, String> {
    let text = std::str::from_utf8(message).map_err(|_| "OAUTHBEARER message is not UTF-8")?;
    let (gs2, rest) = text
        .split_once('\u{1}')
        .ok_or("Invalid OAUTHBEARER client first message")?;
    if !gs2.starts_with("n,") && !gs2.starts_with("y,") {
        return Err("Invalid OAUTHBEARER client first message: bad GS2 header".into());
    }
    Ok(rest
        .split('\u{1}')
        .find_map(|kv| kv.strip_prefix("auth="))
        .and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
        })
        .ok_or("Invalid OAUTHBEARER client first message: no auth=Bearer token")?
        .trim())
}

fn jwt_parts(token: &str) -> Result<(&str, &str, &str), String> {
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return Err("invalid_token: not a JWT (three dot-separated parts)".into());
    };
    Ok((header, payload, signature))
}

fn b64url(part: &str, what: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| format!("invalid_token: the {what} is not base64url"))
}

fn decode(part: &str, what: &str) -> Result<Value, String> {
    serde_json::from_slice(&b64url(part, what)?)
        .map_err(|_| format!("invalid_token: the {what} is not JSON"))
}

/// `exp` (required, not passed) and `iat` (if present, not in the future), with skew;
/// the token's expiry in ms (it bounds the session's life, KIP-368).
fn check_times(claims: &Value, now_ms: i64, skew_ms: i64) -> Result<i64, String> {
    let exp_ms = claims
        .get("exp")
        .and_then(Value::as_f64)
        .ok_or("invalid_token: no exp claim")?
        * 1000.0;
    if now_ms as f64 >= exp_ms + skew_ms as f64 {
        return Err("invalid_token: the token has expired".into());
    }
    if let Some(iat) = claims.get("iat").and_then(Value::as_f64) {
        if iat * 1000.0 > (now_ms + skew_ms) as f64 {
            return Err("invalid_token: the token was issued in the future".into());
        }
    }
    Ok(exp_ms as i64)
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::String(s)) => s.split_whitespace().collect(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn principal(claims: &Value, claim: &str) -> Result<String, String> {
    claims
        .get(claim)
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .ok_or_else(|| format!("invalid_token: no {claim} claim"))
}

/// The JAAS options of the listener's OAUTHBEARER login module that validation reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnsecuredValidator {
    pub principal_claim: String,
    pub required_scope: Vec<String>,
    pub clock_skew_ms: i64,
}

impl UnsecuredValidator {
    #[must_use]
    pub fn from_options(
        options: &std::collections::BTreeMap<String, String>,
    ) -> UnsecuredValidator {
        UnsecuredValidator {
            principal_claim: options
                .get("unsecuredValidatorPrincipalClaimName")
                .cloned()
                .unwrap_or_else(|| "sub".into()),
            required_scope: options
                .get("unsecuredValidatorRequiredScope")
                .map(|s| s.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            clock_skew_ms: options
                .get("unsecuredValidatorAllowableClockSkewMs")
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
        }
    }

    /// The client's initial response → the authenticated principal name, or why not.
    pub fn authenticate(&self, message: &[u8], now_ms: i64) -> Result<String, String> {
        self.authenticate_until(message, now_ms)
            .map(|(name, _)| name)
    }

    /// The principal name and the token's expiry (ms since the epoch).
    pub fn authenticate_until(&self, message: &[u8], now_ms: i64) -> Result<(String, i64), String> {
        let (header, payload, signature) = jwt_parts(bearer_token(message)?)?;
        let header = decode(header, "header")?;
        if header.get("alg").and_then(Value::as_str) != Some("none") || !signature.is_empty() {
            return Err(
                "invalid_token: unsecured mode accepts only unsigned tokens (alg \"none\")".into(),
            );
        }
        let claims = decode(payload, "payload")?;
        let exp_ms = check_times(&claims, now_ms, self.clock_skew_ms)?;
        let name = principal(&claims, &self.principal_claim)?;
        let scope = strings(claims.get("scope"));
        if let Some(missing) = self
            .required_scope
            .iter()
            .find(|s| !scope.contains(&s.as_str()))
        {
            return Err(format!(
                "insufficient_scope: the token lacks scope {missing}"
            ));
        }
        Ok((name, exp_ms))
    }
}

pub use super::jwks::RsaKey;

#[derive(Clone, Debug, Default)]
pub struct JwksValidator {
    pub keys: std::sync::Arc<super::jwks::KeySet>,
    pub audience: Vec<String>,
    pub issuer: Option<String>,
    pub sub_claim: String,
    pub clock_skew_ms: i64,
}

impl JwksValidator {
    pub fn authenticate(&self, message: &[u8], now_ms: i64) -> Result<String, String> {
        self.authenticate_until(message, now_ms)
            .map(|(name, _)| name)
    }

    pub fn authenticate_until(&self, message: &[u8], now_ms: i64) -> Result<(String, i64), String> {
        use ring::signature::{self, RsaPublicKeyComponents};
        let (header_b64, payload_b64, signature_b64) = jwt_parts(bearer_token(message)?)?;
        let header = decode(header_b64, "header")?;
        let alg = match header.get("alg").and_then(Value::as_str) {
            Some("RS256") => &signature::RSA_PKCS1_2048_8192_SHA256,
            Some("RS384") => &signature::RSA_PKCS1_2048_8192_SHA384,
            Some("RS512") => &signature::RSA_PKCS1_2048_8192_SHA512,
            other => {
                return Err(format!(
                    "invalid_token: algorithm {other:?} is not accepted"
                ))
            }
        };
        let kid = header.get("kid").and_then(Value::as_str);
        let sig = b64url(signature_b64, "signature")?;
        let signed = format!("{header_b64}.{payload_b64}");
        let keys = self.keys.current();
        if let Some(kid) = kid {
            if !keys.iter().any(|(k, _, _)| k.as_deref() == Some(kid)) {
                // A key the set lacks may be new at the issuer: fetch the set again.
                self.keys.missing(kid);
            }
        }
        let verified = keys
            .iter()
            .filter(|(k, _, _)| kid.is_none() || k.as_deref() == kid)
            .any(|(_, n, e)| {
                RsaPublicKeyComponents { n, e }
                    .verify(alg, signed.as_bytes(), &sig)
                    .is_ok()
            });
        if !verified {
            return Err("invalid_token: the signature does not verify with any JWKS key".into());
        }
        let claims = decode(payload_b64, "payload")?;
        let exp_ms = check_times(&claims, now_ms, self.clock_skew_ms)?;
        if let Some(issuer) = &self.issuer {
            if claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str()) {
                return Err("invalid_token: unexpected issuer".into());
            }
        }
        let aud = strings(claims.get("aud"));
        if !self.audience.is_empty() && !self.audience.iter().any(|a| aud.contains(&a.as_str())) {
            return Err("invalid_token: unexpected audience".into());
        }
        Ok((principal(&claims, &self.sub_claim)?, exp_ms))
    }
}

/// How a listener validates OAUTHBEARER tokens.
#[derive(Clone, Debug)]
pub enum Validator {
    Unsecured(UnsecuredValidator),
    Jwks(JwksValidator),
}

impl Default for Validator {
    fn default() -> Self {
        Validator::Unsecured(UnsecuredValidator::from_options(&Default::default()))
    }
}

impl Validator {
    /// The principal name and the token's expiry (ms since the epoch), or why not.
    pub fn authenticate(&self, message: &[u8], now_ms: i64) -> Result<(String, i64), String> {
        match self {
            Validator::Unsecured(v) => v.authenticate_until(message, now_ms),
            Validator::Jwks(v) => v.authenticate_until(message, now_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: &str, alg: &str) -> Vec<u8> {
        let h = URL_SAFE_NO_PAD.encode(format!("{{\"alg\":\"{alg}\"}}"));
        let p = URL_SAFE_NO_PAD.encode(claims);
        format!("n,,\u{1}auth=Bearer {h}.{p}.\u{1}\u{1}").into_bytes()
    }

    #[test]
    fn unsecured_tokens_are_checked_like_kafka() {
        let v = UnsecuredValidator::from_options(&Default::default());
        let now = 1_700_000_000_000;
        let ok = token(
            r#"{"sub":"alice","iat":1699999999,"exp":1700000060}"#,
            "none",
        );
        assert_eq!(v.authenticate(&ok, now).unwrap(), "alice");
        let expired = token(r#"{"sub":"alice","exp":1699999999}"#, "none");
        assert!(v
            .authenticate(&expired, now)
            .unwrap_err()
            .contains("expired"));
        let signed = token(r#"{"sub":"alice","exp":1700000060}"#, "RS256");
        assert!(v
            .authenticate(&signed, now)
            .unwrap_err()
            .contains("unsigned"));
        let nobody = token(r#"{"exp":1700000060}"#, "none");
        assert!(v
            .authenticate(&nobody, now)
            .unwrap_err()
            .contains("no sub claim"));
        assert!(v.authenticate(b"garbage", now).is_err());
        let scoped = UnsecuredValidator {
            required_scope: vec!["kafka".into()],
            ..UnsecuredValidator::from_options(&Default::default())
        };
        assert!(scoped.authenticate(&ok, now).unwrap_err().contains("scope"));
        let with_scope = token(
            r#"{"sub":"bob","scope":"kafka other","exp":1700000060}"#,
            "none",
        );
        assert_eq!(scoped.authenticate(&with_scope, now).unwrap(), "bob");
    }
}
