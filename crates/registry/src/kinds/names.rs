//! Name-format checks with kube-apiserver's wording
//! (`k8s.io/apimachinery/pkg/util/validation`): DNS-1123 labels and
//! subdomains, DNS-1035 labels, and which of them a kind's `metadata.name`
//! must satisfy ([`NameValidation`]).

/// Which format a kind's `metadata.name` must have (kube-apiserver's
/// `ValidateNameFunc` for the kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameValidation {
    /// `NameIsDNSSubdomain` (most kinds).
    Dns1123Subdomain,
    /// `NameIsDNSLabel` (namespaces).
    Dns1123Label,
    /// `NameIsDNS1035Label` (services).
    Dns1035Label,
    /// `path.ValidatePathSegmentName` (RBAC kinds: anything but `.`, `..`, `/`, `%`).
    PathSegment,
}

impl NameValidation {
    /// kube-apiserver's messages for an invalid name (empty when valid).
    pub fn check(self, name: &str) -> Vec<String> {
        match self {
            NameValidation::Dns1123Subdomain => dns1123_subdomain(name),
            NameValidation::Dns1123Label => dns1123_label(name),
            NameValidation::Dns1035Label => dns1035_label(name),
            NameValidation::PathSegment => path_segment_name(name),
        }
    }
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_lower_alnum(b[0])
        && is_lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

/// Whether `s` is a DNS-1123 label (no messages).
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && matches_label(s)
}

/// Whether `s` is a DNS-1123 subdomain (no messages).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(matches_label)
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

/// `IsDNS1123Label`.
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_label(s) {
        errs.push(regex_error(
            DNS1123_LABEL_MSG,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !s.split('.').all(matches_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`.
pub fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !(matches_label(s) && s.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `path.IsValidPathSegmentName`.
pub fn path_segment_name(s: &str) -> Vec<String> {
    if s == "." || s == ".." {
        return vec![format!("may not be '{s}'")];
    }
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if s.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// `IsValidPortName` (IANA service name).
pub fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.is_empty() || s.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    let b = s.as_bytes();
    if !b
        .iter()
        .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    } else if s.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if !b.iter().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `IsQualifiedName` (label keys, annotation-like names `prefix/name`).
pub fn qualified_name(s: &str) -> Vec<String> {
    const NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
    const NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    let (prefix, name) = match s.split_once('/') {
        None => (None, s),
        Some((p, n)) if !n.contains('/') => (Some(p), n),
        Some(_) => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    NAME_MSG.trim_start_matches("name part "),
                    NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".into());
        } else {
            for m in dns1123_subdomain(p) {
                errs.push(format!("prefix part {m}"));
            }
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else {
        if name.len() > 63 {
            errs.push(format!("name part {}", max_len_error(63)));
        }
        if !is_qualified_name_part(name) {
            errs.push(regex_error(
                NAME_MSG,
                NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            ));
        }
    }
    errs
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `IsValidLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !s.is_empty() && !is_qualified_name_part(s) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsConfigMapKey`: the keys of ConfigMap and Secret data.
pub fn config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if s == "." {
        errs.push("must not be '.'".into());
    } else if s == ".." {
        errs.push("must not be '..'".into());
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn subdomain_accepts_dotted_lowercase_names() {
        assert!(dns1123_subdomain("my.app-1").is_empty());
        assert!(is_dns1123_subdomain("a.b.c"));
    }

    #[test]
    fn subdomain_rejects_uppercase_with_kube_wording() {
        let errs = dns1123_subdomain("My_App");
        assert_eq!(
            errs,
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
    }

    #[test]
    fn label_message_has_kubes_double_space_between_examples() {
        let errs = dns1123_label("a.b");
        assert!(errs[0].contains("(e.g. 'my-name',  or '123-abc', regex"));
    }

    #[test]
    fn dns1035_label_must_start_with_a_letter() {
        assert!(!dns1035_label("1abc").is_empty());
        assert!(dns1035_label("abc-1").is_empty());
    }

    #[test]
    fn too_long_label_reports_the_length_first() {
        let errs = dns1123_label(&"a".repeat(64));
        assert_eq!(errs, vec!["must be no more than 63 characters"]);
    }

    #[test]
    fn config_keys_allow_dots_and_underscores_but_not_double_dot_prefix() {
        assert!(config_map_key("app.properties").is_empty());
        assert!(config_map_key("KEY_1").is_empty());
        assert_eq!(config_map_key("..x"), vec!["must not start with '..'"]);
        assert!(config_map_key("a b")[0].starts_with("a valid config key must consist"));
    }

    #[test]
    fn qualified_names_check_prefix_and_name() {
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert!(!qualified_name("-bad").is_empty());
        assert_eq!(qualified_name("/x"), vec!["prefix part must be non-empty"]);
    }

    #[test]
    fn port_names_are_iana_service_names() {
        assert!(port_name("http").is_empty());
        assert!(!port_name("HTTP").is_empty());
        assert!(!port_name("123").is_empty());
    }
}
