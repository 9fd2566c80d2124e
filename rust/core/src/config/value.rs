//! Checking one value against its key: the type first (as Kafka's `ConfigDef.parseType`),
//! then the validator. Returns the value as stored: trimmed, booleans in lower case, list
//! items trimmed and joined by commas.

use super::schema::{Check, ConfigKey, Type};

/// Why a value was refused, without the key and value (callers add those in their own
/// error form).
pub type Reason = String;

pub(crate) fn list_items(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn integer(key: &ConfigKey, v: &str) -> Result<i64, Reason> {
    let n: i64 = v.parse().map_err(|_| "not an integer".to_string())?;
    let fits = match key.ty {
        Type::Int => i32::try_from(n).is_ok(),
        Type::Short => i16::try_from(n).is_ok(),
        _ => true,
    };
    if !fits {
        let bits = if key.ty == Type::Short { 16 } else { 32 };
        return Err(format!("must fit in a {bits}-bit integer"));
    }
    Ok(n)
}

/// Check `n` against a numeric validator.
pub fn bound(check: Check, n: i64) -> Result<(), Reason> {
    match check {
        Check::AtLeast(lo) if n < lo => Err(format!("must be at least {lo}")),
        Check::Between(lo, hi) if n < lo || n > hi => Err(format!("must be between {lo} and {hi}")),
        _ => Ok(()),
    }
}

/// Check `value` for `key` and return it as stored.
pub fn normalize(key: &ConfigKey, value: &str) -> Result<String, Reason> {
    let v = value.trim();
    match key.ty {
        Type::Boolean => {
            let b = match v.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err("must be true or false".into()),
            };
            match key.check {
                Check::Unsupported(why) if b => Err(why.into()),
                _ => Ok(b.to_string()),
            }
        }
        Type::Int | Type::Short | Type::Long => {
            let n = integer(key, v)?;
            bound(key.check, n)?;
            Ok(n.to_string())
        }
        Type::Double => {
            let x: f64 = v.parse().map_err(|_| "not a number".to_string())?;
            if key.check == Check::Ratio && !(0.0..=1.0).contains(&x) {
                return Err("must be between 0 and 1".into());
            }
            Ok(v.to_string())
        }
        Type::List => {
            let items = list_items(v);
            match key.check {
                Check::ListOf(allowed)
                    if items.is_empty() || !items.iter().all(|i| allowed.contains(i)) =>
                {
                    Err(format!("must be a list of {}", allowed.join(", ")))
                }
                Check::NonEmpty(what) if items.is_empty() => Err(format!("no {what} given")),
                Check::Replicas if !(items == ["*"] || items.iter().all(|i| is_pair(i))) => {
                    Err("must be * or a list of partition:broker pairs".into())
                }
                _ => Ok(items.join(",")),
            }
        }
        Type::String | Type::Class | Type::Password => match key.check {
            Check::KnownClass(known) if !known.contains(&v) => {
                Err(format!("Class {v} cannot be found"))
            }
            Check::OneOf(allowed) if !allowed.contains(&v) => {
                Err(format!("must be one of {}", allowed.join(", ")))
            }
            Check::OneOfAnyCase(allowed) => {
                let lower = v.to_ascii_lowercase();
                if allowed.contains(&lower.as_str()) {
                    Ok(lower)
                } else {
                    Err(format!(
                        "must be one of {} (in any case)",
                        allowed.join(", ")
                    ))
                }
            }
            // A STRING Kafka splits at commas itself (`log.dirs`) needs an item.
            Check::NonEmpty(what) if list_items(v).is_empty() => Err(format!("no {what} given")),
            // Passwords are kept exactly as given.
            _ if key.ty == Type::Password => Ok(value.to_string()),
            _ => Ok(v.to_string()),
        },
    }
}

fn is_pair(item: &str) -> bool {
    item.split_once(':')
        .is_some_and(|(p, b)| p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok())
}
