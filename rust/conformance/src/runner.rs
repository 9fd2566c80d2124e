//! The run: ApiVersions first (its ranges decide which versions each script plays), then
//! every selected script at every version both brokers support, then the coverage check.
//! The result is plain data (serialised as JSON for the Python report).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FindCoordinatorRequest, InitProducerIdRequest, MetadataRequest,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::normalize::{MESSAGE_PARTS, RULES};
use crate::scripts;
use crate::session::{Exchange, Injection, Seed, Session, Side, KAFKA, KAFKALITE};

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Play only each API's lowest and highest common version, and only quick scripts.
    pub quick: bool,
    /// Only scripts whose API name (e.g. "CreateTopics") is listed; empty = all.
    pub apis: Vec<String>,
    pub injection: Option<Injection>,
    /// (kafkalite, kafka) SASL_PLAINTEXT bootstraps, for the security scripts.
    pub sasl: Option<(String, String)>,
}

/// One API's advertised ranges side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Range {
    pub api: String,
    pub kafkalite: Option<(i16, i16)>,
    pub kafka: Option<(i16, i16)>,
    /// "same", "narrower" (listed), "wider" or "not in kafka" (both fail the run).
    pub status: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct RuleDoc {
    pub name: &'static str,
    pub api: Option<&'static str>,
    pub field: &'static str,
    pub reason: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub ranges: Vec<Range>,
    pub exchanges: Vec<Exchange>,
    /// "Api vN" advertised by kafkalite but played by no script.
    pub uncovered: Vec<String>,
    pub rules: Vec<RuleDoc>,
    pub seconds: f64,
}

type Ranges = BTreeMap<String, (i16, i16)>;

/// The highest ApiVersions version played: the ranges are read from its answers.
const API_VERSIONS_MAX: i16 = 5;

/// Keep each side's cluster id and node id in its vars, from a Metadata answer
/// (uncompared: the ids differ).
fn learn_identities(s: &mut Session) {
    let request = MetadataRequest::default().with_topics(Some(vec![]));
    for side in 0..2 {
        if let Ok(r) = s.call_unrecorded(side, &request, 12) {
            let vars = &mut s.sides[side].vars;
            if let Some(cluster) = &r.cluster_id {
                vars.insert("cluster_id".into(), cluster.to_string());
            }
            if let Some(b) = r.brokers.first() {
                vars.insert("node_id".into(), b.node_id.0.to_string());
            }
        }
    }
}

/// `side`'s (cluster id, node id) as `learn_identities` kept them.
fn identity(side: &Side) -> (Option<StrBytes>, i32) {
    let cluster = side
        .vars
        .get("cluster_id")
        .map(|c| StrBytes::from_string(c.clone()));
    let node = side
        .vars
        .get("node_id")
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1);
    (cluster, node)
}

fn api_versions(s: &mut Session) -> Result<[Ranges; 2], String> {
    let mut ranges: [Ranges; 2] = [Ranges::new(), Ranges::new()];
    for v in 0..=API_VERSIONS_MAX {
        let request = if v >= 3 {
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("kafkalite-conformance"))
                .with_client_software_version(StrBytes::from_static_str("1"))
        } else {
            ApiVersionsRequest::default()
        };
        s.script = "api_versions".into();
        if v >= 3 {
            // A client software name outside Kafka's pattern: INVALID_REQUEST and no
            // list (fuzzer-found: kafkalite answered it in full).
            let bad = request
                .clone()
                .with_client_software_name(StrBytes::from_static_str("bad name!"));
            let _ = s.play("client software name outside the pattern", v, |_| {
                bad.clone()
            });
        }
        if v >= 5 {
            // KIP-1242: the cluster and node the client means to reach; both or neither
            // (INVALID_REQUEST), and a stale pair is REBOOTSTRAP_REQUIRED.
            learn_identities(s);
            let aimed = |cluster: Option<StrBytes>, node: i32| {
                request.clone().with_cluster_id(cluster).with_node_id(node)
            };
            let r = aimed(Some(StrBytes::from_static_str("conformance-cluster")), -1);
            let _ = s.play("a cluster id without a node id", v, |_| r.clone());
            let r = aimed(None, 1);
            let _ = s.play("a node id without a cluster id", v, |_| r.clone());
            let r = aimed(Some(StrBytes::from_static_str("conformance-cluster")), 1);
            let _ = s.play("another cluster", v, |_| r.clone());
            let _ = s.play("this cluster and node", v, |side| {
                let (cluster, node) = identity(side);
                aimed(cluster, node)
            });
            let _ = s.play("this cluster, another node", v, |side| {
                let (cluster, node) = identity(side);
                aimed(cluster, node + 1000)
            });
        }
        let answers = s.play("ranges", v, |_| request.clone());
        if v == API_VERSIONS_MAX {
            for (side, answer) in answers.iter().enumerate() {
                let response = answer
                    .as_ref()
                    .map_err(|e| format!("ApiVersions v{API_VERSIONS_MAX}: {e}"))?;
                for k in &response.api_keys {
                    let name = ApiKey::try_from(k.api_key)
                        .map(|a| format!("{a:?}"))
                        .unwrap_or_else(|()| k.api_key.to_string());
                    ranges[side].insert(name, (k.min_version, k.max_version));
                }
            }
        }
    }
    Ok(ranges)
}

fn compare_ranges(ranges: &[Ranges; 2]) -> Vec<Range> {
    ranges[KAFKALITE]
        .iter()
        .map(|(api, &ours)| {
            let theirs = ranges[KAFKA].get(api).copied();
            let status = match theirs {
                None => "not in kafka",
                Some(t) if t == ours => "same",
                Some(t) if ours.0 >= t.0 && ours.1 <= t.1 => "narrower",
                Some(_) => "wider",
            };
            Range {
                api: api.clone(),
                kafkalite: Some(ours),
                kafka: theirs,
                status: status.into(),
            }
        })
        .collect()
}

/// Kafka creates `__consumer_offsets` on the first FindCoordinator and answers
/// COORDINATOR_NOT_AVAILABLE until it exists: wait for it, uncompared, so the scripts see a
/// settled broker on both sides; the same for producer ids.
fn warm_up(s: &mut Session) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let request = FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("warm-up"));
    while Instant::now() < deadline {
        let ok = (0..2).all(|side| {
            s.call_unrecorded(side, &request, 2)
                .map(|r| r.error_code == 0)
                .unwrap_or(false)
        });
        // Kafka allocates producer ids in blocks from its controller: the first
        // InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS until a block arrives.
        let producer = InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(60_000);
        let ok = ok
            && (0..2).all(|side| {
                s.call_unrecorded(side, &producer, 0)
                    .map(|r| r.error_code == 0)
                    .unwrap_or(false)
            });
        if ok {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn run(kafkalite: &str, kafka: &str, options: &Options) -> Result<Report, String> {
    run_recording(kafkalite, kafka, options).map(|(report, _)| report)
}

/// As [`run`], also returning every request played (the fuzzer's seeds).
pub fn run_recording(
    kafkalite: &str,
    kafka: &str,
    options: &Options,
) -> Result<(Report, Vec<Seed>), String> {
    let started = Instant::now();
    let sasl = options.sasl.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
    let mut s = Session::with_sasl(kafkalite, kafka, sasl)?;
    s.injection = options.injection.clone();
    let ranges = api_versions(&mut s)?;
    warm_up(&mut s);
    let wanted = |api: &str| options.apis.is_empty() || options.apis.iter().any(|a| a == api);
    for script in scripts::all() {
        let api = format!("{:?}", script.api);
        if !wanted(&api) || (options.quick && !script.quick) {
            continue;
        }
        let (Some(ours), Some(theirs)) = (ranges[KAFKALITE].get(&api), ranges[KAFKA].get(&api))
        else {
            continue;
        };
        let (low, high) = (ours.0.max(theirs.0), ours.1.min(theirs.1));
        let versions: Vec<i16> = if options.quick {
            let mut v = vec![low, high];
            v.dedup();
            v
        } else {
            (low..=high).collect()
        };
        for v in versions {
            s.script = script.name.to_string();
            (script.run)(&mut s, v);
            // A script may have moved to the SASL listener: the next starts on PLAINTEXT.
            s.switch(crate::session::Listener::Plaintext);
        }
    }
    let mut uncovered = Vec::new();
    for (api, &(min, max)) in &ranges[KAFKALITE] {
        if !wanted(api) {
            continue;
        }
        for v in min..=max {
            if options.quick && v != min && v != max {
                continue;
            }
            let played = s.exchanges.iter().any(|e| &e.api == api && e.version == v);
            if !played {
                uncovered.push(format!("{api} v{v}"));
            }
        }
    }
    let report = Report {
        ranges: compare_ranges(&ranges),
        exchanges: std::mem::take(&mut s.exchanges),
        uncovered,
        rules: RULES
            .iter()
            .map(|r| RuleDoc {
                name: r.name,
                api: r.api,
                field: r.field,
                reason: r.reason,
            })
            // The parts every free-text rule masks, each a sub-rule of its own.
            .chain(MESSAGE_PARTS.iter().map(|p| RuleDoc {
                name: p.name,
                api: None,
                field: "error_message, batch_index_error_message (part of the text)",
                reason: p.reason,
            }))
            .collect(),
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((report, std::mem::take(&mut s.corpus)))
}
