//! Kubernetes' CEL libraries (`k8s.io/apiserver/pkg/cel/library`) on top
//! of the `cel` crate's standard library and its `strings`, `lists`,
//! `math` and `base64` extensions (which already give `charAt`, `indexOf`,
//! `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`,
//! `substring`, `trim`, `join`, `format`, `quote`, `reverse`, `slice`,
//! `flatten`, `distinct`, `sort`, `math.*`, `base64.*`):
//!
//! - lists: `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`;
//! - regex: `find`, `findAll`;
//! - quantity: `quantity`, `isQuantity`, `isInteger`, `asInteger`,
//!   `asApproximateFloat`, `sign`, `add`, `sub`, `compareTo`,
//!   `isGreaterThan`, `isLessThan`, equality;
//! - url: `url`, `isURL`, `getScheme`, `getHost`, `getHostname`, `getPort`,
//!   `getEscapedPath`, `getQuery`;
//! - format: `format.named(name)` and `format.<name>()`, `validate`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{self as ct, Type as CelType};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map, Opaque};
use cel::{DeclarationError, Env, ExecutionError, Value};

use crate::types::{FORMAT, QUANTITY, URL};

type VFn = fn(&[Value]) -> Result<Value, ExecutionError>;

/// Wraps a function over [`Value`]s as a `cel` overload.
macro_rules! overload {
    ($f:path) => {{
        fn w<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
            let vals = args
                .iter()
                .map(|a| Value::try_from(&**a))
                .collect::<Result<Vec<_>, _>>()?;
            let f: VFn = $f;
            let out: Box<dyn Val> = f(&vals)?.try_into()?;
            Ok(CowVal::Owned(out))
        }
        w as cel::common::functions::Function
    }};
}

fn err(function: &str, msg: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, msg)
}

fn list(v: &Value) -> Result<&Arc<Vec<Value>>, ExecutionError> {
    match v {
        Value::List(l) => Ok(l),
        other => Err(ExecutionError::no_such_overload(
            "list",
            vec![format!("{:?}", other.type_of())],
        )),
    }
}

fn string(v: &Value) -> Result<&str, ExecutionError> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err(ExecutionError::no_such_overload("string", vec![])),
    }
}

fn opaque<T: 'static>(v: &Value) -> Result<&T, ExecutionError> {
    match v {
        Value::Opaque(o) => o
            .downcast_ref::<T>()
            .ok_or_else(|| ExecutionError::no_such_overload("opaque", vec![])),
        _ => Err(ExecutionError::no_such_overload("opaque", vec![])),
    }
}

/// Registers the Kubernetes libraries on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let list_t = || ct::LIST_TYPE;
    let string_t = || ct::STRING_TYPE;
    let dyn_t = || ct::DYN_TYPE;
    let int_t = || ct::INT_TYPE;
    let quantity_t = || CelType::new_opaque_type(QUANTITY);
    let url_t = || CelType::new_opaque_type(URL);
    let format_t = || CelType::new_opaque_type(FORMAT);

    // lists
    env.add_member_overload(
        "isSorted",
        "list_is_sorted",
        list_t(),
        vec![],
        overload!(is_sorted),
    )?;
    env.add_member_overload("sum", "list_sum", list_t(), vec![], overload!(sum))?;
    env.add_member_overload("min", "list_min", list_t(), vec![], overload!(min))?;
    env.add_member_overload("max", "list_max", list_t(), vec![], overload!(max))?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        list_t(),
        vec![dyn_t()],
        overload!(list_index_of),
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        list_t(),
        vec![dyn_t()],
        overload!(list_last_index_of),
    )?;

    // regex
    env.add_member_overload(
        "find",
        "string_find_string",
        string_t(),
        vec![string_t()],
        overload!(find),
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        string_t(),
        vec![string_t()],
        overload!(find_all),
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        string_t(),
        vec![string_t(), int_t()],
        overload!(find_all),
    )?;

    // quantity
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![string_t()],
        overload!(quantity),
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![string_t()],
        overload!(is_quantity),
    )?;
    for (name, f) in [
        ("isInteger", overload!(q_is_integer)),
        ("asInteger", overload!(q_as_integer)),
        ("asApproximateFloat", overload!(q_as_float)),
        ("sign", overload!(q_sign)),
    ] {
        env.add_member_overload(name, &format!("quantity_{name}"), quantity_t(), vec![], f)?;
    }
    for (name, f) in [
        ("add", overload!(q_add)),
        ("sub", overload!(q_sub)),
        ("compareTo", overload!(q_compare)),
        ("isGreaterThan", overload!(q_greater)),
        ("isLessThan", overload!(q_less)),
    ] {
        env.add_member_overload(
            name,
            &format!("quantity_{name}_quantity"),
            quantity_t(),
            vec![quantity_t()],
            f,
        )?;
    }
    env.add_member_overload(
        "add",
        "quantity_add_int",
        quantity_t(),
        vec![int_t()],
        overload!(q_add),
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub_int",
        quantity_t(),
        vec![int_t()],
        overload!(q_sub),
    )?;

    // url
    env.add_overload("url", "string_to_url", vec![string_t()], overload!(url))?;
    env.add_overload(
        "isURL",
        "is_url_string",
        vec![string_t()],
        overload!(is_url),
    )?;
    for (name, f) in [
        ("getScheme", overload!(url_scheme)),
        ("getHost", overload!(url_host)),
        ("getHostname", overload!(url_hostname)),
        ("getPort", overload!(url_port)),
        ("getEscapedPath", overload!(url_path)),
        ("getQuery", overload!(url_query)),
    ] {
        env.add_member_overload(name, &format!("url_{name}"), url_t(), vec![], f)?;
    }

    // jsonpatch (kube's `library.JSONPatch`, for MutatingAdmissionPolicy)
    env.add_overload(
        "jsonpatch.escapeKey",
        "string_jsonpatch_escapeKey_string",
        vec![string_t()],
        overload!(jsonpatch_escape_key),
    )?;

    // format
    env.add_overload(
        "format.named",
        "format_named_string",
        vec![string_t()],
        overload!(format_named),
    )?;
    for (name, ctor) in FORMATS.iter().zip(FORMAT_CTORS) {
        env.add_overload(
            &format!("format.{name}"),
            &format!("format_{name}"),
            vec![],
            ctor,
        )?;
    }
    env.add_member_overload(
        "validate",
        "format_validate_string",
        format_t(),
        vec![string_t()],
        overload!(format_validate),
    )?;
    Ok(())
}

// ---------------------------------------------------------------- lists

fn is_sorted(a: &[Value]) -> Result<Value, ExecutionError> {
    let l = list(&a[0])?;
    for w in l.windows(2) {
        match w[0].partial_cmp(&w[1]) {
            Some(std::cmp::Ordering::Greater) => return Ok(Value::Bool(false)),
            Some(_) => {}
            None => return Err(ExecutionError::no_such_overload("isSorted", vec![])),
        }
    }
    Ok(Value::Bool(true))
}

fn sum(a: &[Value]) -> Result<Value, ExecutionError> {
    let l = list(&a[0])?;
    let mut acc: Option<Value> = None;
    for v in l.iter() {
        acc = Some(match (acc, v) {
            (None, v) => v.clone(),
            (Some(Value::Int(x)), Value::Int(y)) => Value::Int(
                x.checked_add(*y)
                    .ok_or_else(|| err("sum", "integer overflow"))?,
            ),
            (Some(Value::UInt(x)), Value::UInt(y)) => Value::UInt(
                x.checked_add(*y)
                    .ok_or_else(|| err("sum", "unsigned integer overflow"))?,
            ),
            (Some(Value::Float(x)), Value::Float(y)) => Value::Float(x + y),
            (Some(Value::Duration(x)), Value::Duration(y)) => Value::Duration(x + *y),
            _ => return Err(ExecutionError::no_such_overload("sum", vec![])),
        });
    }
    // An empty list sums to 0 (kube types the zero by the list's element).
    Ok(acc.unwrap_or(Value::Int(0)))
}

fn extreme(a: &[Value], name: &str, want: std::cmp::Ordering) -> Result<Value, ExecutionError> {
    let l = list(&a[0])?;
    let mut best: Option<&Value> = None;
    for v in l.iter() {
        best = Some(match best {
            None => v,
            Some(b) => match v.partial_cmp(b) {
                Some(o) if o == want => v,
                Some(_) => b,
                None => return Err(ExecutionError::no_such_overload(name, vec![])),
            },
        });
    }
    best.cloned()
        .ok_or_else(|| err(name, format!("{name} called on empty list")))
}

fn min(a: &[Value]) -> Result<Value, ExecutionError> {
    extreme(a, "min", std::cmp::Ordering::Less)
}

fn max(a: &[Value]) -> Result<Value, ExecutionError> {
    extreme(a, "max", std::cmp::Ordering::Greater)
}

fn list_index_of(a: &[Value]) -> Result<Value, ExecutionError> {
    let l = list(&a[0])?;
    Ok(Value::Int(
        l.iter().position(|v| *v == a[1]).map_or(-1, |i| i as i64),
    ))
}

fn list_last_index_of(a: &[Value]) -> Result<Value, ExecutionError> {
    let l = list(&a[0])?;
    Ok(Value::Int(
        l.iter().rposition(|v| *v == a[1]).map_or(-1, |i| i as i64),
    ))
}

// ---------------------------------------------------------------- regex

fn compile_regex(name: &str, re: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(re).map_err(|e| err(name, format!("Illegal regex: {e}")))
}

fn find(a: &[Value]) -> Result<Value, ExecutionError> {
    let re = compile_regex("find", string(&a[1])?)?;
    Ok(Value::String(Arc::new(
        re.find(string(&a[0])?)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default(),
    )))
}

fn find_all(a: &[Value]) -> Result<Value, ExecutionError> {
    let re = compile_regex("findAll", string(&a[1])?)?;
    let limit = match a.get(2) {
        Some(Value::Int(n)) if *n >= 0 => *n as usize,
        _ => usize::MAX,
    };
    let found: Vec<Value> = re
        .find_iter(string(&a[0])?)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    Ok(Value::List(Arc::new(found)))
}

// ---------------------------------------------------------------- quantity

/// A `resource.Quantity`'s value, `num × 10^exp`, normalised (no trailing
/// zeros in `num`) so that equal quantities compare equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    num: i128,
    exp: i32,
}

// Normalised, so equal values are equal structs: the order agrees with `Eq`.
impl Ord for Quantity {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.compare(o)
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY
    }
}

const QUANTITY_RE_TEXT: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

fn quantity_error() -> String {
    format!("quantities must match the regular expression '{QUANTITY_RE_TEXT}'")
}

impl Quantity {
    fn normalized(mut num: i128, mut exp: i32) -> Self {
        if num == 0 {
            return Self { num: 0, exp: 0 };
        }
        while num % 10 == 0 {
            num /= 10;
            exp += 1;
        }
        Self { num, exp }
    }

    /// Parses kube's quantity syntax (`100m`, `1.5Gi`, `2e3`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = quantity_error;
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
            .unwrap_or(s.len());
        let (number, suffix) = s.split_at(split);
        let (neg, digits) = match number.as_bytes().first() {
            Some(b'-') => (true, &number[1..]),
            Some(b'+') => (false, &number[1..]),
            _ => (false, number),
        };
        if digits.is_empty()
            || digits.matches('.').count() > 1
            || !digits.chars().any(|c| c.is_ascii_digit())
            || digits.contains(['+', '-'])
        {
            return Err(bad());
        }
        let (int_part, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let mut num: i128 = 0;
        for c in int_part.chars().chain(frac.chars()) {
            num = num
                .checked_mul(10)
                .and_then(|n| n.checked_add(i128::from(c as u8 - b'0')))
                .ok_or_else(bad)?;
        }
        let mut exp = -(frac.len() as i32);
        let mut binary = 0u32;
        match suffix {
            "" => {}
            "Ki" => binary = 10,
            "Mi" => binary = 20,
            "Gi" => binary = 30,
            "Ti" => binary = 40,
            "Pi" => binary = 50,
            "Ei" => binary = 60,
            "n" => exp -= 9,
            "u" => exp -= 6,
            "m" => exp -= 3,
            "k" => exp += 3,
            "M" => exp += 6,
            "G" => exp += 9,
            "T" => exp += 12,
            "P" => exp += 15,
            "E" => exp += 18,
            s if s.starts_with(['e', 'E']) => {
                let e: i32 = s[1..].parse().map_err(|_| bad())?;
                exp += e;
            }
            _ => return Err(bad()),
        }
        if binary > 0 {
            num = num.checked_mul(1i128 << binary).ok_or_else(bad)?;
        }
        if neg {
            num = -num;
        }
        Ok(Self::normalized(num, exp))
    }

    /// Zero.
    pub fn zero() -> Self {
        Self { num: 0, exp: 0 }
    }

    /// The negated value.
    pub fn neg(&self) -> Self {
        Self {
            num: -self.num,
            exp: self.exp,
        }
    }

    /// kube's canonical text (`resource.Quantity.String()`): in binary SI
    /// (`binary`: the quantity was written with `Ki`, `Mi`, …) an integer
    /// gets the largest binary suffix that divides it exactly (`1Gi`,
    /// `1536Mi`); otherwise the decimal exponent is the largest multiple of
    /// three that keeps the mantissa an integer (`1500m`, `2k`, `1500`).
    pub fn canonical(&self, binary: bool) -> String {
        if self.num == 0 {
            return "0".into();
        }
        if binary
            && self.exp >= 0
            && let Some(v) = self.scaled(0)
        {
            for (shift, suffix) in [
                (60, "Ei"),
                (50, "Pi"),
                (40, "Ti"),
                (30, "Gi"),
                (20, "Mi"),
                (10, "Ki"),
            ] {
                let unit = 1i128 << shift;
                if v % unit == 0 {
                    return format!("{}{suffix}", v / unit);
                }
            }
            return v.to_string();
        }
        let e3 = self.exp.div_euclid(3) * 3;
        let e3 = e3.clamp(-9, 18);
        let mantissa = match self.scaled(e3) {
            Some(m) => m,
            // Below nano (or an overflow): kube rounds up to the nano unit.
            None => return format!("{}", self.as_f64()),
        };
        let suffix = match e3 {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        };
        format!("{mantissa}{suffix}")
    }

    fn from_int(i: i64) -> Self {
        Self::normalized(i128::from(i), 0)
    }

    /// `num` scaled to exponent `exp` (≤ self.exp).
    fn scaled(&self, exp: i32) -> Option<i128> {
        let shift = u32::try_from(self.exp - exp).ok()?;
        10i128
            .checked_pow(shift)
            .and_then(|p| self.num.checked_mul(p))
    }

    /// Orders two quantities by value (`resource.Quantity.Cmp`).
    fn compare(&self, o: &Self) -> std::cmp::Ordering {
        let e = self.exp.min(o.exp);
        match (self.scaled(e), o.scaled(e)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self
                .as_f64()
                .partial_cmp(&o.as_f64())
                .unwrap_or(std::cmp::Ordering::Equal),
        }
    }

    /// The exact sum (`None` on overflow).
    pub fn add(&self, o: &Self) -> Option<Self> {
        let e = self.exp.min(o.exp);
        Some(Self::normalized(
            self.scaled(e)?.checked_add(o.scaled(e)?)?,
            e,
        ))
    }

    /// The value as a float (`AsApproximateFloat64`).
    pub fn as_f64(&self) -> f64 {
        self.num as f64 * 10f64.powi(self.exp)
    }

    fn as_integer(&self) -> Option<i64> {
        if self.exp < 0 {
            return None;
        }
        i64::try_from(self.scaled(0)?).ok()
    }
}

fn quantity_arg(v: &Value) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Int(i) => Ok(Quantity::from_int(*i)),
        other => opaque::<Quantity>(other).copied(),
    }
}

fn quantity(a: &[Value]) -> Result<Value, ExecutionError> {
    let q = Quantity::parse(string(&a[0])?).map_err(|e| err("quantity", e))?;
    Ok(Value::Opaque(Arc::new(q)))
}

fn is_quantity(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(Quantity::parse(string(&a[0])?).is_ok()))
}

fn q_is_integer(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(quantity_arg(&a[0])?.as_integer().is_some()))
}

fn q_as_integer(a: &[Value]) -> Result<Value, ExecutionError> {
    quantity_arg(&a[0])?
        .as_integer()
        .map(Value::Int)
        .ok_or_else(|| err("asInteger", "cannot convert value to integer"))
}

fn q_as_float(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Float(quantity_arg(&a[0])?.as_f64()))
}

fn q_sign(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(quantity_arg(&a[0])?.num.signum() as i64))
}

fn q_add(a: &[Value]) -> Result<Value, ExecutionError> {
    let r = quantity_arg(&a[0])?
        .add(&quantity_arg(&a[1])?)
        .ok_or_else(|| err("add", "quantity overflow"))?;
    Ok(Value::Opaque(Arc::new(r)))
}

fn q_sub(a: &[Value]) -> Result<Value, ExecutionError> {
    let b = quantity_arg(&a[1])?;
    let neg = Quantity {
        num: -b.num,
        exp: b.exp,
    };
    let r = quantity_arg(&a[0])?
        .add(&neg)
        .ok_or_else(|| err("sub", "quantity overflow"))?;
    Ok(Value::Opaque(Arc::new(r)))
}

fn q_compare(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(
        quantity_arg(&a[0])?.cmp(&quantity_arg(&a[1])?) as i64
    ))
}

fn q_greater(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        quantity_arg(&a[0])?.cmp(&quantity_arg(&a[1])?) == std::cmp::Ordering::Greater,
    ))
}

fn q_less(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        quantity_arg(&a[0])?.cmp(&quantity_arg(&a[1])?) == std::cmp::Ordering::Less,
    ))
}

// ---------------------------------------------------------------- url

/// A URL as Go's `url.ParseRequestURI` reads one: absolute, or an
/// absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    scheme: String,
    host: String,
    hostname: String,
    port: String,
    path: String,
    query: Vec<(String, String)>,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL
    }
}

impl Url {
    /// Parses like `url.ParseRequestURI` (kube's wording on failure).
    pub fn parse(s: &str) -> Result<Self, String> {
        let fail = || {
            format!(
                "URL parse error during conversion from string: parse \"{s}\": invalid URI for request"
            )
        };
        let (u, relative) = if s.starts_with('/') {
            (
                url::Url::parse(&format!("http://placeholder{s}")).map_err(|_| fail())?,
                true,
            )
        } else {
            (url::Url::parse(s).map_err(|_| fail())?, false)
        };
        if !relative && u.cannot_be_a_base() {
            return Err(fail());
        }
        let (host, hostname, port) = if relative {
            (String::new(), String::new(), String::new())
        } else {
            let hostname = u.host_str().unwrap_or("").to_string();
            // Go keeps an explicit default port; `url` drops it, so look in
            // the authority as written.
            let port = u.port().map(|p| p.to_string()).unwrap_or_else(|| {
                let auth = s.split_once("://").map_or("", |(_, r)| r);
                let auth = auth.split(['/', '?', '#']).next().unwrap_or("");
                let auth = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
                match auth.rsplit_once(':') {
                    Some((_, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => {
                        p.to_string()
                    }
                    _ => String::new(),
                }
            });
            let host = if port.is_empty() {
                hostname.clone()
            } else {
                format!("{hostname}:{port}")
            };
            let hostname = hostname
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            (host, hostname, port)
        };
        let path = if !relative
            && u.path() == "/"
            && !s.split_once("://").is_some_and(|(_, r)| r.contains('/'))
        {
            String::new()
        } else {
            u.path().to_string()
        };
        Ok(Self {
            scheme: if relative {
                String::new()
            } else {
                u.scheme().to_string()
            },
            host,
            hostname,
            port,
            path,
            query: u
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        })
    }
}

fn url(a: &[Value]) -> Result<Value, ExecutionError> {
    let u = Url::parse(string(&a[0])?).map_err(|e| err("url", e))?;
    Ok(Value::Opaque(Arc::new(u)))
}

fn is_url(a: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(Url::parse(string(&a[0])?).is_ok()))
}

fn url_field(a: &[Value], f: fn(&Url) -> &str) -> Result<Value, ExecutionError> {
    Ok(Value::String(Arc::new(
        f(opaque::<Url>(&a[0])?).to_string(),
    )))
}

fn url_scheme(a: &[Value]) -> Result<Value, ExecutionError> {
    url_field(a, |u| &u.scheme)
}
fn url_host(a: &[Value]) -> Result<Value, ExecutionError> {
    url_field(a, |u| &u.host)
}
fn url_hostname(a: &[Value]) -> Result<Value, ExecutionError> {
    url_field(a, |u| &u.hostname)
}
fn url_port(a: &[Value]) -> Result<Value, ExecutionError> {
    url_field(a, |u| &u.port)
}
fn url_path(a: &[Value]) -> Result<Value, ExecutionError> {
    url_field(a, |u| &u.path)
}

/// `jsonpatch.escapeKey(k)`: a key as one JSON pointer segment (RFC 6901:
/// `~` → `~0`, `/` → `~1`).
fn jsonpatch_escape_key(a: &[Value]) -> Result<Value, ExecutionError> {
    match a.first() {
        Some(Value::String(s)) => Ok(Value::String(Arc::new(
            s.replace('~', "~0").replace('/', "~1"),
        ))),
        _ => Err(ExecutionError::no_such_overload(
            "jsonpatch.escapeKey",
            vec![],
        )),
    }
}

fn url_query(a: &[Value]) -> Result<Value, ExecutionError> {
    let u = opaque::<Url>(&a[0])?;
    let mut m: HashMap<Key, Vec<Value>> = HashMap::new();
    for (k, v) in &u.query {
        m.entry(Key::from(k.clone()))
            .or_default()
            .push(Value::String(Arc::new(v.clone())));
    }
    let map: HashMap<Key, Value> = m
        .into_iter()
        .map(|(k, v)| (k, Value::List(Arc::new(v))))
        .collect();
    Ok(Value::Map(Map { map: Arc::new(map) }))
}

// ---------------------------------------------------------------- format

/// The named formats of kube's format library.
pub const FORMATS: [&str; 10] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "labelValue",
    "qualifiedName",
    "uuid",
    "uri",
    "byte",
    "date",
    "datetime",
];

const FORMAT_CTORS: [cel::common::functions::Function; 10] = [
    overload!(fmt_0),
    overload!(fmt_1),
    overload!(fmt_2),
    overload!(fmt_3),
    overload!(fmt_4),
    overload!(fmt_5),
    overload!(fmt_6),
    overload!(fmt_7),
    overload!(fmt_8),
    overload!(fmt_9),
];

fn fmt_n(i: usize) -> Result<Value, ExecutionError> {
    Ok(Value::Opaque(Arc::new(NamedFormat(FORMATS[i]))))
}
fn fmt_0(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(0)
}
fn fmt_1(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(1)
}
fn fmt_2(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(2)
}
fn fmt_3(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(3)
}
fn fmt_4(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(4)
}
fn fmt_5(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(5)
}
fn fmt_6(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(6)
}
fn fmt_7(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(7)
}
fn fmt_8(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(8)
}
fn fmt_9(_: &[Value]) -> Result<Value, ExecutionError> {
    fmt_n(9)
}

/// One of [`FORMATS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFormat(&'static str);

impl Opaque for NamedFormat {
    fn runtime_type_name(&self) -> &str {
        FORMAT
    }
}

fn optional(v: Option<Value>) -> Value {
    Value::Opaque(Arc::new(match v {
        Some(v) => cel::objects::OptionalValue::of(v),
        None => cel::objects::OptionalValue::none(),
    }))
}

fn format_named(a: &[Value]) -> Result<Value, ExecutionError> {
    let name = string(&a[0])?;
    Ok(optional(
        FORMATS
            .iter()
            .find(|f| **f == name)
            .map(|f| Value::Opaque(Arc::new(NamedFormat(f)))),
    ))
}

fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut m = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            m.push_str(" or ");
        }
        m.push_str(&format!("'{e}', "));
    }
    m.push_str(&format!("regex used for validation is '{re}')"));
    m
}

fn check_re(s: &str, re: &str, max: usize, msg: &str, examples: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > max {
        out.push(format!("must be no more than {max} characters"));
    }
    let anchored = format!("^(?:{re})$");
    if !regex::Regex::new(&anchored).is_ok_and(|r| r.is_match(s)) {
        out.push(regex_error(msg, re, examples));
    }
    out
}

const DNS1123_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

/// kube's validation of `s` as format `name`: its messages, empty when valid.
pub fn validate_format(name: &str, s: &str) -> Vec<String> {
    match name {
        "dns1123Label" => check_re(
            s,
            DNS1123_LABEL,
            63,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            &["my-name", "123-abc"],
        ),
        "dns1123Subdomain" => check_re(
            s,
            &format!("{DNS1123_LABEL}(\\.{DNS1123_LABEL})*"),
            253,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            &["example.com"],
        ),
        "dns1035Label" => check_re(
            s,
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            63,
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            &["my-name", "abc-123"],
        ),
        "labelValue" => check_re(
            s,
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            63,
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &["MyValue", "my_value", "12345"],
        ),
        "qualifiedName" => {
            let (prefix, name) = match s.split_once('/') {
                Some((p, n)) => (Some(p), n),
                None => (None, s),
            };
            let mut out = Vec::new();
            if let Some(p) = prefix {
                if p.is_empty() {
                    out.push("prefix part must be non-empty".to_string());
                } else {
                    out.extend(
                        validate_format("dns1123Subdomain", p)
                            .into_iter()
                            .map(|m| format!("prefix part {m}")),
                    );
                }
            }
            if name.is_empty() {
                out.push("name part must be non-empty".into());
            } else {
                if name.len() > 63 {
                    out.push("name part must be no more than 63 characters".into());
                }
                let re = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
                if !regex::Regex::new(&format!("^(?:{re})$")).is_ok_and(|r| r.is_match(name)) {
                    out.push(format!(
                        "name part {}",
                        regex_error(
                            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                            re,
                            &["MyName", "my.name", "123-abc"]
                        )
                    ));
                }
            }
            out
        }
        "uuid" => {
            let re =
                "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
            if regex::Regex::new(re).is_ok_and(|r| r.is_match(s)) {
                vec![]
            } else {
                vec!["does not match the UUID format".into()]
            }
        }
        "uri" => match Url::parse(s) {
            Ok(_) => vec![],
            Err(_) => vec!["invalid URI".into()],
        },
        "byte" => {
            use base64::Engine as _;
            match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(_) => vec![],
                Err(_) => vec!["invalid base64".into()],
            }
        }
        "date" => match chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(_) => vec![],
            Err(_) => vec!["invalid date".into()],
        },
        "datetime" => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(_) => vec![],
            Err(_) => vec!["invalid datetime".into()],
        },
        _ => vec![],
    }
}

fn format_validate(a: &[Value]) -> Result<Value, ExecutionError> {
    let f = opaque::<NamedFormat>(&a[0])?;
    let errs = validate_format(f.0, string(&a[1])?);
    Ok(optional((!errs.is_empty()).then(|| {
        Value::List(Arc::new(
            errs.into_iter()
                .map(|e| Value::String(Arc::new(e)))
                .collect(),
        ))
    })))
}
