//! Checking one value against its key: the type first (as Kafka's `ConfigDef.parseType`),
//! then the validator. Returns the value as stored: trimmed, booleans in lower case, list
//! items trimmed and joined by commas. A refusal's reason is Kafka's own words
//! (`ConfigDef`'s type parsing and validators), so "Invalid value {v} for configuration
//! {k}: {reason}" reads as Kafka's ConfigException does.

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

/// Kafka's name of a type, as its "Not a number of type INT" says it.
fn type_name(ty: Type) -> &'static str {
    match ty {
        Type::Boolean => "BOOLEAN",
        Type::String => "STRING",
        Type::Int => "INT",
        Type::Short => "SHORT",
        Type::Long => "LONG",
        Type::Double => "DOUBLE",
        Type::List => "LIST",
        Type::Class => "CLASS",
        Type::Password => "PASSWORD",
    }
}

fn integer(key: &ConfigKey, v: &str) -> Result<i64, Reason> {
    // Java's Integer.parseInt (and Short, Long) refuses a value out of the type's range as
    // it refuses one that is no number.
    let not_a_number = || format!("Not a number of type {}", type_name(key.ty));
    let n: i64 = v.parse().map_err(|_| not_a_number())?;
    let fits = match key.ty {
        Type::Int => i32::try_from(n).is_ok(),
        Type::Short => i16::try_from(n).is_ok(),
        _ => true,
    };
    if !fits {
        return Err(not_a_number());
    }
    Ok(n)
}

/// Check `n` against a numeric validator (Kafka's `ConfigDef.Range`).
pub fn bound(check: Check, n: i64) -> Result<(), Reason> {
    match check {
        Check::AtLeast(lo) | Check::Between(lo, _) if n < lo => {
            Err(format!("Value must be at least {lo}"))
        }
        Check::Between(_, hi) if n > hi => Err(format!("Value must be no more than {hi}")),
        Check::BetweenOr(lo, hi, or) if n != or && (n < lo || n > hi) => Err(format!(
            "Value must be between {lo} and {hi} or equal to {or}"
        )),
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
                _ => return Err("Expected value to be either true or false".into()),
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
            let x: f64 = v
                .parse()
                .map_err(|_| "Not a number of type DOUBLE".to_string())?;
            // NaN passes Kafka's range check but is no ratio: refused, as no number.
            if key.check == Check::Ratio && x.is_nan() {
                return Err("Not a number of type DOUBLE".into());
            }
            if key.check == Check::Ratio && x < 0.0 {
                return Err("Value must be at least 0".into());
            }
            if key.check == Check::Ratio && x > 1.0 {
                return Err("Value must be no more than 1".into());
            }
            Ok(v.to_string())
        }
        Type::List => {
            let items = list_items(v);
            match key.check {
                // Kafka's ValidList.in checks each item as a ValidString.
                Check::ListOf(allowed)
                    if items.is_empty() || !items.iter().all(|i| allowed.contains(i)) =>
                {
                    Err(format!("String must be one of: {}", allowed.join(", ")))
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
                Err(format!("String must be one of: {}", allowed.join(", ")))
            }
            // Stored as the set spells it.
            Check::OneOfAnyCase(allowed) => allowed
                .iter()
                .find(|a| a.eq_ignore_ascii_case(v))
                .map(|a| (*a).to_string())
                .ok_or_else(|| {
                    format!(
                        "String must be one of (case insensitive): {}",
                        allowed.join(", ")
                    )
                }),
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
