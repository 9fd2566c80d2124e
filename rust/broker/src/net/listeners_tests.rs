use std::collections::BTreeMap;

use super::*;

fn settings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

/// The error for these settings; panics if they are accepted.
fn rejected(pairs: &[(&str, &str)]) -> ListenerError {
    from_settings(&settings(pairs)).expect_err("settings should be rejected")
}

#[test]
fn default_is_one_plaintext_listener_on_loopback() {
    let s = from_settings(&BTreeMap::new()).unwrap();
    assert_eq!(
        s.listeners,
        vec![Listener::plaintext(
            "PLAINTEXT",
            "127.0.0.1:9092".parse().unwrap()
        )]
    );
    assert!(s.advertised.is_empty());
}

#[test]
fn parses_listeners_with_empty_ipv4_and_ipv6_hosts() {
    let s = from_settings(&settings(&[
        (
            "listeners",
            "PLAINTEXT://:9092, INTERNAL://[::1]:0,EXT://127.0.0.1:9093",
        ),
        (
            "listener.security.protocol.map",
            "INTERNAL:PLAINTEXT,EXT:PLAINTEXT",
        ),
        ("advertised.listeners", "PLAINTEXT://broker.example:9092"),
    ]))
    .unwrap();
    let bound: Vec<(&str, String)> = s
        .listeners
        .iter()
        .map(|l| (l.name.as_str(), l.bind.to_string()))
        .collect();
    assert_eq!(
        bound,
        vec![
            ("PLAINTEXT", "0.0.0.0:9092".to_string()),
            ("INTERNAL", "[::1]:0".to_string()),
            ("EXT", "127.0.0.1:9093".to_string()),
        ]
    );
    assert!(s
        .listeners
        .iter()
        .all(|l| l.security_protocol == SecurityProtocol::Plaintext));
    assert_eq!(
        s.advertised,
        vec![("PLAINTEXT".into(), "broker.example".into(), 9092)]
    );
}

#[test]
fn security_protocols_round_trip_their_kafka_names() {
    for p in SecurityProtocol::ALL {
        assert_eq!(SecurityProtocol::from_name(p.name()), Some(p));
        assert_eq!(p.to_string(), p.name());
    }
    assert_eq!(SecurityProtocol::from_name("TLS"), None);
    assert_eq!(default_protocol_map().len(), 4);
}

#[test]
fn protocol_map_adds_to_the_default() {
    let map = parse_protocol_map("CONTROLLER:PLAINTEXT, SECURE : SASL_SSL").unwrap();
    assert_eq!(map["CONTROLLER"], SecurityProtocol::Plaintext);
    assert_eq!(map["SECURE"], SecurityProtocol::SaslSsl);
    assert_eq!(map["SSL"], SecurityProtocol::Ssl);
    for bad_map in ["A:TLS", "A", ":PLAINTEXT"] {
        let e = parse_protocol_map(bad_map).unwrap_err();
        assert_eq!(e.key, "listener.security.protocol.map");
        assert!(e.reason.contains("is not NAME:PROTOCOL"), "{e}");
    }
}

#[test]
fn malformed_listeners_are_rejected() {
    for value in [
        "PLAINTEXT:9092",
        "PLAINTEXT://host",
        "PLAINTEXT://::1:9092",
        "PLAINTEXT://[::1:9092",
        "PLAIN TEXT://:9092",
        "://:9092",
        "PLAINTEXT://:x",
    ] {
        let e = rejected(&[("listeners", value)]);
        assert_eq!((e.key, e.value.as_str()), ("listeners", value));
        assert!(e.reason.contains("is not NAME://host:port"), "{value}: {e}");
    }
    let e = rejected(&[("listeners", "PLAINTEXT://:70000")]);
    assert!(e.reason.contains("port 70000 is out of range"), "{e}");
    let e = rejected(&[("listeners", " , ")]);
    assert_eq!(e.reason, "no listener given");
}

#[test]
fn a_listener_name_given_twice_is_rejected() {
    let e = rejected(&[("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093")]);
    assert_eq!(e.reason, "listener name PLAINTEXT appears twice");
    let e = rejected(&[(
        "advertised.listeners",
        "PLAINTEXT://a:9092,PLAINTEXT://b:9092",
    )]);
    assert_eq!(e.key, "advertised.listeners");
    assert_eq!(e.reason, "listener name PLAINTEXT appears twice");
}

#[test]
fn two_listeners_may_not_share_a_port_unless_it_is_ephemeral() {
    let map = ("listener.security.protocol.map", "OTHER:PLAINTEXT");
    let e = rejected(&[("listeners", "PLAINTEXT://:1,OTHER://127.0.0.1:1"), map]);
    assert_eq!(e.reason, "two listeners share a port");
    let s = from_settings(&settings(&[
        ("listeners", "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0"),
        map,
    ]))
    .unwrap();
    assert_eq!(s.listeners.len(), 2);
}

#[test]
fn a_listener_without_a_protocol_is_rejected_by_name() {
    let e = rejected(&[("listeners", "INTERNAL://:9094")]);
    assert_eq!(e.key, "listeners");
    assert_eq!(
        e.reason,
        "listener INTERNAL has no entry in listener.security.protocol.map"
    );
}

#[test]
fn every_protocol_is_served_several_at_once() {
    let s = from_settings(&settings(&[
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
        ),
        ("listener.security.protocol.map", "SECURE:SASL_SSL"),
    ]))
    .unwrap();
    let protocols: Vec<_> = s.listeners.iter().map(|l| l.security_protocol).collect();
    assert_eq!(protocols, SecurityProtocol::ALL);
}

#[test]
fn advertised_listeners_must_name_a_listener() {
    let e = rejected(&[("advertised.listeners", "OTHER://h:1")]);
    assert_eq!(
        (e.key, e.reason.as_str()),
        ("advertised.listeners", "OTHER is not in listeners")
    );
}

#[test]
fn advertised_listeners_must_be_reachable() {
    for value in [
        "PLAINTEXT://:9092",
        "PLAINTEXT://0.0.0.0:9092",
        "PLAINTEXT://[::]:9092",
    ] {
        let e = rejected(&[("advertised.listeners", value)]);
        assert_eq!(e.reason, "clients cannot connect to a wildcard address");
    }
    let e = rejected(&[("advertised.listeners", "PLAINTEXT://h:0")]);
    assert_eq!(e.reason, "port 0 cannot be advertised");
}

#[test]
fn errors_read_like_config_errors() {
    let e = rejected(&[("listeners", "SSL://:9093,SSL://:9094")]);
    assert_eq!(
        e.to_string(),
        "Invalid value SSL://:9093,SSL://:9094 for configuration listeners: listener name SSL \
         appears twice"
    );
}
