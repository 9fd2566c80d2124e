//! [`Session`]: one connection to each broker (kafkalite first, Kafka second) and the
//! record of every exchange. A step builds its request once per side (so a side's own
//! member id or producer id can go into it), sends it through the same `kafka-protocol`
//! encoder, decodes both answers with the same decoder and compares them leaf by leaf.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Request;
use kafkalite_client::{parse_bootstrap, Address, ClientConfig, Connection};
use serde::Serialize;

use crate::normalize::normalize;
use crate::tree;

pub const KAFKALITE: usize = 0;
pub const KAFKA: usize = 1;
pub const SIDE_NAMES: [&str; 2] = ["kafkalite", "kafka"];

/// One field that differs after normalisation, with both raw values.
#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    pub path: String,
    pub kafkalite: String,
    pub kafka: String,
}

/// One request played against both brokers.
#[derive(Clone, Debug, Serialize)]
pub struct Exchange {
    pub api: String,
    pub version: i16,
    pub script: String,
    pub step: String,
    pub fields: usize,
    pub differences: Vec<Difference>,
}

/// A change made to kafkalite's decoded answer before comparing: how a test proves the
/// runner reports a difference (e.g. `error_message` turned from null to `Some("")`).
#[derive(Clone, Debug)]
pub struct Injection {
    pub api: String,
    pub field: String,
    pub value: String,
}

pub struct Side {
    address: Address,
    conn: Option<Connection>,
    /// Values a script learnt from this side's answers (member ids, producer ids).
    pub vars: HashMap<String, String>,
}

/// Which listener of each broker the next steps talk to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listener {
    Plaintext,
    /// SASL_PLAINTEXT (the security scripts'): unauthenticated until a script's own
    /// SaslHandshake and SaslAuthenticate steps log in.
    Sasl,
}

pub struct Session {
    runtime: tokio::runtime::Runtime,
    /// Each side's PLAINTEXT and, if the brokers have one, SASL_PLAINTEXT address.
    plain: [Address; 2],
    sasl: Option<[Address; 2]>,
    config: ClientConfig,
    pub sides: [Side; 2],
    pub exchanges: Vec<Exchange>,
    pub script: String,
    pub injection: Option<Injection>,
    /// Every request played, encoded as sent to kafkalite (header + body, no size
    /// prefix): the fuzzer's seeds.
    pub corpus: Vec<Seed>,
}

/// One recorded request frame.
#[derive(Clone, Debug)]
pub struct Seed {
    pub api: ApiKey,
    pub version: i16,
    pub frame: Vec<u8>,
    /// The same step as sent to Kafka: it differs where the request names what each
    /// broker assigned (topic ids, member ids, producer ids).
    pub kafka_frame: Vec<u8>,
}

/// What a step got back from one side.
pub type Answer<T> = Result<T, String>;

impl Session {
    pub fn new(kafkalite: &str, kafka: &str) -> Result<Session, String> {
        Session::with_sasl(kafkalite, kafka, None)
    }

    /// As [`Session::new`], with each broker's SASL_PLAINTEXT listener too.
    pub fn with_sasl(
        kafkalite: &str,
        kafka: &str,
        sasl: Option<(&str, &str)>,
    ) -> Result<Session, String> {
        let address = |bootstrap: &str| -> Result<Address, String> {
            parse_bootstrap(bootstrap)
                .map_err(|e| e.to_string())?
                .into_iter()
                .next()
                .ok_or_else(|| format!("no address in {bootstrap:?}"))
        };
        let side = |bootstrap: &str| -> Result<Side, String> {
            Ok(Side {
                address: address(bootstrap)?,
                conn: None,
                vars: HashMap::new(),
            })
        };
        let plain = [address(kafkalite)?, address(kafka)?];
        let sasl = match sasl {
            Some((ours, theirs)) => Some([address(ours)?, address(theirs)?]),
            None => None,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let config = ClientConfig {
            client_id: "conformance".into(),
            request_timeout: Duration::from_secs(20),
            ..ClientConfig::default()
        };
        Ok(Session {
            runtime,
            plain,
            sasl,
            config,
            sides: [side(kafkalite)?, side(kafka)?],
            exchanges: Vec::new(),
            script: String::new(),
            injection: None,
            corpus: Vec::new(),
        })
    }

    /// Whether the brokers have SASL listeners (the security scripts need them).
    #[must_use]
    pub fn has_sasl(&self) -> bool {
        self.sasl.is_some()
    }

    /// Talk to `listener` from the next step on, on new connections (a SASL connection
    /// starts unauthenticated). `false` if the brokers have no such listener.
    pub fn switch(&mut self, listener: Listener) -> bool {
        let addresses = match listener {
            Listener::Plaintext => self.plain.clone(),
            Listener::Sasl => match &self.sasl {
                Some(a) => a.clone(),
                None => return false,
            },
        };
        for (side, address) in self.sides.iter_mut().zip(addresses) {
            side.address = address;
            side.conn = None;
        }
        true
    }

    /// Send one request to one side without comparing it (waiting for a broker to settle).
    pub fn call_unrecorded<R>(
        &mut self,
        side: usize,
        request: &R,
        version: i16,
    ) -> Answer<R::Response>
    where
        R: Request,
    {
        let s = &mut self.sides[side];
        let config = &self.config;
        let result = self.runtime.block_on(async {
            if s.conn.is_none() {
                s.conn = Some(
                    Connection::open(&s.address, config)
                        .await
                        .map_err(|e| e.to_string())?,
                );
            }
            let conn = s.conn.as_mut().expect("opened above");
            conn.call(request, version, Duration::from_secs(5))
                .await
                .map_err(|e| e.to_string())
        });
        if result.is_err() {
            // The stream may hold half a frame: the next step reconnects.
            s.conn = None;
        }
        result
    }

    /// Play one step: `build` makes the request for each side; both answers are compared
    /// and returned (kafkalite's first) so the script can read what it needs from them.
    pub fn play<R, F>(&mut self, step: &str, version: i16, build: F) -> [Answer<R::Response>; 2]
    where
        R: Request,
        R::Response: Debug,
        F: Fn(&Side) -> R,
    {
        let api = ApiKey::try_from(R::KEY)
            .map(|k| format!("{k:?}"))
            .unwrap_or_else(|()| R::KEY.to_string());
        let requests = [build(&self.sides[0]), build(&self.sides[1])];
        if let (Ok(key), Some(frame)) = (
            ApiKey::try_from(R::KEY),
            encode_frame(&requests[0], version),
        ) {
            let kafka_frame = encode_frame(&requests[1], version).unwrap_or_default();
            self.corpus.push(Seed {
                api: key,
                version,
                frame,
                kafka_frame,
            });
        }
        let answers = [
            self.call_unrecorded(KAFKALITE, &requests[0], version),
            self.call_unrecorded(KAFKA, &requests[1], version),
        ];
        let leaves = [
            self.leaves(&api, &answers[0], true),
            self.leaves(&api, &answers[1], false),
        ];
        let (fields, differences) = compare(&api, &leaves[0], &leaves[1]);
        self.exchanges.push(Exchange {
            api,
            version,
            script: self.script.clone(),
            step: step.to_string(),
            fields,
            differences,
        });
        answers
    }

    fn leaves<T: Debug>(&self, api: &str, answer: &Answer<T>, ours: bool) -> Vec<(String, String)> {
        let mut leaves = match answer {
            Err(e) => vec![("<answer>".into(), format!("error: {e}"))],
            Ok(response) => match tree::parse(&format!("{response:?}")) {
                Ok(mut node) => {
                    crate::normalize::sort_lists(api, &mut node);
                    tree::flatten(&node)
                }
                Err(e) => vec![("<answer>".into(), format!("unparsed Debug: {e}"))],
            },
        };
        if let (true, Some(inj)) = (ours, &self.injection) {
            if inj.api == api {
                for (path, value) in &mut leaves {
                    if crate::normalize::field_of(path) == inj.field {
                        value.clone_from(&inj.value);
                    }
                }
            }
        }
        leaves
    }
}

/// `request` with its header at `version`, as the fuzzer replays it (correlation id 1).
fn encode_frame<R: Request>(request: &R, version: i16) -> Option<Vec<u8>> {
    use kafka_protocol::messages::RequestHeader;
    use kafka_protocol::protocol::{Encodable, StrBytes};
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("conformance-fuzz")));
    let mut out = bytes::BytesMut::new();
    header.encode(&mut out, R::header_version(version)).ok()?;
    request.encode(&mut out, version).ok()?;
    Some(out.to_vec())
}

/// (fields compared, differences) of two leaf lists after normalisation.
#[must_use]
pub fn compare(
    api: &str,
    ours: &[(String, String)],
    theirs: &[(String, String)],
) -> (usize, Vec<Difference>) {
    let raw = |leaves: &[(String, String)]| -> BTreeMap<String, String> {
        leaves.iter().cloned().collect()
    };
    let (raw_ours, raw_theirs) = (raw(ours), raw(theirs));
    let normal_ours: BTreeMap<String, String> = normalize(api, ours).into_iter().collect();
    let normal_theirs: BTreeMap<String, String> = normalize(api, theirs).into_iter().collect();
    let mut paths: Vec<&String> = normal_ours.keys().chain(normal_theirs.keys()).collect();
    paths.sort();
    paths.dedup();
    let absent = || "<absent>".to_string();
    let differences = paths
        .iter()
        .filter(|p| normal_ours.get(**p) != normal_theirs.get(**p))
        .map(|p| Difference {
            path: (*p).clone(),
            kafkalite: raw_ours.get(*p).cloned().unwrap_or_else(absent),
            kafka: raw_theirs.get(*p).cloned().unwrap_or_else(absent),
        })
        .collect();
    (paths.len(), differences)
}
