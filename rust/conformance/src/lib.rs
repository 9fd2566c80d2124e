//! Differential protocol conformance between kafkalite and Apache Kafka. Scripted request
//! sequences ([`scripts`]) go to both brokers through one encoder (`kafka-protocol`, as
//! the broker and client use); both answers are decoded by the same decoder, flattened
//! into `path = value` leaves ([`tree`]), normalised by the named rules of one file
//! ([`normalize`]) and compared ([`session`]). [`runner::run`] returns the report data;
//! the Python side (`kafkalite conformance`) applies the allowlist and prints it.
//! [`fuzz`] mutates the recorded requests and plays them against both brokers, while the
//! [`janitor`] deletes the topics it makes before they use up a broker's file limit.

pub mod fuzz;
pub mod janitor;
pub mod normalize;
pub mod request_text;
pub mod runner;
pub mod scripts;
pub mod session;
pub mod tree;
pub mod triage;

pub use runner::{run, Options, Report};
pub use session::Injection;
