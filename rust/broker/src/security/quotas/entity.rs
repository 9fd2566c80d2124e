//! Quota entities and keys as Kafka names them: an entity is a set of (type, name) pairs —
//! `user`, `client-id`, or both, or `ip` alone — where a null name is that type's
//! `<default>` entity. Each combination allows its own keys (`QuotaConfig`): user and
//! client-id entities take the byte rates, `request_percentage` and
//! `controller_mutation_rate`; an ip entity takes `connection_creation_rate`.
//! The checks and their messages follow Kafka's `ClientQuotaControlManager` and
//! `ClientQuotasImage`.

use std::collections::BTreeMap;

pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// Entity type -> name (`None`: the `<default>` entity of that type).
pub type QuotaEntity = BTreeMap<String, Option<String>>;

/// Changes to one entity's keys (`None`: remove the key).
pub type Changes = Vec<(String, Option<f64>)>;

/// An entity as a request names it: (type, name), in the request's order.
pub type EntityPairs = Vec<(String, Option<String>)>;

/// Whether a value of `key` must be a whole number (Kafka's LONG and INT quota keys).
fn whole(key: &str) -> bool {
    matches!(
        key,
        PRODUCER_BYTE_RATE | CONSUMER_BYTE_RATE | CONNECTION_CREATION_RATE
    )
}

/// The keys `entity` may carry.
fn keys_for(entity: &QuotaEntity) -> &'static [&'static str] {
    if entity.contains_key(IP) {
        &[CONNECTION_CREATION_RATE]
    } else {
        &[
            PRODUCER_BYTE_RATE,
            CONSUMER_BYTE_RATE,
            REQUEST_PERCENTAGE,
            CONTROLLER_MUTATION_RATE,
        ]
    }
}

/// The entity of an alteration's (type, name) pairs, or why it cannot be one.
pub fn entity_of(pairs: &[(String, Option<String>)]) -> Result<QuotaEntity, String> {
    if pairs.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    let mut entity = QuotaEntity::new();
    for (ty, name) in pairs {
        if entity.contains_key(ty) {
            return Err(format!(
                "Invalid empty client quota entity, duplicate entity entry {ty}"
            ));
        }
        if ![USER, CLIENT_ID, IP].contains(&ty.as_str()) {
            return Err(format!("Unhandled client quota entity type: {ty}"));
        }
        if name.as_deref() == Some("") {
            return Err(format!("Empty {ty} not supported"));
        }
        entity.insert(ty.clone(), name.clone());
    }
    if let Some(ip) = entity.get(IP) {
        if entity.len() > 1 {
            return Err(
                // Kafka's words, its missing space included.
                "Invalid quota entity combination, IP entity shouldnot be combined with User \
                 or ClientId"
                    .into(),
            );
        }
        if let Some(ip) = ip {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("{ip} is not a valid IP or resolvable host."));
            }
        }
    }
    Ok(entity)
}

/// Check one key and value for `entity` (`None`: the key is removed).
pub fn check_value(entity: &QuotaEntity, key: &str, value: Option<f64>) -> Result<(), String> {
    if !keys_for(entity).contains(&key) {
        return Err(format!(
            "Invalid configuration key {key} for entity {} (valid keys: {})",
            describe(entity),
            keys_for(entity).join(", ")
        ));
    }
    let Some(v) = value else {
        return Ok(());
    };
    if !v.is_finite() || v <= 0.0 {
        return Err(format!(
            "Invalid value {v} for configuration {key}: must be a positive number"
        ));
    }
    if whole(key) && ((v + 1e-6).trunc() - v).abs() > 1e-6 {
        return Err(format!("{key} cannot be a fractional value."));
    }
    Ok(())
}

/// `user=alice, client-id=<default>`, for messages.
#[must_use]
pub fn describe(entity: &QuotaEntity) -> String {
    entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a DescribeClientQuotas component matches an entity's name of its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    /// Exactly this name.
    Exact(String),
    /// The `<default>` entity.
    Default,
    /// Any entity of the type (named or default).
    Specified,
}

/// A DescribeClientQuotas filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub components: Vec<(String, Match)>,
    pub strict: bool,
}

impl Filter {
    /// The filter of a request's components (type, match_type, match), or why it is bad.
    pub fn new(
        components: &[(String, i8, Option<String>)],
        strict: bool,
    ) -> Result<Filter, String> {
        let mut out: Vec<(String, Match)> = Vec::new();
        for (ty, match_type, name) in components {
            if out.iter().any(|(t, _)| t == ty) {
                return Err(format!(
                    "Entity type {ty} cannot appear more than once in the filter."
                ));
            }
            if ![USER, CLIENT_ID, IP].contains(&ty.as_str()) {
                return Err(format!("Custom entity type {ty} not supported"));
            }
            let m = match (match_type, name) {
                (0, Some(n)) => Match::Exact(n.clone()),
                (0, None) => {
                    return Err(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    )
                }
                (1, None) => Match::Default,
                (1, Some(_)) => {
                    return Err(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                            .into(),
                    )
                }
                (2, None) => Match::Specified,
                (2, Some(_)) => return Err(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                ),
                (other, _) => return Err(format!("Unknown match type {other}")),
            };
            out.push((ty.clone(), m));
        }
        let has = |t: &str| out.iter().any(|(ty, _)| ty == t);
        if has(IP) && (has(USER) || has(CLIENT_ID)) {
            return Err(
                "Invalid entity filter component combination. IP filter component should not be \
                 used with user or clientId filter component."
                    .into(),
            );
        }
        Ok(Filter {
            components: out,
            strict,
        })
    }

    /// Whether `entity` is one the filter asks for.
    #[must_use]
    pub fn matches(&self, entity: &QuotaEntity) -> bool {
        if self.strict && entity.len() != self.components.len() {
            return false;
        }
        self.components.iter().all(|(ty, m)| match entity.get(ty) {
            None => false,
            Some(name) => match m {
                Match::Exact(want) => name.as_deref() == Some(want.as_str()),
                Match::Default => name.is_none(),
                Match::Specified => true,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        items
            .iter()
            .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
            .collect()
    }

    #[test]
    fn entities_and_keys_are_checked_as_kafka_does() {
        let user = entity_of(&pairs(&[(USER, Some("alice")), (CLIENT_ID, None)])).unwrap();
        assert_eq!(describe(&user), "client-id=<default>, user=alice");
        assert!(check_value(&user, PRODUCER_BYTE_RATE, Some(1024.0)).is_ok());
        assert!(check_value(&user, REQUEST_PERCENTAGE, Some(12.5)).is_ok());
        let e = check_value(&user, PRODUCER_BYTE_RATE, Some(1.5)).unwrap_err();
        assert_eq!(e, "producer_byte_rate cannot be a fractional value.");
        let e = check_value(&user, "producer_byte_rat", Some(1.0)).unwrap_err();
        assert!(
            e.contains("Invalid configuration key producer_byte_rat"),
            "{e}"
        );
        let e = check_value(&user, CONSUMER_BYTE_RATE, Some(-3.0)).unwrap_err();
        assert!(e.contains("-3") && e.contains("consumer_byte_rate"), "{e}");
        assert!(check_value(&user, CONNECTION_CREATION_RATE, Some(1.0)).is_err());
        for bad in [
            pairs(&[]),
            pairs(&[(USER, Some("a")), (USER, Some("b"))]),
            pairs(&[("group", Some("g"))]),
            pairs(&[(USER, Some(""))]),
            pairs(&[(IP, Some("1.2.3.4")), (USER, None)]),
            pairs(&[(IP, Some("not-an-ip"))]),
        ] {
            assert!(entity_of(&bad).is_err(), "{bad:?}");
        }
        let ip = entity_of(&pairs(&[(IP, None)])).unwrap();
        assert!(check_value(&ip, CONNECTION_CREATION_RATE, Some(10.0)).is_ok());
    }

    #[test]
    fn filters_match_exact_default_and_any() {
        let alice = entity_of(&pairs(&[(USER, Some("alice"))])).unwrap();
        let alice_app =
            entity_of(&pairs(&[(USER, Some("alice")), (CLIENT_ID, Some("app"))])).unwrap();
        let default_user = entity_of(&pairs(&[(USER, None)])).unwrap();
        let exact = Filter::new(&[(USER.into(), 0, Some("alice".into()))], false).unwrap();
        assert!(exact.matches(&alice) && exact.matches(&alice_app));
        assert!(!exact.matches(&default_user));
        let strict = Filter::new(&[(USER.into(), 0, Some("alice".into()))], true).unwrap();
        assert!(strict.matches(&alice) && !strict.matches(&alice_app));
        let default = Filter::new(&[(USER.into(), 1, None)], false).unwrap();
        assert!(default.matches(&default_user) && !default.matches(&alice));
        let any = Filter::new(&[(USER.into(), 2, None)], true).unwrap();
        assert!(any.matches(&alice) && any.matches(&default_user) && !any.matches(&alice_app));
        assert!(Filter::new(&[(USER.into(), 0, None)], false).is_err());
        assert!(Filter::new(&[(USER.into(), 7, None)], false).is_err());
        assert!(Filter::new(&[(IP.into(), 2, None), (USER.into(), 2, None)], false).is_err());
        assert!(Filter::new(&[], false).unwrap().matches(&alice));
    }
}
