//! The scripted request sequences, one file per API family. A script plays one version of
//! its API (the runner calls it for every version both brokers support): the success
//! case, the errors bad input must get, empty and maximal requests. Setup steps (creating
//! a topic, producing) are played and compared too.

// A step's answers are compared inside `play`; most steps need nothing more from them.
#![allow(unused_must_use)]

mod admin;
mod authz;
mod client_metrics;
mod configs;
mod consumer_groups;
mod epochs;
mod groups;
mod offsets;
mod quotas;
mod read_replica;
mod records;
mod script;
mod security;
mod topic_partitions;
mod topics;
mod transactions;

pub use script::{topic, Script};

/// Every script, in the order they run.
pub fn all() -> Vec<Script> {
    let mut scripts = Vec::new();
    scripts.extend(topics::scripts());
    scripts.extend(configs::scripts());
    scripts.extend(records::scripts());
    scripts.extend(read_replica::scripts());
    scripts.extend(epochs::scripts());
    // Groups before offsets: ListGroups lists every group, so it runs before others exist.
    scripts.extend(groups::scripts());
    scripts.extend(consumer_groups::scripts());
    scripts.extend(offsets::scripts());
    scripts.extend(transactions::scripts());
    scripts.extend(admin::scripts());
    scripts.extend(security::scripts());
    scripts.extend(authz::scripts());
    scripts.extend(topic_partitions::scripts());
    scripts.extend(quotas::scripts());
    scripts.extend(client_metrics::scripts());
    scripts
}
