use super::*;

/// A client side of the exchange, written from RFC 5802, to drive the server.
fn client_final(
    mechanism: ScramMechanism,
    password: &str,
    client_first_bare: &str,
    server_first: &str,
) -> (String, Vec<u8>) {
    let mut salt = None;
    let mut iterations = 0;
    let mut nonce = "";
    for attr in server_first.split(',') {
        match attr.split_once('=').unwrap() {
            ("r", v) => nonce = v,
            ("s", v) => salt = Some(B64.decode(v).unwrap()),
            ("i", v) => iterations = v.parse().unwrap(),
            _ => {}
        }
    }
    let salt = salt.unwrap();
    let n = std::num::NonZeroU32::new(iterations).unwrap();
    let mut salted = vec![0u8; mechanism.digest_alg().output_len()];
    pbkdf2::derive(
        mechanism.pbkdf2_alg(),
        n,
        &salt,
        password.as_bytes(),
        &mut salted,
    );
    let client_key = mechanism.hmac(&salted, b"Client Key");
    let stored_key = mechanism.hash(&client_key);
    let without_proof = format!("c=biws,r={nonce}");
    let auth = format!("{client_first_bare},{server_first},{without_proof}");
    let sig = mechanism.hmac(&stored_key, auth.as_bytes());
    let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
    let server_key = mechanism.hmac(&salted, b"Server Key");
    let expected_v = mechanism.hmac(&server_key, auth.as_bytes());
    (
        format!("{without_proof},p={}", B64.encode(proof)),
        expected_v,
    )
}

fn run(
    mechanism: ScramMechanism,
    stored_pw: &str,
    given_pw: &str,
    user: &str,
) -> Result<String, String> {
    let cred = ScramCredential::from_password(mechanism, stored_pw, b"saltsalt", 4096);
    let lookup =
        |u: &str, m: ScramMechanism| (u == "alice" && m == mechanism).then(|| cred.clone());
    let mut server = ScramServer::new(mechanism);
    let bare = format!("n={user},r=clientnonce");
    let Step::Continue(first) = server.step(format!("n,,{bare}").as_bytes(), lookup)? else {
        panic!("expected server-first")
    };
    let first = String::from_utf8(first).unwrap();
    assert!(first.starts_with("r=clientnonce"), "{first}");
    let (fin, expected_v) = client_final(mechanism, given_pw, &bare, &first);
    match server.step(fin.as_bytes(), lookup)? {
        Step::Done { user, reply } => {
            assert_eq!(reply, format!("v={}", B64.encode(expected_v)).into_bytes());
            Ok(user)
        }
        Step::Continue(_) => panic!("expected the end"),
    }
}

#[test]
fn both_mechanisms_authenticate_with_the_right_password_only() {
    for m in ScramMechanism::ALL {
        assert_eq!(run(m, "pw", "pw", "alice").unwrap(), "alice");
        let e = run(m, "pw", "wrong", "alice").unwrap_err();
        assert!(e.contains("Invalid client credentials"), "{e}");
        let e = run(m, "pw", "pw", "mallory").unwrap_err();
        assert!(e.contains("Invalid user credentials"), "{e}");
    }
}

#[test]
fn credentials_round_trip_through_kafkas_text_form() {
    let c = ScramCredential::from_password(ScramMechanism::Sha512, "secret", b"0123456789", 8192);
    let text = c.to_kafka_string();
    assert!(text.ends_with(",iterations=8192"), "{text}");
    assert_eq!(ScramCredential::from_kafka_string(&text), Some(c));
    assert_eq!(ScramCredential::from_kafka_string("salt=x"), None);
}

#[test]
fn rfc7677_test_vector() {
    // RFC 7677 section 3: user, pencil, salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations.
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let cred = ScramCredential::from_password(ScramMechanism::Sha256, "pencil", &salt, 4096);
    let bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
    let server_first =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    let without_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    let auth = format!("{bare},{server_first},{without_proof}");
    let m = ScramMechanism::Sha256;
    let sig = m.hmac(&cred.stored_key, auth.as_bytes());
    let server_sig = m.hmac(&cred.server_key, auth.as_bytes());
    assert_eq!(
        B64.encode(server_sig),
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );
    let proof = B64
        .decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
        .unwrap();
    let client_key: Vec<u8> = proof.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
    assert_eq!(m.hash(&client_key), cred.stored_key);
}

#[test]
fn channel_binding_and_bad_shapes_are_refused() {
    let mut s = ScramServer::new(ScramMechanism::Sha256);
    let e = s.step(b"p=tls-unique,,n=a,r=x", |_, _| None).err().unwrap();
    assert!(e.contains("channel binding"), "{e}");
    let mut s = ScramServer::new(ScramMechanism::Sha256);
    assert!(s.step(b"garbage", |_, _| None).is_err());
}
