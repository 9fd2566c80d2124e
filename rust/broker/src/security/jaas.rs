//! Kafka's one-line JAAS config (`sasl.jaas.config`):
//! `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";`
//! — a login module class, a control flag, then `key=value` options (values quoted or
//! bare), ending with `;`. Only the first module is read (Kafka allows one per mechanism).

use std::collections::BTreeMap;

/// One parsed login module entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JaasEntry {
    pub login_module: String,
    pub flag: String,
    pub options: BTreeMap<String, String>,
}

impl JaasEntry {
    /// PLAIN's users: every `user_<name>="<password>"` option.
    #[must_use]
    pub fn plain_users(&self) -> BTreeMap<String, String> {
        self.options
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("user_")?.to_string(), v.clone())))
            .collect()
    }
}

const FLAGS: [&str; 4] = ["required", "requisite", "sufficient", "optional"];

/// Parse `value`; the error says what is wrong (never echoes passwords).
pub fn parse(value: &str) -> Result<JaasEntry, String> {
    let mut chars = value.trim().chars().peekable();
    let word = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut w = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || c == ';' || c == '=' {
                break;
            }
            w.push(c);
            chars.next();
        }
        w
    };
    let login_module = word(&mut chars);
    if login_module.is_empty() {
        return Err("no login module class".into());
    }
    let flag = word(&mut chars).to_lowercase();
    if !FLAGS.contains(&flag.as_str()) {
        return Err(format!(
            "login module control flag must be one of {FLAGS:?}, not {flag:?}"
        ));
    }
    let mut options = BTreeMap::new();
    loop {
        let key = word(&mut chars);
        if key.is_empty() {
            break;
        }
        if chars.next() != Some('=') {
            return Err(format!("option {key} has no '=value'"));
        }
        let value = if chars.peek() == Some(&'"') {
            chars.next();
            let mut v = String::new();
            loop {
                match chars.next() {
                    Some('\\') => v.extend(chars.next()),
                    Some('"') => break,
                    Some(c) => v.push(c),
                    None => return Err(format!("option {key}: unterminated quoted value")),
                }
            }
            v
        } else {
            word(&mut chars)
        };
        options.insert(key, value);
    }
    while chars.peek().is_some_and(|c| c.is_whitespace()) {
        chars.next();
    }
    if chars.next() != Some(';') {
        return Err("the entry must end with ';'".into());
    }
    Ok(JaasEntry {
        login_module,
        flag,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_plain_config_gives_its_users() {
        let e = parse(
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"admin\" password=\"admin-secret\"\n user_admin=\"admin-secret\" \
             user_alice=\"a;l\\\"ice\" serviceName=kafka;",
        )
        .unwrap();
        assert_eq!(e.flag, "required");
        assert_eq!(e.options["serviceName"], "kafka");
        let users = e.plain_users();
        assert_eq!(users["admin"], "admin-secret");
        assert_eq!(users["alice"], "a;l\"ice");
        assert_eq!(users.len(), 2);
    }

    #[test]
    fn malformed_entries_say_why() {
        assert!(parse("").unwrap_err().contains("login module"));
        assert!(parse("M sometimes;").unwrap_err().contains("control flag"));
        assert!(parse("M required a=\"b")
            .unwrap_err()
            .contains("unterminated"));
        assert!(parse("M required a=b")
            .unwrap_err()
            .contains("end with ';'"));
        assert!(parse("M required a b;")
            .unwrap_err()
            .contains("no '=value'"));
    }
}
