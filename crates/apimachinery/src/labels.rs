//! Label selectors, as `k8s.io/apimachinery/pkg/labels`: the string syntax of
//! the `labelSelector` query parameter (`a=b`, `a==b`, `a!=b`,
//! `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma-separated),
//! parsed by a port of kube's lexer and parser so that accepted inputs and
//! error messages are the same; and the conversion of a `metav1.LabelSelector`
//! JSON object (`matchLabels`, `matchExpressions`) as
//! `metav1.LabelSelectorAsSelector` does it.
//!
//! Pure functions, no I/O: safe to feed any input (the parser is iterative,
//! so there is no recursion to exhaust).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::error::ApiError;
use crate::meta::{is_qualified_name, is_valid_label_value};
use crate::quote::go_quote;

/// A selection operator (`k8s.io/apimachinery/pkg/selection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`
    NotIn,
    /// `key=a`
    Equals,
    /// `key==a`
    DoubleEquals,
    /// `key!=a`
    NotEquals,
    /// `key>1` (integer comparison)
    GreaterThan,
    /// `key<1` (integer comparison)
    LessThan,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
}

impl Operator {
    /// The operator's name as Go's `selection.Operator` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
        }
    }
}

/// kube's `binaryOperators`, joined the way its parser error prints them.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// One requirement of a selector: a key, an operator and values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

/// A field error formatted as Go's `field.Error.Error()` for an `Invalid`
/// value with a string bad value.
fn invalid_text(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// `validateLabelKey`: the error text for an invalid key, at `path`.
fn validate_label_key(key: &str, path: &str) -> Option<String> {
    let errs = is_qualified_name(key);
    if errs.is_empty() {
        None
    } else {
        Some(invalid_text(path, key, &errs.join("; ")))
    }
}

/// Aggregate error text as `utilerrors.NewAggregate(...).Error()` prints it
/// (duplicates removed as `ToAggregate` does).
fn aggregate(errs: Vec<String>) -> Option<String> {
    let mut uniq: Vec<String> = Vec::new();
    for e in errs {
        if !uniq.contains(&e) {
            uniq.push(e);
        }
    }
    match uniq.len() {
        0 => None,
        1 => uniq.pop(),
        _ => Some(format!("[{}]", uniq.join(", "))),
    }
}

impl Requirement {
    /// `labels.NewRequirement`: checks the key, the value count for the
    /// operator and each value; the error is the aggregated field-error text
    /// kube prints (e.g. `key: Invalid value: "a_": ...`).
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
        let mut errs = Vec::new();
        if let Some(e) = validate_label_key(key, "key") {
            errs.push(e);
        }
        let shown = || {
            format!(
                "[]string{{{}}}",
                values
                    .iter()
                    .map(|v| go_quote(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        match operator {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    errs.push(format!(
                        "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                        shown()
                    ));
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    errs.push(format!(
                        "values: Invalid value: {}: exact-match compatibility requires one single value",
                        shown()
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(format!(
                        "values: Invalid value: {}: values set must be empty for exists and does not exist",
                        shown()
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(format!(
                        "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        shown()
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(invalid_text(
                            &format!("values[{i}]"),
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                errs.push(invalid_text(
                    &format!("values[{i}][{key}]"),
                    v,
                    &msgs.join("; "),
                ));
            }
        }
        match aggregate(errs) {
            Some(e) => Err(e),
            None => Ok(Requirement {
                key: key.to_string(),
                operator,
                values,
            }),
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given (sorted and deduplicated when parsed).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether the labels satisfy this requirement (`Requirement.Matches`).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// [`Requirement::matches`] over any label set, given as its lookup.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                get(&self.key).is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => {
                get(&self.key).is_none_or(|v| !self.has_value(v))
            }
            Operator::Exists => get(&self.key).is_some(),
            Operator::DoesNotExist => get(&self.key).is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(Ok(have)) = get(&self.key).map(|v| v.parse::<i64>()) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// `Requirement.String()`: `!key`, `key`, `key=v`, `key in (a,b)` …
    /// (several values printed sorted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        if self.values.len() == 1 {
            f.write_str(&self.values[0])?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label selector: the AND of its requirements, sorted by key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
    /// `labels.Nothing()`: matches no object (a null `metav1.LabelSelector`).
    nothing: bool,
}

impl Selector {
    /// Matches every object (`labels.Everything()`).
    pub fn everything() -> Selector {
        Selector::default()
    }

    /// Matches no object (`labels.Nothing()`).
    pub fn nothing() -> Selector {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parse the `labelSelector` syntax (`labels.Parse`). Errors are 400
    /// BadRequest with kube-apiserver's message, e.g.
    /// `unable to parse requirement: found '', expected: identifier`.
    pub fn parse(s: &str) -> Result<Selector, ApiError> {
        parse(s).map_err(ApiError::bad_request)
    }

    /// Build a selector from a `metav1.LabelSelector` JSON value, as
    /// `metav1.LabelSelectorAsSelector` does: `null` (or absent) selects
    /// nothing, `{}` selects everything, `matchLabels` become `=`
    /// requirements, `matchExpressions` `In`/`NotIn`/`Exists`/`DoesNotExist`.
    /// Errors are 400 BadRequest with kube's message.
    pub fn from_label_selector(v: &Value) -> Result<Selector, ApiError> {
        from_label_selector(v).map_err(ApiError::bad_request)
    }

    /// A selector matching exactly the given labels (`SelectorFromSet`),
    /// without validation.
    pub fn from_set(set: &BTreeMap<String, String>) -> Selector {
        Selector {
            requirements: set
                .iter()
                .map(|(k, v)| Requirement {
                    key: k.clone(),
                    operator: Operator::Equals,
                    values: vec![v.clone()],
                })
                .collect(),
            nothing: false,
        }
    }

    /// Add requirements (kept sorted by key).
    pub fn add_requirements(mut self, reqs: impl IntoIterator<Item = Requirement>) -> Selector {
        self.requirements.extend(reqs);
        self.requirements.sort_by(|a, b| a.key.cmp(&b.key));
        self
    }

    /// Whether all requirements hold for `labels`.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// [`Selector::matches`] over any label set, given as its lookup.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Whether it restricts nothing (`Selector.Empty()`); `nothing()` is not empty.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is `labels.Nothing()`.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The value `label` must have, if the selector pins it to one value
    /// (`RequiresExactMatch`): useful to narrow a list by an indexed label.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Selector {
    /// The canonical string (`Selector.String()`): requirements joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Lexer (a port of kube's byte-oriented lexer: a NUL byte ends the input).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// An identifier or keyword: bytes up to a special symbol, whitespace, a
    /// NUL byte (consumed, as kube's lexer does) or the end.
    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end = start;
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if is_special(c) || is_whitespace(c) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let buf = &self.s[start..end];
        let lit = String::from_utf8_lossy(buf).into_owned();
        match keyword(buf) {
            Some(t) => (t, lit),
            None => (Token::Identifier, lit),
        }
    }

    /// The longest operator made of special symbols (`!=`, `==`, `=` …).
    fn scan_special(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end = start;
        let mut last: Option<(Token, usize)> = None;
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if is_special(c) {
                end = self.pos;
                if let Some(t) = keyword(&self.s[start..end]) {
                    last = Some((t, end));
                } else if last.is_some() {
                    self.unread();
                    break;
                }
            } else {
                self.unread();
                break;
            }
        }
        match last {
            Some((t, e)) => (t, String::from_utf8_lossy(&self.s[start..e]).into_owned()),
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&self.s[start..end])
                ),
            ),
        }
    }

    fn lex(&mut self) -> (Token, String) {
        let mut c = self.read();
        while is_whitespace(c) {
            c = self.read();
        }
        if c == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(c) {
            self.scan_special()
        } else {
            self.scan_id_or_keyword()
        }
    }
}

// ---------------------------------------------------------------------------
// Parser.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    pos: usize,
}

impl Parser {
    fn get(&self, at: usize, ctx: Context) -> (Token, String) {
        let (t, l) = self
            .items
            .get(at)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        if ctx == Context::Values && matches!(t, Token::In | Token::NotIn) {
            (Token::Identifier, l)
        } else {
            (t, l)
        }
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.get(self.pos, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let r = self.get(self.pos, ctx);
        if self.pos < self.items.len() {
            self.pos += 1;
        }
        r
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = op {
            return Requirement::new(&key, op, Vec::new());
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, op, values)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        if let Some(e) = validate_label_key(&lit, "<nil>") {
            return Err(e);
        }
        let (t, _) = self.lookahead(Context::Values);
        if (t == Token::EndOfString || t == Token::Comma) && op != Some(Operator::DoesNotExist) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    /// `(x,y,z)`; the result is sorted and deduplicated like Go's `sets.String.List()`.
    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let s = self.parse_identifiers_list()?;
                let (t, _) = self.consume(Context::Values);
                if t != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (t2, l2) = self.lookahead(Context::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (t2, _) = self.lookahead(Context::Values);
                    if t2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if t2 == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

/// `labels.Parse` with the error as the plain string kube prints.
fn parse(s: &str) -> Result<Selector, String> {
    let mut lexer = Lexer {
        s: s.as_bytes(),
        pos: 0,
    };
    let mut items = Vec::new();
    loop {
        let item = lexer.lex();
        let end = item.0 == Token::EndOfString;
        items.push(item);
        if end {
            break;
        }
    }
    let mut p = Parser { items, pos: 0 };
    let mut reqs = p.parse()?;
    reqs.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(Selector {
        requirements: reqs,
        nothing: false,
    })
}

fn from_label_selector(v: &Value) -> Result<Selector, String> {
    let obj = match v {
        Value::Null => return Ok(Selector::nothing()),
        Value::Object(o) => o,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type v1.LabelSelector",
                json_kind(other)
            ));
        }
    };
    let match_labels = match obj.get("matchLabels") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field LabelSelector.matchLabels of type map[string]string",
                json_kind(other)
            ));
        }
    };
    let exprs = match obj.get("matchExpressions") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(a),
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field LabelSelector.matchExpressions of type []v1.LabelSelectorRequirement",
                json_kind(other)
            ));
        }
    };
    let n_labels = match_labels.map_or(0, |m| m.len());
    let n_exprs = exprs.map_or(0, |a| a.len());
    if n_labels + n_exprs == 0 {
        return Ok(Selector::everything());
    }
    let mut reqs = Vec::with_capacity(n_labels + n_exprs);
    if let Some(m) = match_labels {
        let mut sorted: Vec<(&String, &Value)> = m.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (k, v) in sorted {
            let Value::String(v) = v else {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field LabelSelector.matchLabels of type string",
                    json_kind(v)
                ));
            };
            reqs.push(Requirement::new(k, Operator::Equals, vec![v.clone()])?);
        }
    }
    for expr in exprs.into_iter().flatten() {
        let Value::Object(e) = expr else {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field LabelSelector.matchExpressions of type v1.LabelSelectorRequirement",
                json_kind(expr)
            ));
        };
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let op_name = e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let op = match op_name {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(format!(
                    "{} is not a valid pod selector operator",
                    go_quote(other)
                ));
            }
        };
        let values: Vec<String> = match e.get("values") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    "json: cannot unmarshal value into Go struct field LabelSelectorRequirement.matchExpressions.values of type string"
                        .to_string()
                })?,
            Some(other) => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field LabelSelectorRequirement.matchExpressions.values of type []string",
                    json_kind(other)
                ));
            }
        };
        reqs.push(Requirement::new(key, op, values)?);
    }
    Ok(Selector::everything().add_requirements(reqs))
}

/// The JSON kind name as Go's decoder words it in type errors.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn err(s: &str) -> String {
        match Selector::parse(s) {
            Ok(sel) => panic!("{s:?} parsed as {sel}"),
            Err(e) => {
                assert_eq!(e.code, 400);
                assert_eq!(e.reason, "BadRequest");
                e.message
            }
        }
    }

    #[test]
    fn equality_and_set_operators_match_as_kube_does() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        let cases = [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("app in (db,web)", true),
            ("app notin (db,web)", false),
            ("missing notin (a)", true),
            ("missing in (a)", false),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app=web,tier=front", true),
            ("app=web,tier=back", false),
            ("n>4", true),
            ("n<4", false),
            ("app>4", false),
            ("", true),
        ];
        for (s, want) in cases {
            let sel = Selector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(sel.matches(&l), want, "{s}");
        }
    }

    #[test]
    fn display_is_canonical_and_sorted_by_key() {
        let sel = Selector::parse(" z in (b, a), a==x,!c ,d, e notin ( ) ")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.to_string(), "a==x,!c,d,e notin (),z in (a,b)");
    }

    #[test]
    fn keywords_are_values_inside_value_context() {
        let sel = Selector::parse("x in (in,notin)").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.to_string(), "x in (in,notin)");
        let sel = Selector::parse("x=in").unwrap_or_else(|e| panic!("{e}"));
        assert!(sel.matches(&labels(&[("x", "in")])));
    }

    #[test]
    fn empty_values_are_allowed_where_kube_allows_them() {
        assert_eq!(
            Selector::parse("a=").map(|s| s.to_string()).ok().as_deref(),
            Some("a=")
        );
        assert_eq!(
            Selector::parse("a in (,b)")
                .map(|s| s.to_string())
                .ok()
                .as_deref(),
            Some("a in (,b)")
        );
    }

    #[test]
    fn parse_errors_carry_kube_apiserver_messages() {
        assert_eq!(
            err("a in"),
            "unable to parse requirement: found '' expected: '('"
        );
        assert_eq!(
            err("a in (b"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            err("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(err("a=b,"), "found '', expected: identifier after ','");
        assert_eq!(
            err("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(
            err("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(
            err("a=(b)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
    }

    #[test]
    fn invalid_keys_and_values_report_field_errors() {
        assert_eq!(
            err("a_=b"),
            "unable to parse requirement: <nil>: Invalid value: \"a_\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            err("a=b_"),
            "unable to parse requirement: values[0][a]: Invalid value: \"b_\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(
            err("a>b"),
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn nul_bytes_behave_as_in_kubes_lexer() {
        // Inside a token a NUL ends it (and is consumed); where a token
        // should start it ends the input.
        let sel = Selector::parse("a\0=b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.to_string(), "a=b");
        let sel = Selector::parse("a \0=b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.to_string(), "a");
    }

    #[test]
    fn label_selector_json_converts_like_label_selector_as_selector() {
        let sel = Selector::from_label_selector(&json!({
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [
                {"key": "c", "operator": "In", "values": ["y", "x"]},
                {"key": "d", "operator": "DoesNotExist"}
            ]
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.to_string(), "a=1,b=2,c in (x,y),!d");
        assert!(sel.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "x")])));
        assert!(!sel.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "x"), ("d", "")])));
    }

    #[test]
    fn null_label_selector_matches_nothing_and_empty_matches_everything() {
        let none = Selector::from_label_selector(&Value::Null).unwrap_or_else(|e| panic!("{e}"));
        assert!(!none.matches(&BTreeMap::new()));
        assert!(!none.is_empty());
        let all = Selector::from_label_selector(&json!({})).unwrap_or_else(|e| panic!("{e}"));
        assert!(all.matches(&labels(&[("x", "y")])));
        assert!(all.is_empty());
    }

    #[test]
    fn bad_label_selector_operator_is_rejected_with_kubes_message() {
        let e = Selector::from_label_selector(
            &json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]}),
        );
        assert_eq!(
            e.map_err(|e| e.message).err().as_deref(),
            Some("\"Foo\" is not a valid pod selector operator")
        );
        let e = Selector::from_label_selector(
            &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
        );
        assert_eq!(
            e.map_err(|e| e.message).err().as_deref(),
            Some(
                "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
            )
        );
    }

    #[test]
    fn requires_exact_match_finds_pinned_labels() {
        let sel = Selector::parse("a=1,b in (2),c in (3,4),d!=5").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sel.requires_exact_match("a"), Some("1"));
        assert_eq!(sel.requires_exact_match("b"), Some("2"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
    }
}
