//! Principals from TLS client certificates: the subject's distinguished name in
//! RFC 2253 form (as Java's `X500Principal.getName()` writes it, which is what Kafka
//! maps), then `ssl.principal.mapping.rules` (Kafka's `SslPrincipalMapper`).

use regex::Regex;

/// Read one DER element: (tag, content, rest).
pub(super) fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        rest = &rest[n..];
        len
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

fn oid_string(bytes: &[u8]) -> String {
    let mut parts: Vec<u64> = Vec::new();
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate() {
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if parts.is_empty() && i < bytes.len() {
                let first = (value / 40).min(2);
                parts.push(first);
                parts.push(value - first * 40);
            } else {
                parts.push(value);
            }
            value = 0;
        }
    }
    parts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// The keywords Java's RFC 2253 output uses; other attributes are written as OID=#hex.
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == ' ' || c == '#'))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The subject of a DER certificate in RFC 2253 form ("CN=alice,OU=eng,O=Org,C=US":
/// last RDN first, as Java writes it). `None` if the certificate cannot be read.
#[must_use]
pub fn subject_rfc2253(cert_der: &[u8]) -> Option<String> {
    let (_, cert, _) = der(cert_der)?;
    let (_, tbs, _) = der(cert)?;
    let mut rest = tbs;
    let (tag, _, after) = der(rest)?;
    if tag == 0xa0 {
        rest = after; // explicit version
    }
    // serial, signature algorithm, issuer, validity, then the subject.
    for _ in 0..4 {
        rest = der(rest)?.2;
    }
    let (tag, mut rdns, _) = der(rest)?;
    if tag != 0x30 {
        return None;
    }
    let mut names = Vec::new();
    while !rdns.is_empty() {
        let (_, set, next) = der(rdns)?;
        rdns = next;
        let mut set_rest = set;
        let mut parts = Vec::new();
        while !set_rest.is_empty() {
            let (_, atv, next) = der(set_rest)?;
            set_rest = next;
            let (_, oid, value) = der(atv)?;
            let oid = oid_string(oid);
            let (value_tag, content, _) = der(value)?;
            let text = match keyword(&oid) {
                Some(kw) => {
                    let s = match value_tag {
                        // BMPString: UTF-16BE.
                        0x1e => String::from_utf16_lossy(
                            &content
                                .chunks(2)
                                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))
                                .collect::<Vec<_>>(),
                        ),
                        _ => String::from_utf8_lossy(content).into_owned(),
                    };
                    format!("{kw}={}", escape_rfc2253(&s))
                }
                None => {
                    let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
                    let whole = value.len() - der(value).map_or(0, |(_, _, r)| r.len());
                    format!("{oid}=#{}", &hex[..whole * 2])
                }
            };
            parts.push(text);
        }
        names.push(parts.join("+"));
    }
    names.reverse();
    Some(names.join(","))
}

/// One `ssl.principal.mapping.rules` rule.
#[derive(Clone, Debug)]
enum Rule {
    Default,
    Pattern {
        regex: Regex,
        replacement: String,
        case: Option<char>,
    },
}

/// Kafka's `SslPrincipalMapper`.
#[derive(Clone, Debug)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

impl PrincipalMapper {
    /// Parse the rules ("DEFAULT", "RULE:pattern/replacement/[LU]", separated by commas
    /// or newlines; a pattern may hold escaped slashes and commas).
    pub fn parse(value: &str) -> Result<PrincipalMapper, String> {
        let mut rules = Vec::new();
        let mut rest = value.trim_start();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("DEFAULT") {
                rules.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let (pattern, after) = until_slash(after)
                    .ok_or_else(|| format!("rule {rest:?} has no '/' after its pattern"))?;
                let (replacement, after) = until_slash(after)
                    .ok_or_else(|| format!("rule {rest:?} has no '/' after its replacement"))?;
                let case = match after.chars().next() {
                    Some(c @ ('L' | 'U')) => Some(c),
                    _ => None,
                };
                rest = &after[usize::from(case.is_some())..];
                let regex = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("rule pattern {pattern:?}: {e}"))?;
                rules.push(Rule::Pattern {
                    regex,
                    replacement: java_replacement(&replacement),
                    case,
                });
            } else {
                return Err(format!(
                    "{rest:?} is neither DEFAULT nor RULE:pattern/replacement/"
                ));
            }
            rest = rest.trim_start_matches([' ', '\t']);
            match rest.chars().next() {
                Some(',' | '\n') => rest = rest[1..].trim_start(),
                None => {}
                Some(_) => return Err(format!("unexpected {rest:?} after a rule")),
            }
        }
        if rules.is_empty() {
            rules.push(Rule::Default);
        }
        Ok(PrincipalMapper { rules })
    }

    /// The principal name for a distinguished name; `Err` when no rule applies.
    pub fn map(&self, dn: &str) -> Result<String, String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_string()),
                Rule::Pattern {
                    regex,
                    replacement,
                    case,
                } => {
                    if let Some(caps) = regex.captures(dn) {
                        let mut out = String::new();
                        caps.expand(replacement, &mut out);
                        return Ok(match case {
                            Some('L') => out.to_lowercase(),
                            Some('U') => out.to_uppercase(),
                            _ => out,
                        });
                    }
                }
            }
        }
        Err(format!(
            "No rules apply to {dn}, rules {:?}",
            self.rules.len()
        ))
    }
}

/// Up to the next unescaped '/', unescaping "\/"; and what follows the slash.
fn until_slash(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    if n != '/' {
                        out.push('\\');
                    }
                    out.push(n);
                }
            }
            '/' => return Some((out, &s[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

/// Java's `$1` group references as the regex crate spells them (`${1}`), so "$1x" stays
/// group 1 followed by "x".
fn java_replacement(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            let mut n = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                n.push(*d);
                chars.next();
            }
            out.push_str(&format!("${{{n}}}"));
        } else if c == '$' {
            out.push_str("$$");
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_mapping_rules() {
        let m = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, DEFAULT",
        )
        .unwrap();
        assert_eq!(
            m.map("CN=kafka-svc,OU=ServiceUsers,O=Org").unwrap(),
            "kafka-svc"
        );
        assert_eq!(
            m.map("CN=Duke,OU=JavaSoft,O=Sun,L=Cupertino,ST=CA,C=US")
                .unwrap(),
            "duke@javasoft"
        );
        assert_eq!(m.map("CN=other").unwrap(), "CN=other");
        let strict = PrincipalMapper::parse("RULE:^CN=([a-z]+)$/$1/U").unwrap();
        assert_eq!(strict.map("CN=abc").unwrap(), "ABC");
        assert!(strict.map("CN=a,O=b").is_err());
        assert_eq!(
            PrincipalMapper::parse("DEFAULT")
                .unwrap()
                .map("CN=x")
                .unwrap(),
            "CN=x"
        );
        assert!(PrincipalMapper::parse("RULE:abc").is_err());
        assert!(PrincipalMapper::parse("bogus").is_err());
    }

    #[test]
    fn escaping_follows_rfc2253() {
        assert_eq!(escape_rfc2253("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape_rfc2253(" #x "), "\\ #x\\ ");
    }

    #[test]
    fn oids_decode() {
        assert_eq!(oid_string(&[0x55, 0x04, 0x03]), "2.5.4.3");
        assert_eq!(
            oid_string(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01]),
            "1.2.840.113549.1.9.1"
        );
    }
}
