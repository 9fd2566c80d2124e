//! Every field that may legitimately differ between kafkalite and Apache Kafka, as one list
//! of named rules, each with its reason. A leaf no rule names must match exactly: null vs
//! empty, -1 vs 0, list order, the default of a field the client did not ask for.
//!
//! A rule names the leaf's field (the last path segment, list indices stripped) and,
//! optionally, the one API it applies to. `Mask` hides the value but keeps its shape:
//! `None` stays `None`, `Some(x)` becomes `Some(<rule>)`, so a null where Kafka sends a
//! value (or the reverse) is still a difference.

/// What a rule does to a matching leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Replace the value by the rule's name, keeping null-ness.
    Mask,
    /// Replace the value unless it is the given literal (e.g. a nil uuid or 0 stays itself).
    MaskUnless(&'static str),
    /// Remove the leaf: compared elsewhere (see the reason).
    Drop,
    /// A list whose order Kafka does not define (hash-map iteration): sort its items by
    /// the named field before comparing. Applied to the decoded tree, not to leaves.
    SortBy(&'static str),
    /// Free text compared word for word, with only the parts `MESSAGE_PARTS` names (ids,
    /// addresses, times: what legitimately differs between two brokers) masked.
    Text,
}

/// A part of a free-text message that may differ between two brokers, with its reason:
/// every match of `pattern` becomes `<name>` before the texts are compared.
#[derive(Clone, Copy, Debug)]
pub struct MessagePart {
    pub name: &'static str,
    pub reason: &'static str,
    pub pattern: &'static str,
}

const fn part(name: &'static str, pattern: &'static str, reason: &'static str) -> MessagePart {
    MessagePart {
        name,
        reason,
        pattern,
    }
}

/// The sub-rules of every `Text` rule, applied in this order.
pub const MESSAGE_PARTS: &[MessagePart] = &[
    part(
        "uuid",
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
        "generated ids (member ids, ids of a client's instance) are random uuids",
    ),
    part(
        "host-port",
        r"\b(?:\d{1,3}(?:\.\d{1,3}){3}|localhost):\d{1,5}\b",
        "each broker listens on its own free loopback port",
    ),
    part(
        "timestamp-ms",
        r"-9223\d{15}\b|\b1\d{12}\b",
        "wall-clock times in milliseconds by each broker's clock, and the bounds a broker \
         derives from its clock (now - message.timestamp.before.max.ms is near Long.MIN)",
    ),
    part(
        "group-member-id",
        r"\b[Mm]ember [A-Za-z0-9_-]{22}\b",
        "a KIP-848 member id is a random uuid in URL-safe base64 (22 characters)",
    ),
];

fn mask_parts(text: &str) -> String {
    use std::sync::OnceLock;
    static COMPILED: OnceLock<Vec<(regex::Regex, String)>> = OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        MESSAGE_PARTS
            .iter()
            .map(|p| {
                let re = regex::Regex::new(p.pattern).expect("message part patterns compile");
                (re, format!("<{}>", p.name))
            })
            .collect()
    });
    compiled.iter().fold(text.to_string(), |text, (re, with)| {
        re.replace_all(&text, with.as_str()).into_owned()
    })
}

#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub name: &'static str,
    pub reason: &'static str,
    /// `ApiKey` Debug name (e.g. "Metadata"); `None` for every API.
    pub api: Option<&'static str>,
    /// Field name: the path's last segment without `[i]`; with a trailing `*`, a prefix of
    /// the whole path instead (a subtree).
    pub field: &'static str,
    pub action: Action,
}

const fn rule(
    name: &'static str,
    api: Option<&'static str>,
    field: &'static str,
    action: Action,
    reason: &'static str,
) -> Rule {
    Rule {
        name,
        reason,
        api,
        field,
        action,
    }
}

use crate::tree::Node;
use Action::{Drop, Mask, MaskUnless, SortBy, Text};

pub const RULES: &[Rule] = &[
    rule(
        "cluster-id",
        None,
        "cluster_id",
        Mask,
        "each cluster draws a random id when its storage is formatted",
    ),
    rule(
        "port",
        None,
        "port",
        Mask,
        "each broker listens on its own free loopback port",
    ),
    rule(
        "topic-id",
        None,
        "topic_id",
        MaskUnless("00000000-0000-0000-0000-000000000000"),
        "topic ids are random uuids per cluster; the nil uuid (no id) must still match",
    ),
    rule(
        "throttle-time",
        None,
        "throttle_time_ms",
        Mask,
        "quota throttling depends on each broker's load and quota config, not the request",
    ),
    rule(
        "error-message",
        None,
        "error_message",
        Text,
        "applications match on Kafka's words: compared as text, with the parts that \
         legitimately differ masked by name (see MESSAGE_PARTS)",
    ),
    rule(
        "member-id",
        None,
        "member_id",
        MaskUnless("\"\""),
        "a group member id embeds a random uuid; the empty id must still match",
    ),
    rule(
        "group-leader",
        Some("JoinGroup"),
        "leader",
        MaskUnless("\"\""),
        "the leader is a member id (random uuid)",
    ),
    rule(
        "producer-id",
        Some("InitProducerId"),
        "producer_id",
        MaskUnless("-1"),
        "Kafka allocates producer ids in blocks from its controller; -1 (none) must match",
    ),
    rule(
        "transaction-start-time",
        Some("DescribeTransactions"),
        "transaction_start_time_ms",
        MaskUnless("-1"),
        "when an ongoing transaction began, by each broker's clock; -1 (none) must match",
    ),
    rule(
        "described-transaction-producer-id",
        Some("DescribeTransactions"),
        "producer_id",
        MaskUnless("-1"),
        "Kafka allocates producer ids in blocks from its controller; -1 (none) must match",
    ),
    rule(
        "listed-transaction-producer-id",
        Some("ListTransactions"),
        "producer_id",
        MaskUnless("-1"),
        "Kafka allocates producer ids in blocks from its controller; -1 (none) must match",
    ),
    rule(
        "config-documentation",
        Some("DescribeConfigs"),
        "documentation",
        Mask,
        "free text documenting each config key",
    ),
    rule(
        "batch-error-message",
        Some("Produce"),
        "batch_index_error_message",
        Text,
        "Kafka's words for a rejected record: compared as text, with MESSAGE_PARTS masked",
    ),
    rule(
        "metadata-topic-order",
        Some("Metadata"),
        "topics",
        SortBy("name"),
        "Kafka lists the topics it knows before the ones it does not, in hash order",
    ),
    rule(
        "metadata-partition-order",
        Some("Metadata"),
        "partitions",
        SortBy("partition_index"),
        "Kafka lists a topic's partitions in hash order; clients key them by index",
    ),
    rule(
        "list-config-resources-order",
        Some("ListConfigResources"),
        "config_resources",
        SortBy("resource_name"),
        "Kafka lists each type's resources in hash order (a set of names)",
    ),
    rule(
        "list-groups-order",
        Some("ListGroups"),
        "groups",
        SortBy("group_id"),
        "Kafka lists groups in hash order",
    ),
    rule(
        "consumer-group-member-order",
        Some("ConsumerGroupDescribe"),
        "members",
        SortBy("member_type"),
        "Kafka lists a group's members in hash order (a map by member id, which is random)",
    ),
    rule(
        "delete-groups-order",
        Some("DeleteGroups"),
        "results",
        SortBy("group_id"),
        "Kafka answers the groups in hash order, not request order",
    ),
    rule(
        "create-topics-config-order",
        Some("CreateTopics"),
        "configs",
        SortBy("name"),
        "Kafka lists a new topic's configs in hash order",
    ),
    rule(
        "describe-configs-order",
        Some("DescribeConfigs"),
        "configs",
        SortBy("name"),
        "Kafka lists configs in hash order, not the order asked",
    ),
    rule(
        "sasl-mechanisms-order",
        Some("SaslHandshake"),
        "mechanisms",
        SortBy(""),
        "Kafka lists the enabled mechanisms in hash-set order; clients pick one by name",
    ),
    rule(
        "elect-leaders-topic-order",
        Some("ElectLeaders"),
        "replica_election_results",
        SortBy("topic"),
        "Kafka lists the topics of an election over every partition in hash order",
    ),
    rule(
        "scram-mechanism-order",
        Some("DescribeUserScramCredentials"),
        "credential_infos",
        SortBy("mechanism"),
        "Kafka lists a user's credentials in hash order",
    ),
    rule(
        "acl-resource-order",
        Some("DescribeAcls"),
        "resources",
        SortBy("pattern_type"),
        "Kafka lists matching resources in hash order (the scripts' resources differ in \
         pattern type)",
    ),
    rule(
        "acl-order",
        Some("DescribeAcls"),
        "acls",
        SortBy("principal"),
        "Kafka lists a resource's ACLs in hash order (the scripts' differ in principal)",
    ),
    rule(
        "deleted-acl-order",
        Some("DeleteAcls"),
        "matching_acls",
        SortBy("resource_type,resource_name,pattern_type,principal,host,operation,permission_type"),
        "Kafka lists the ACLs a filter deleted in hash order",
    ),
    rule(
        "log-dir-topic-order",
        Some("DescribeLogDirs"),
        "topics",
        SortBy("name"),
        "Kafka lists a log dir's topics in hash order",
    ),
    rule(
        "log-dir-partition-order",
        Some("DescribeLogDirs"),
        "partitions",
        SortBy("partition_index"),
        "Kafka lists a log dir's partitions of a topic in hash order",
    ),
    rule(
        "alter-log-dirs-topic-order",
        Some("AlterReplicaLogDirs"),
        "results",
        SortBy("topic_name"),
        "Kafka answers from a map of partitions: topics in hash order",
    ),
    rule(
        "alter-log-dirs-partition-order",
        Some("AlterReplicaLogDirs"),
        "partitions",
        SortBy("partition_index"),
        "Kafka answers from a map of partitions: a topic's partitions in hash order",
    ),
    rule(
        "add-partitions-to-txn-topic-order",
        Some("AddPartitionsToTxn"),
        "results_by_topic_v3_and_below",
        SortBy("name"),
        "Kafka answers a client's transaction from a map of partitions: topics in hash order",
    ),
    rule(
        "txn-offset-commit-topic-order",
        Some("TxnOffsetCommit"),
        "topics",
        SortBy("name"),
        "Kafka builds its answer in a map by topic name (refused topics first): hash order",
    ),
    rule(
        "log-dir-path",
        Some("DescribeLogDirs"),
        "log_dir",
        Mask,
        "each broker keeps its data in its own directory",
    ),
    rule(
        "log-dir-space",
        Some("DescribeLogDirs"),
        "total_bytes",
        MaskUnless("-1"),
        "the file system's size as each broker's directory sees it; -1 (unknown) must match",
    ),
    rule(
        "log-dir-free-space",
        Some("DescribeLogDirs"),
        "usable_bytes",
        MaskUnless("-1"),
        "free space on the file system, which other processes change; -1 must match",
    ),
    rule(
        "api-version-ranges",
        Some("ApiVersions"),
        "api_keys*",
        Drop,
        "compared range by range in the report's ApiVersions section: kafkalite may \
         advertise a narrower range than Kafka (listed), never a wider one (failed)",
    ),
];

/// The field a leaf path ends in: `topics[0].partitions[1].error_code` -> `error_code`.
#[must_use]
pub fn field_of(path: &str) -> &str {
    let last = path.rsplit('.').next().unwrap_or(path);
    last.split('[').next().unwrap_or(last)
}

fn matches(rule: &Rule, api: &str, path: &str) -> bool {
    if rule.api.is_some_and(|a| a != api) {
        return false;
    }
    match rule.field.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => field_of(path) == rule.field,
    }
}

fn masked(value: &str, name: &str) -> String {
    if value == "None" {
        value.to_string()
    } else if value.starts_with("Some(") {
        format!("Some(<{name}>)")
    } else {
        format!("<{name}>")
    }
}

/// The rule that applies to `path` of an `api` response, if any.
#[must_use]
pub fn rule_for(api: &str, path: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| matches(r, api, path))
}

/// `leaves` with every rule applied (dropped leaves removed).
#[must_use]
pub fn normalize(api: &str, leaves: &[(String, String)]) -> Vec<(String, String)> {
    leaves
        .iter()
        .filter_map(|(path, value)| match rule_for(api, path) {
            None => Some((path.clone(), value.clone())),
            Some(r) => match r.action {
                Drop => None,
                SortBy(_) => Some((path.clone(), value.clone())),
                Mask => Some((path.clone(), masked(value, r.name))),
                MaskUnless(keep) if value == keep => Some((path.clone(), value.clone())),
                MaskUnless(_) => Some((path.clone(), masked(value, r.name))),
                Text => Some((path.clone(), mask_parts(value))),
            },
        })
        .collect()
}

/// Sort every list a `SortBy` rule names, in place, by the rendering of its key field.
pub fn sort_lists(api: &str, node: &mut Node) {
    match node {
        Node::Leaf(_) => {}
        Node::Some(inner) => sort_lists(api, inner),
        Node::List(items) => items.iter_mut().for_each(|i| sort_lists(api, i)),
        Node::Record(fields) => {
            for (name, value) in fields.iter_mut() {
                sort_lists(api, value);
                let key = RULES.iter().find_map(|r| match r.action {
                    SortBy(key) if r.field == name && r.api.is_none_or(|a| a == api) => Some(key),
                    _ => None,
                });
                let list = match value {
                    Node::List(items) => Some(items),
                    Node::Some(inner) => match inner.as_mut() {
                        Node::List(items) => Some(items),
                        _ => None,
                    },
                    _ => None,
                };
                if let (Some(key), Some(items)) = (key, list) {
                    // Keyed by the field instead of the position, so one item missing on
                    // one side is one difference, not a shift of every item after it.
                    let mut keyed: Vec<(String, Node)> = items
                        .drain(..)
                        .map(|item| (format!("{{{}}}", sort_key(&item, key)), item))
                        .collect();
                    keyed.sort_by(|a, b| a.0.cmp(&b.0));
                    let len = keyed.len();
                    keyed.insert(0, ("len".into(), Node::Leaf(len.to_string())));
                    let record = Node::Record(keyed);
                    match value {
                        Node::Some(inner) => **inner = record,
                        other => *other = record,
                    }
                }
            }
        }
    }
}

fn render(node: &Node) -> String {
    match node {
        Node::Leaf(v) => v.clone(),
        Node::Some(inner) => render(inner),
        other => format!("{other:?}"),
    }
}

/// The item's value of `key`, or of each of its comma-separated fields, joined by `/`.
fn sort_key(item: &Node, key: &str) -> String {
    match item {
        Node::Record(fields) => key
            .split(',')
            .map(|k| {
                fields
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| render(v))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("/"),
        other => render(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(p: &str, v: &str) -> (String, String) {
        (p.into(), v.into())
    }

    #[test]
    fn masks_keep_null_apart_from_values() {
        let got = normalize(
            "CreateTopics",
            &[
                leaf("topics[0].error_message", "None"),
                leaf("topics[1].error_message", "Some(\"\")"),
                leaf("topics[1].topic_id", "00000000-0000-0000-0000-000000000000"),
                leaf("topics[0].topic_id", "5f0e2a6c-1111-2222-3333-444455556666"),
                leaf("topics[0].num_partitions", "-1"),
            ],
        );
        assert_eq!(got[0].1, "None");
        assert_eq!(got[1].1, "Some(\"\")");
        assert_eq!(got[2].1, "00000000-0000-0000-0000-000000000000");
        assert_eq!(got[3].1, "<topic-id>");
        assert_eq!(got[4].1, "-1");
    }

    #[test]
    fn messages_compare_as_text_with_only_the_named_parts_masked() {
        let ours = normalize(
            "CreateTopics",
            &[leaf(
                "topics[0].error_message",
                "Some(\"Topic 'em-ok' already exists.\")",
            )],
        );
        let case_changed = normalize(
            "CreateTopics",
            &[leaf(
                "topics[0].error_message",
                "Some(\"topic 'em-ok' already exists.\")",
            )],
        );
        assert_ne!(ours, case_changed, "a change of case alone is a difference");
        let a = normalize(
            "JoinGroup",
            &[leaf(
                "error_message",
                "Some(\"member c-5f0e2a6c-1111-2222-3333-444455556666 at 127.0.0.1:40123 at \
                 1764345600123\")",
            )],
        );
        assert_eq!(
            a[0].1,
            "Some(\"member c-<uuid> at <host-port> at <timestamp-ms>\")"
        );
        let none = normalize("CreateTopics", &[leaf("topics[0].error_message", "None")]);
        assert_eq!(none[0].1, "None");
    }

    #[test]
    fn api_scoped_rules_stay_in_their_api() {
        assert!(rule_for("ApiVersions", "api_keys[3].max_version").is_some());
        assert!(rule_for("Metadata", "api_keys[3].max_version").is_none());
        assert!(rule_for("SyncGroup", "leader").is_none());
    }
}
