//! Field selectors, as `k8s.io/apimachinery/pkg/fields`: the
//! `fieldSelector` query syntax (`a=b`, `a==b`, `a!=b`, comma-separated,
//! with `\`-escaping of `\`, `,` and `=` in values), matching over a flat
//! map of field values, and the errors kube-apiserver returns for selectors
//! naming fields a kind does not support.
//!
//! Which fields a kind supports is the caller's business (its strategy):
//! check [`FieldSelector::requirements`] and answer an unknown one with
//! [`unsupported_field_label`] (kinds with their own field-label conversion)
//! or [`unknown_field_selector`] (kinds with only the metadata defaults).

use std::collections::BTreeMap;
use std::fmt;

use crate::error::ApiError;
use crate::quote::go_quote;

/// A field-selector operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `=` (and `==`, which parses to the same requirement).
    Equals,
    /// `!=`
    NotEquals,
}

/// One `field<op>value` term (the value unescaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

impl FieldRequirement {
    /// Whether the fields satisfy the term; a missing field reads as `""`
    /// (as `fields.Set.Get`).
    pub fn matches(&self, fields: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| fields.get(k).map(String::as_str))
    }

    /// [`FieldRequirement::matches`] over any field set, given as its lookup.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let have = get(&self.field).unwrap_or("");
        match self.operator {
            FieldOperator::Equals => have == self.value,
            FieldOperator::NotEquals => have != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A field selector: the AND of its terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// A selector with one `field=value` term (`OneTermEqualSelector`).
    pub fn one_term_equal(field: &str, value: &str) -> FieldSelector {
        FieldSelector {
            terms: vec![FieldRequirement {
                field: field.to_string(),
                operator: FieldOperator::Equals,
                value: value.to_string(),
            }],
        }
    }

    /// Parse the `fieldSelector` syntax (`fields.ParseSelector`). Errors are
    /// 400 BadRequest with kube-apiserver's message, e.g.
    /// `invalid selector: 'a'; can't understand 'a'`.
    pub fn parse(s: &str) -> Result<FieldSelector, ApiError> {
        parse(s).map_err(ApiError::bad_request)
    }

    /// Whether every term holds.
    pub fn matches(&self, fields: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| fields.get(k).map(String::as_str))
    }

    /// [`FieldSelector::matches`] over any field set, given as its lookup.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.terms.iter().all(|t| t.matches_with(&get))
    }

    /// Whether it restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms, so the caller can check the fields are supported.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.terms
    }

    /// The value `field` must equal, if a term pins it (`RequiresExactMatch`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.operator == FieldOperator::Equals)
            .map(|t| t.value.as_str())
    }

    /// Rewrite each term (`Selector.Transform`, used for field-label
    /// conversion); a term mapped to an empty field and value is dropped.
    pub fn transform<F>(self, mut f: F) -> Result<FieldSelector, ApiError>
    where
        F: FnMut(&str, &str) -> Result<(String, String), ApiError>,
    {
        let mut terms = Vec::with_capacity(self.terms.len());
        for t in self.terms {
            let (field, value) = f(&t.field, &t.value)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            terms.push(FieldRequirement {
                field,
                operator: t.operator,
                value,
            });
        }
        Ok(FieldSelector { terms })
    }
}

impl fmt::Display for FieldSelector {
    /// Terms joined by `,`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

/// 400 `field label not supported: <key>`: what kube-apiserver answers for
/// a field a kind's field-label conversion does not know.
pub fn unsupported_field_label(key: &str) -> ApiError {
    ApiError::bad_request(format!("field label not supported: {key}"))
}

/// 400 for kinds with no conversion of their own (only `metadata.name` and
/// `metadata.namespace`): `"<key>" is not a known field selector: only
/// "metadata.name", "metadata.namespace"` (`DefaultMetaV1FieldSelectorConversion`).
pub fn unknown_field_selector(key: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        go_quote(key)
    ))
}

/// `EscapeValue`: `\` → `\\`, `,` → `\,`, `=` → `\=`.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `UnescapeValue`, with kube's error texts (a rune printed as its number,
/// as Go's `%v` of a rune does).
pub fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// Split on unescaped commas, keeping escapes in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Split a term at the first operator (`!=`, `==`, `=`, tried in that order
/// at each position).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if let Some(r) = rest.strip_prefix("!=") {
            return Some((&term[..i], FieldOperator::NotEquals, r));
        }
        if let Some(r) = rest.strip_prefix("==") {
            return Some((&term[..i], FieldOperator::Equals, r));
        }
        if let Some(r) = rest.strip_prefix('=') {
            return Some((&term[..i], FieldOperator::Equals, r));
        }
    }
    None
}

fn parse(selector: &str) -> Result<FieldSelector, String> {
    let mut parts = split_terms(selector);
    parts.sort_unstable();
    let mut terms = Vec::with_capacity(parts.len());
    for part in parts {
        if part.is_empty() {
            continue;
        }
        let Some((lhs, op, rhs)) = split_term(part) else {
            return Err(format!(
                "invalid selector: '{selector}'; can't understand '{part}'"
            ));
        };
        terms.push(FieldRequirement {
            field: lhs.to_string(),
            operator: op,
            value: unescape_value(rhs)?,
        });
    }
    Ok(FieldSelector { terms })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn msg(s: &str) -> String {
        match FieldSelector::parse(s) {
            Ok(f) => panic!("{s:?} parsed as {f}"),
            Err(e) => {
                assert_eq!(e.code, 400);
                e.message
            }
        }
    }

    #[test]
    fn equality_terms_match_and_missing_fields_read_as_empty() {
        let f = fields(&[("metadata.name", "a"), ("status.phase", "Running")]);
        let ok = |s: &str| {
            FieldSelector::parse(s)
                .map(|sel| sel.matches(&f))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert!(ok("metadata.name=a"));
        assert!(ok("metadata.name==a,status.phase=Running"));
        assert!(!ok("metadata.name!=a"));
        assert!(ok("spec.nodeName="));
        assert!(ok("spec.nodeName!=x"));
        assert!(ok(""));
        assert!(ok(",,"));
    }

    #[test]
    fn escaped_commas_and_equals_are_part_of_the_value() {
        let sel = FieldSelector::parse(r"a=x\,y\=z\\w,b!=1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.requirements()[0].value, r"x,y=z\w");
        assert_eq!(sel.to_string(), r"a=x\,y\=z\\w,b!=1");
        assert!(sel.matches(&fields(&[("a", r"x,y=z\w")])));
    }

    #[test]
    fn parse_errors_carry_kube_apiserver_messages() {
        assert_eq!(msg("a"), "invalid selector: 'a'; can't understand 'a'");
        assert_eq!(
            msg("b=1,a"),
            "invalid selector: 'b=1,a'; can't understand 'a'"
        );
        assert_eq!(
            msg("a=b=c"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            msg(r"a=b\x"),
            r"invalid field selector: invalid escape sequence: \x"
        );
        assert_eq!(
            msg(r"a=b\"),
            r"invalid field selector: invalid escape sequence: \"
        );
    }

    #[test]
    fn unsupported_fields_produce_kubes_errors() {
        let e = unsupported_field_label("spec.foo");
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "field label not supported: spec.foo")
        );
        let e = unknown_field_selector("spec.foo");
        assert_eq!(
            e.message,
            "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
    }

    #[test]
    fn transform_rewrites_and_drops_terms() {
        let sel = FieldSelector::parse("a=1,b=2").unwrap_or_else(|e| panic!("{e}"));
        let sel = sel
            .transform(|f, v| {
                Ok(if f == "a" {
                    (String::new(), String::new())
                } else {
                    (format!("x.{f}"), v.to_string())
                })
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.to_string(), "x.b=2");
        assert_eq!(sel.requires_exact_match("x.b"), Some("2"));
    }
}
