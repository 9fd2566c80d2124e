"""Benchmark harness: kafkalite side by side with Apache Kafka and the machine's limits."""
