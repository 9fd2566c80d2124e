//! Triage of saved fuzz cases: replay one mutated frame against both brokers, each on a
//! fresh connection, and show the request as the codec reads it and both answers, so a
//! case can be told apart as kafkalite's fault, the runner's, or a listed difference.

use std::net::TcpStream;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;
use serde::Serialize;

use crate::fuzz::{self, Outcome};
use crate::request_text::request_debug;

/// One replayed frame: what each broker did, and the request and answers decoded.
#[derive(Clone, Debug, Serialize)]
pub struct Replay {
    pub request: String,
    pub kafkalite: Outcome,
    pub kafkalite_answer: Option<String>,
    pub kafka: Outcome,
    pub kafka_answer: Option<String>,
}

/// Send `frame` to both brokers, each on a fresh connection.
pub fn replay(kafkalite: &str, kafka: &str, frame: &[u8]) -> Result<Replay, String> {
    let (ours, theirs) = (fuzz::resolve(kafkalite)?, fuzz::resolve(kafka)?);
    let (api, version) = match frame {
        [a, b, c, d, ..] => (
            ApiKey::try_from(i16::from_be_bytes([*a, *b])).unwrap_or(ApiKey::ApiVersions),
            i16::from_be_bytes([*c, *d]),
        ),
        _ => (ApiKey::ApiVersions, 0),
    };
    let one = |addr| -> (Outcome, Option<String>) {
        let Some(mut stream) = fuzz::connect(addr) else {
            return (Outcome::Unreachable, None);
        };
        let did = fuzz::exchange_raw(&mut stream, frame);
        close(stream);
        match did {
            Ok(body) => {
                let mut bytes = bytes::Bytes::from(body.clone());
                let _ = ResponseHeader::decode(&mut bytes, api.response_header_version(version));
                let text = fuzz::debug_of(api, &mut bytes, version);
                (fuzz::classify(api, version, body), text)
            }
            Err(outcome) => (outcome, None),
        }
    };
    let (kafkalite, kafkalite_answer) = one(ours);
    let (kafka, kafka_answer) = one(theirs);
    Ok(Replay {
        request: request_debug(frame),
        kafkalite,
        kafkalite_answer,
        kafka,
        kafka_answer,
    })
}

fn close(stream: TcpStream) {
    fuzz::close_hard(stream);
}
