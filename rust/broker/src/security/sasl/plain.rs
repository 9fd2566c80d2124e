//! SASL/PLAIN (RFC 4616) against the users of the listener's JAAS config, with Kafka's
//! messages (`PlainSaslServer`).

use std::collections::BTreeMap;

fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `authzid NUL username NUL password` → the authenticated user, or Kafka's message.
pub fn authenticate(token: &[u8], users: &BTreeMap<String, String>) -> Result<String, String> {
    let mut parts = token.split(|&b| b == 0);
    let (Some(authzid), Some(user), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("Invalid SASL/PLAIN response: expected 3 tokens".into());
    };
    let user = std::str::from_utf8(user).map_err(|_| "SASL/PLAIN username is not UTF-8")?;
    if user.is_empty() {
        return Err("Authentication failed: username not specified".into());
    }
    if password.is_empty() {
        return Err("Authentication failed: password not specified".into());
    }
    if !authzid.is_empty() && authzid != user.as_bytes() {
        return Err(
            "Authentication failed: Client requested an authorization id that is different \
             from username"
                .into(),
        );
    }
    match users.get(user) {
        Some(expected) if equal_in_constant_time(expected.as_bytes(), password) => {
            Ok(user.to_string())
        }
        _ => Err("Authentication failed: Invalid username or password".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_checks_user_password_and_authzid() {
        let users: BTreeMap<String, String> = [("alice".to_string(), "pw".to_string())].into();
        assert_eq!(authenticate(b"\0alice\0pw", &users).unwrap(), "alice");
        assert_eq!(authenticate(b"alice\0alice\0pw", &users).unwrap(), "alice");
        for (token, why) in [
            (&b"\0alice\0nope"[..], "Invalid username or password"),
            (b"\0bob\0pw", "Invalid username or password"),
            (b"bob\0alice\0pw", "authorization id"),
            (b"\0\0pw", "username not specified"),
            (b"alice-pw", "expected 3 tokens"),
        ] {
            let e = authenticate(token, &users).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }
}
