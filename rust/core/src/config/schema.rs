//! The shape of one config key, as Kafka's `ConfigDef` describes it: a type, a default, a
//! validator, whether it can change while the broker runs, and (for broker keys) the topic
//! key it sets the default of. The tables themselves are in `broker_keys.rs` and
//! `topic_keys.rs`; this file holds no key names.

/// Kafka's `ConfigDef.Type`. The discriminant is the `config_type` DescribeConfigs (v3+)
/// returns for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
    Password = 9,
}

impl Type {
    /// The DescribeConfigs `config_type` code.
    #[must_use]
    pub fn describe_code(self) -> i8 {
        self as i8
    }
}

/// What a value must satisfy beyond its type, as Kafka's `ConfigDef` validators say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    Any,
    /// `Range.atLeast`.
    AtLeast(i64),
    /// `Range.between`, both ends included.
    Between(i64, i64),
    /// A range, or one value outside it (Kafka's gzip level: 1 to 9, or -1 for the codec's
    /// default).
    BetweenOr(i64, i64, i64),
    /// A fraction in `[0, 1]`.
    Ratio,
    /// `ValidString.in`: exactly one of these.
    OneOf(&'static [&'static str]),
    /// `CaseInsensitiveValidString.in`: one of these in any case (stored in lower case).
    OneOfAnyCase(&'static [&'static str]),
    /// `ValidList.in`: a non-empty comma-separated list whose items are all from the set.
    ListOf(&'static [&'static str]),
    /// A list with at least one item; the word names an item ("no directory given").
    NonEmpty(&'static str),
    /// Throttled-replica lists: `*`, or `partition:broker` pairs.
    Replicas,
    /// A feature this broker does not have: only `false` is accepted; the text says why.
    Unsupported(&'static str),
    /// A key naming one of the classes kafkalite implements; Kafka does not start on a
    /// class it cannot load ("Class X cannot be found").
    KnownClass(&'static [&'static str]),
}

/// Where a key's default comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    /// No default (Kafka's `null`).
    None,
    Value(&'static str),
    /// The value of another broker key (`broker.id` follows `node.id`).
    SameAs(&'static str),
    /// A topic key whose default is its broker synonym's default (scaled by the synonym's
    /// unit): `retention.ms` is `log.retention.hours` × 3,600,000.
    FromBroker,
}

/// Kafka's dynamic-update classes (`DynamicBrokerConfig`): whether a broker key may change
/// without a restart, and for one broker or the whole cluster. Topic keys are all dynamic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    ReadOnly,
    PerBroker,
    ClusterWide,
    /// Changed only under a listener prefix (`listener.name.<l>.<key>`), per broker; the
    /// key itself is not dynamic, and Kafka describes it read-only.
    PerListener,
}

/// A broker key that sets the broker-wide default of a topic key: broker value × `unit` =
/// topic value (`log.retention.hours` → `retention.ms` with unit 3,600,000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicSynonym {
    pub topic: &'static str,
    pub unit: i64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConfigKey {
    pub name: &'static str,
    pub ty: Type,
    pub default: Default,
    pub check: Check,
    pub update: Update,
    /// For broker keys: the topic key this one is a synonym of. The topic key's own check
    /// bounds the (scaled) value, so bounds are never written twice.
    pub synonym: Option<TopicSynonym>,
}

impl ConfigKey {
    /// Kafka never returns the value of a PASSWORD key.
    #[must_use]
    pub fn sensitive(&self) -> bool {
        self.ty == Type::Password
    }

    /// As DescribeConfigs shows the key: not dynamic by its own name.
    #[must_use]
    pub fn read_only(&self) -> bool {
        matches!(self.update, Update::ReadOnly | Update::PerListener)
    }
}

/// `i64::MAX` as Kafka writes `Long.MAX_VALUE` defaults.
pub const LONG_MAX: &str = "9223372036854775807";
/// `i32::MAX`, Kafka's `Integer.MAX_VALUE`.
pub const INT_MAX: &str = "2147483647";
