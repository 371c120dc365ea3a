//! Durations on the command line, written as Go's `time.ParseDuration`
//! reads them (`10s`, `1m30s`, `500ms`) or in ISO 8601 (`PT10S`), so the
//! flags shared with kube-apiserver and Federation v1 take the same values.

use std::time::Duration;

/// Parse a duration; `0` is zero, negative durations are rejected.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let trimmed = s.trim();
    if trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    let signed: jiff::SignedDuration = trimmed
        .parse()
        .map_err(|e| format!("invalid duration {s:?}: {e}"))?;
    Duration::try_from(signed).map_err(|_| format!("invalid duration {s:?}: must not be negative"))
}

/// Parse a duration that must be more than zero (a period, a timeout).
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("invalid duration {s:?}: must be positive"));
    }
    Ok(d)
}

/// Go's `time.ParseDuration`, with its error text (`time: invalid duration
/// "x"`): a signed sequence of decimal numbers with units `ns`, `us`, `µs`,
/// `ms`, `s`, `m`, `h` (`300ms`, `-1.5h`, `2h45m`); `0` needs no unit.
/// Returns nanoseconds.
pub fn parse_go_duration(s: &str) -> Result<i128, String> {
    let quoted = serde_json::Value::String(s.to_string());
    let invalid = || format!("time: invalid duration {quoted}");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_len];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(invalid());
        }
        let value: f64 = num.parse().map_err(|_| invalid())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale = match unit {
            "" => return Err(format!("time: missing unit in duration {quoted}")),
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => {
                let unit = serde_json::Value::String(other.to_string());
                return Err(format!("time: unknown unit {unit} in duration {quoted}"));
            }
        };
        total += value * scale;
    }
    if total > i64::MAX as f64 {
        return Err(invalid());
    }
    let nanos = total as i128;
    Ok(if neg { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_as_go_parses_them() {
        assert_eq!(parse_go_duration("3m"), Ok(180_000_000_000));
        assert_eq!(parse_go_duration("0s"), Ok(0));
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration("1h2m3.5s"), Ok(3_723_500_000_000));
        assert_eq!(parse_go_duration("-300ms"), Ok(-300_000_000));
        assert_eq!(
            parse_go_duration("invalid"),
            Err("time: invalid duration \"invalid\"".to_string())
        );
        assert_eq!(
            parse_go_duration("3"),
            Err("time: missing unit in duration \"3\"".to_string())
        );
        assert_eq!(
            parse_go_duration("3d"),
            Err("time: unknown unit \"d\" in duration \"3d\"".to_string())
        );
        assert!(parse_go_duration("").is_err());
    }

    #[test]
    fn durations_parse_as_go_writes_them() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn a_positive_duration_refuses_zero() {
        assert_eq!(parse_positive_duration("40s"), Ok(Duration::from_secs(40)));
        assert!(parse_positive_duration("0s").is_err());
        assert!(parse_positive_duration("0").is_err());
    }
}
