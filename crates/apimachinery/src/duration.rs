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

#[cfg(test)]
mod tests {
    use super::*;

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
