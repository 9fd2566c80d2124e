"""Differential protocol conformance against Apache Kafka: the same requests to kafkalite
and to a real Kafka broker, both answers decoded by one codec and compared field by field.

The request scripts, the normalisation rules and the comparison live in Rust
(``rust/conformance``, called through ``_core.conformance_run``); this package starts the
two brokers with the same settings, applies the allowlist and prints the report.
"""
