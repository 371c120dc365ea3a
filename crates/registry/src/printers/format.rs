//! Cell formatting helpers shared by the printers, each the twin of a
//! kube-apiserver helper: `duration.HumanDuration`, `translateTimestampSince`,
//! `labels.FormatLabels`, `metav1.FormatLabelSelector`, `net.JoinHostPort`.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

/// `duration.HumanDuration` (k8s.io/apimachinery/pkg/util/duration): `5s`,
/// `3m2s`, `15m`, `2h30m`, `10h`, `2d3h`, `30d`, `2y45d`, `9y`.
pub fn human_duration(d: SignedDuration) -> String {
    let total_secs = d.as_secs();
    if total_secs < -1 {
        return "<invalid>".into();
    }
    if total_secs < 0 {
        return "0s".into();
    }
    if total_secs < 60 * 2 {
        return format!("{total_secs}s");
    }
    let minutes = total_secs / 60;
    if minutes < 10 {
        let s = total_secs % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = total_secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{}h", hours / 24, h);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{}d", hours / 24 / 365, dy);
    }
    format!("{}y", hours / 24 / 365)
}

/// Parse a `metav1.Time` / `MicroTime` JSON value; `None` when absent or zero.
pub fn parse_time(v: Option<&Value>) -> Option<Timestamp> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .and_then(|s| s.parse::<Timestamp>().ok())
}

/// `translateTimestampSince`: the age of a timestamp, `<unknown>` when unset.
pub fn since(v: Option<&Value>, now: Timestamp) -> String {
    match parse_time(v) {
        Some(t) => human_duration(now.duration_since(t)),
        None => "<unknown>".into(),
    }
}

/// `labels.FormatLabels`: `a=b,c=d` sorted by key, `<none>` when empty.
pub fn format_labels(v: Option<&Value>) -> String {
    let Some(map) = v.and_then(Value::as_object) else {
        return "<none>".into();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by
/// key; `Err` when the selector is invalid (unknown operator). A missing or
/// empty selector is the empty string.
pub fn label_selector_string(v: Option<&Value>) -> Result<String, ()> {
    let Some(sel) = v.filter(|v| !v.is_null()) else {
        return Ok(String::new());
    };
    let Some(sel) = sel.as_object() else {
        return Err(());
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let op = e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mut values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            values.sort_unstable();
            values.dedup();
            let s = match op {
                "In" => format!("{key} in ({})", values.join(",")),
                "NotIn" => format!("{key} notin ({})", values.join(",")),
                "Exists" => key.to_string(),
                "DoesNotExist" => format!("!{key}"),
                _ => return Err(()),
            };
            reqs.push((key.to_string(), s));
        }
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, s)| s)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
pub fn format_label_selector(v: Option<&Value>) -> String {
    match label_selector_string(v) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// `net.JoinHostPort`: brackets around IPv6 hosts.
pub fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `IntOrString.String()`.
pub fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(secs: i64) -> String {
        human_duration(SignedDuration::from_secs(secs))
    }

    #[test]
    fn human_duration_matches_kube_buckets() {
        assert_eq!(d(-5), "<invalid>");
        assert_eq!(d(-1), "0s");
        assert_eq!(d(5), "5s");
        assert_eq!(d(119), "119s");
        assert_eq!(d(120), "2m");
        assert_eq!(d(182), "3m2s");
        assert_eq!(d(10 * 60 + 5), "10m");
        assert_eq!(d(179 * 60), "179m");
        assert_eq!(d(3 * 3600), "3h");
        assert_eq!(d(3 * 3600 + 25 * 60), "3h25m");
        assert_eq!(d(47 * 3600), "47h");
        assert_eq!(d(51 * 3600), "2d3h");
        assert_eq!(d(72 * 3600), "3d");
        assert_eq!(d(30 * 86400), "30d");
        assert_eq!(d(2 * 365 * 86400 + 45 * 86400), "2y45d");
        assert_eq!(d(9 * 365 * 86400), "9y");
    }

    #[test]
    fn labels_are_sorted_and_empty_is_none() {
        assert_eq!(format_labels(Some(&json!({"b": "2", "a": "1"}))), "a=1,b=2");
        assert_eq!(format_labels(Some(&json!({}))), "<none>");
        assert_eq!(format_labels(None), "<none>");
    }

    #[test]
    fn selectors_print_requirements_sorted_by_key() {
        let sel = json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "DoesNotExist"}
            ]
        });
        assert_eq!(
            format_label_selector(Some(&sel)),
            "app=web,!env,tier in (a,b)"
        );
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        assert_eq!(
            format_label_selector(Some(
                &json!({"matchExpressions": [{"key": "k", "operator": "Bad"}]})
            )),
            "<error>"
        );
    }

    #[test]
    fn ipv6_hosts_get_brackets() {
        assert_eq!(join_host_port("10.0.0.1", 80), "10.0.0.1:80");
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }
}
