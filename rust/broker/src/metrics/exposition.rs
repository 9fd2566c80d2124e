//! The Prometheus text format of everything `Metrics` counts plus the gauges read from the
//! broker's state at scrape time (partitions, log sizes, consumer lag), so the hot path
//! keeps no gauge up to date.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use super::histogram::Histogram;
use super::requests::request_name;
use crate::state::BrokerState;

const QUANTILES: [(f64, &str); 6] = [
    (0.5, "0.50"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.98, "0.98"),
    (0.99, "0.99"),
    (0.999, "0.999"),
];

struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    fn summary(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        for (q, text) in QUANTILES {
            let mut with_q = labels.to_vec();
            with_q.push(("quantile", text));
            self.sample(name, &with_q, h.quantile_ms(q));
        }
        self.sample(&format!("{name}_count"), labels, h.count());
        self.sample(&format!("{name}_sum"), labels, h.sum_ms());
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[must_use]
pub fn render(state: &BrokerState) -> String {
    let mut out = Out(String::with_capacity(16 << 10));
    topic_traffic(&mut out, state);
    requests(&mut out, state);
    partitions(&mut out, state);
    consumer_lag(&mut out, state);
    connections(&mut out, state);
    client_telemetry(&mut out, state);
    out.0
}

type ReadFigure = fn(&super::topics::TopicFigures) -> u64;

fn topic_traffic(out: &mut Out, state: &BrokerState) {
    let m = &state.metrics.topics;
    // A deleted topic's figures go at the first scrape after it.
    let mut each = m.each();
    each.retain(|(topic, _)| {
        let exists = state.topics.get(topic).is_some();
        if !exists {
            m.forget(topic);
        }
        exists
    });
    let families: [(&str, &str, ReadFigure); 5] = [
        ("bytesin", "Bytes appended by producers", |f| {
            f.bytes_in.load(Relaxed)
        }),
        ("messagesin", "Records appended by producers", |f| {
            f.messages_in.load(Relaxed)
        }),
        ("bytesout", "Record bytes sent to consumers", |f| {
            f.bytes_out.load(Relaxed)
        }),
        ("totalproducerequests", "Produce requests per topic", |f| {
            f.produce_requests.load(Relaxed)
        }),
        ("totalfetchrequests", "Fetch requests per topic", |f| {
            f.fetch_requests.load(Relaxed)
        }),
    ];
    for (short, help, read) in families {
        let name = format!("kafka_server_brokertopicmetrics_{short}_total");
        out.family(&name, "counter", help);
        out.sample(&name, &[], read(m.all()));
        for (topic, f) in &each {
            out.sample(&name, &[("topic", topic)], read(f));
        }
    }
    let name = "kafka_server_brokertopicmetrics_replicationbytesout_total";
    out.family(name, "counter", "Record bytes sent to followers");
    out.sample(name, &[], m.replication_bytes_out());
}

fn requests(out: &mut Out, state: &BrokerState) {
    let served: Vec<_> = state.metrics.requests.served().collect();
    let name = "kafka_network_requestmetrics_requests_total";
    out.family(name, "counter", "Requests received, per API");
    for (key, f) in &served {
        out.sample(
            name,
            &[("request", &request_name(*key))],
            f.requests.load(Relaxed),
        );
    }
    let name = "kafka_network_requestmetrics_errors_total";
    out.family(
        name,
        "counter",
        "Requests that closed their connection, per API",
    );
    for (key, f) in &served {
        out.sample(
            name,
            &[("request", &request_name(*key))],
            f.errors.load(Relaxed),
        );
    }
    for (short, help, pick) in [
        (
            "totaltimems",
            "Request time, frame read to response written (ms)",
            0,
        ),
        (
            "localtimems",
            "Time in the handler, waits for acks and long polls included (ms)",
            1,
        ),
        ("responsesendtimems", "Time writing the response (ms)", 2),
    ] {
        let name = format!("kafka_network_requestmetrics_{short}");
        out.family(&name, "summary", help);
        for (key, f) in &served {
            let h = [&f.total, &f.local, &f.send][pick];
            out.summary(&name, &[("request", &request_name(*key))], h);
        }
    }
}

fn partitions(out: &mut Out, state: &BrokerState) {
    let node = state.config.node_id;
    let (mut count, mut leaders, mut under, mut offline) = (0, 0, 0, 0);
    let mut logs = Vec::new();
    for partition in state.topics.partitions(None) {
        let replica = partition.replica_state();
        count += 1;
        if replica.leader == node {
            leaders += 1;
            if replica.isr.len() < replica.replicas.len() {
                under += 1;
            }
        }
        if replica.leader < 0 {
            offline += 1;
        }
        let log = partition.log.lock().expect("lock");
        logs.push((
            partition.topic.clone(),
            partition.index.to_string(),
            log.size_bytes(),
            log.log_start_offset(),
            log.log_end_offset(),
            log.segment_count(),
        ));
    }
    let m = &state.metrics;
    for (name, kind, help, value) in [
        (
            "kafka_server_replicamanager_partitioncount",
            "gauge",
            "Partitions on this broker",
            count,
        ),
        (
            "kafka_server_replicamanager_leadercount",
            "gauge",
            "Partitions this broker leads",
            leaders,
        ),
        (
            "kafka_server_replicamanager_underreplicatedpartitions",
            "gauge",
            "Led partitions whose ISR is smaller than their replica set",
            under,
        ),
        (
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "gauge",
            "Partitions without a leader, as this broker's view of the cluster has them",
            offline,
        ),
        (
            "kafka_server_replicamanager_isrshrinks_total",
            "counter",
            "ISR shrinks of partitions this broker leads",
            m.isr_shrinks.load(Relaxed),
        ),
        (
            "kafka_server_replicamanager_isrexpands_total",
            "counter",
            "ISR expansions of partitions this broker leads",
            m.isr_expands.load(Relaxed),
        ),
    ] {
        // fmt: skip
        out.family(name, kind, help);
        out.sample(name, &[], value);
    }
    for (short, help, pick) in [
        ("size", "Bytes of the partition's log on disk", 0),
        ("logstartoffset", "First offset of the partition's log", 1),
        ("logendoffset", "Offset the next record will get", 2),
        ("numlogsegments", "Segments of the partition's log", 3),
    ] {
        let name = format!("kafka_log_log_{short}");
        out.family(&name, "gauge", help);
        for (topic, index, size, start, end, segments) in &logs {
            let value = [*size as i64, *start, *end, *segments as i64][pick];
            out.sample(&name, &[("topic", topic), ("partition", index)], value);
        }
    }
}

fn consumer_lag(out: &mut Out, state: &BrokerState) {
    let name = "kafka_consumergroup_lag";
    out.family(
        name,
        "gauge",
        "High watermark minus committed offset, per group and partition (groups this broker \
         coordinates, partitions it hosts)",
    );
    let current = "kafka_consumergroup_current_offset";
    let mut rows = Vec::new();
    for group in state.groups.list(&[]) {
        let Ok(topics) = state.groups.fetch_offsets(&group.group_id, None) else {
            continue;
        };
        for (topic, partitions) in topics {
            let Some(t) = state.topics.get(&topic) else {
                continue;
            };
            for (index, committed) in partitions {
                let (Some(c), Some(p)) = (committed, t.partition(index)) else {
                    continue;
                };
                let lag = (p.high_watermark() - c.offset).max(0);
                rows.push((group.group_id.clone(), topic.clone(), index, c.offset, lag));
            }
        }
    }
    for (group, topic, index, _, lag) in &rows {
        let labels = [
            ("consumergroup", group.as_str()),
            ("topic", topic),
            ("partition", &index.to_string()),
        ];
        out.sample(name, &labels, lag);
    }
    out.family(
        current,
        "gauge",
        "Committed offset, per group and partition",
    );
    for (group, topic, index, offset, _) in &rows {
        let labels = [
            ("consumergroup", group.as_str()),
            ("topic", topic),
            ("partition", &index.to_string()),
        ];
        out.sample(current, &labels, offset);
    }
}

fn connections(out: &mut Out, state: &BrokerState) {
    let m = &state.metrics;
    let name = "kafka_server_socket_server_metrics_connection_count";
    out.family(name, "gauge", "Open client connections, per listener");
    for (listener, n) in m.connections() {
        out.sample(name, &[("listener", &listener)], n);
    }
    for (name, help, value) in [
        (
            "kafka_server_socket_server_metrics_connection_creation_total",
            "Connections accepted",
            m.connections_created.load(Relaxed),
        ),
        (
            "kafka_server_socket_server_metrics_connection_close_total",
            "Connections closed",
            m.connections_closed.load(Relaxed),
        ),
    ] {
        // fmt: skip
        out.family(name, "counter", help);
        out.sample(name, &[], value);
    }
}

/// What clients pushed (KIP-714), latest value per client instance, metric and data-point
/// attributes; named by the OTLP metric name in the `metric` label.
fn client_telemetry(out: &mut Out, state: &BrokerState) {
    let name = "kafkalite_client_telemetry_value";
    out.family(
        name,
        "gauge",
        "Latest value each client instance pushed per metric (KIP-714 client telemetry)",
    );
    for (meta, points) in state.telemetry.snapshot() {
        let id = meta.instance_id.to_string();
        for p in &points {
            let attributes = p
                .attributes
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            let labels = [
                ("client_instance_id", id.as_str()),
                ("client_id", meta.client_id.as_str()),
                ("client_software_name", meta.software_name.as_str()),
                ("client_software_version", meta.software_version.as_str()),
                ("metric", p.metric.as_str()),
                ("attributes", attributes.as_str()),
            ];
            out.sample(name, &labels, p.value);
        }
    }
}
