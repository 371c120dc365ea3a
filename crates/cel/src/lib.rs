//! # ubernetes-cel
//!
//! The Common Expression Language as Kubernetes uses it for validation
//! rules (`x-kubernetes-validations` on CRDs, and later
//! ValidatingAdmissionPolicy), on the [`cel`] crate (parser, macros,
//! interpreter, standard library and its extensions) plus:
//!
//! - [`types`]: CEL types with size bounds derived from a structural
//!   schema (kube's `SchemaDeclType`), and JSON values turned into CEL
//!   values under them ([`to_value`]);
//! - a type checker and cost estimator ([`compile`]): undeclared
//!   references, undefined fields, the result type, and the estimated
//!   maximum cost of an expression in cel-go's cost units, with errors
//!   worded as cel-go's (`ERROR: <input>:1:5: undefined field 'z'` and
//!   the source line with a caret);
//! - [`library`]: Kubernetes' CEL libraries (lists, regex, quantity, url,
//!   format);
//! - evaluation ([`Program::eval`]) of a compiled program against
//!   variables, with a per-call cost limit: the runtime cost is the
//!   estimate recomputed with the sizes of the actual values (an upper
//!   bound of cel-go's actual cost, which counts only the iterations that
//!   run), so `self.list.all(x, ...)` over many elements is refused before
//!   it runs, with cel-go's `operation cancelled: actual cost limit
//!   exceeded`.
//!
//! Nothing here knows about CRDs: the caller declares variables (`self`,
//! `oldSelf`, `object`, `params`, ...) and their types, compiles, and
//! evaluates with values.
#![forbid(unsafe_code)]

mod check;
pub mod library;
pub mod types;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::objects::{Key, Map, OptionalValue};
use cel::{Context, ExecutionError, Value};
use serde_json::Value as Json;

pub use cel;
pub use types::Type;

/// kube's `PerCallLimit`: the most one evaluation may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// kube's `RuntimeCELCostBudget`: the most all rules of one object may cost.
pub const RUNTIME_COST_BUDGET: i64 = 10_000_000;
/// kube's `StaticEstimatedCostLimit`: the most one rule may be estimated
/// to cost (times how often it may run).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// kube's `StaticEstimatedCRDCostLimit`: the most all rules of one schema
/// may be estimated to cost.
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

/// The environment: standard library, extensions and Kubernetes libraries.
fn env() -> &'static Arc<cel::Env> {
    static ENV: OnceLock<Arc<cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(build_env()))
}

/// A fresh environment with every library [`env`] has.
fn build_env() -> cel::Env {
    let mut env = cel::Env::stdlib();
    // Each registration only fails on a name declared twice, which
    // would be a bug here; the environment is still usable without it.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = env.add_extension(cel::extensions::math);
    let _ = env.add_extension(cel::extensions::encoders);
    let _ = library::register(&mut env);
    env
}

/// A compile error: cel-go's issue text (`ERROR: <input>:1:5: ...` and the
/// source line with a caret), one issue per line group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError(pub String);

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A compiled expression.
#[derive(Debug)]
pub struct Program {
    program: cel::Program,
    /// The environment to run in when the expression constructs struct
    /// literals ([`compile_mutating`]); `None`: the shared [`env`].
    env: Option<LiteralEnv>,
    decls: Vec<(String, Type)>,
    result: Type,
    cost: u64,
    references: Vec<String>,
}

/// cel-go's rendering of one issue at 1-based `line`, `col`.
fn issue_text(source: &str, line: usize, col: usize, msg: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{col}: {msg}");
    if let Some(snippet) = source.lines().nth(line.saturating_sub(1)) {
        out.push_str(&format!(
            "\n | {snippet}\n | {}^",
            ".".repeat(col.saturating_sub(1))
        ));
    }
    out
}

/// Line and 1-based column of a character offset.
fn position(source: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut col = 1;
    for (i, c) in source.chars().enumerate() {
        if i == offset {
            break;
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// Compiles `source` with variables `decls` (name and type): parse, expand
/// macros, type-check, estimate the cost.
pub fn compile(source: &str, decls: &[(&str, Type)]) -> Result<Program, CompileError> {
    let program = env().compile(source).map_err(|errs| {
        CompileError(
            errs.errors
                .iter()
                .map(|e| {
                    issue_text(
                        source,
                        e.pos.0.max(1) as usize,
                        e.pos.1.max(1) as usize,
                        &e.msg,
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    let decls: Vec<(String, Type)> = decls
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    let mut checker = check::Checker::new(&decls);
    let (result, cost) = checker.check(program.expression());
    if !checker.issues.is_empty() {
        let info = program.source_info();
        let text = checker
            .issues
            .iter()
            .map(|i| {
                let (line, col) = info
                    .offset_for(i.id)
                    .map(|(start, _)| position(source, start as usize))
                    .unwrap_or((1, 1));
                issue_text(source, line, col, &i.message)
            })
            .collect::<Vec<_>>()
            .join("\n");
        return Err(CompileError(text));
    }
    let mut references: Vec<String> = checker.references.into_keys().collect();
    references.sort();
    Ok(Program {
        program,
        env: None,
        decls,
        result,
        cost,
        references,
    })
}

/// Compiles `source` as [`compile`] does, for MutatingAdmissionPolicy's
/// mutations: struct literals named `Object`, `Object.<field path>` (kube's
/// apply configurations: `Object{spec: Object.spec{replicas: 3}}`) and
/// `JSONPatch` (`JSONPatch{op: "add", path: "/x", value: 1}`) evaluate to
/// maps of the fields they set, which [`to_json`] turns into the JSON
/// objects they stand for.
///
/// The `cel` crate parses struct literals and builds them through the
/// [`cel::StructType`]s its environment registers by exact name; Kubernetes'
/// `Object.*` names are open-ended (one per field path), so the names this
/// expression uses are collected from its syntax tree and registered, on a
/// fresh environment kept with the program, as types whose values are maps.
/// Differences from kube: the literals are untyped (kube types them from the
/// resource's OpenAPI schema, and checks a literal's name against the field
/// it is assigned to), and other struct names fail when evaluated (cel-go
/// refuses them when compiling).
pub fn compile_mutating(source: &str, decls: &[(&str, Type)]) -> Result<Program, CompileError> {
    let mut program = compile(source, decls)?;
    let mut names = std::collections::BTreeSet::new();
    struct_names(program.program.expression(), &mut names);
    let names: Vec<String> = names
        .into_iter()
        .filter(|n| n == "JSONPatch" || n == "Object" || n.starts_with("Object."))
        .collect();
    if !names.is_empty() {
        let mut env = build_env();
        for name in names {
            // Only fails on a name that is no qualified identifier, which
            // the parser never produces.
            let _ = env.add_type(MapLiteral {
                ty: cel::common::types::Type::new_struct(name),
            });
        }
        program.env = Some(LiteralEnv(Arc::new(env)));
    }
    Ok(program)
}

/// An environment with struct literal types (`cel::Env` is not `Debug`).
struct LiteralEnv(Arc<cel::Env>);

impl std::fmt::Debug for LiteralEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiteralEnv")
    }
}

/// The type names of the struct literals in `e`.
fn struct_names(e: &cel::IdedExpr, out: &mut std::collections::BTreeSet<String>) {
    use cel::common::ast::{EntryExpr, Expr};
    match &e.expr {
        Expr::Struct(s) => {
            out.insert(s.type_name.clone());
            for entry in &s.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => struct_names(&f.value, out),
                    EntryExpr::MapEntry(m) => {
                        struct_names(&m.key, out);
                        struct_names(&m.value, out);
                    }
                }
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => struct_names(&f.value, out),
                    EntryExpr::MapEntry(m) => {
                        struct_names(&m.key, out);
                        struct_names(&m.value, out);
                    }
                }
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|x| struct_names(x, out)),
        Expr::Select(s) => struct_names(&s.operand, out),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                struct_names(t, out);
            }
            c.args.iter().for_each(|x| struct_names(x, out));
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                struct_names(x, out);
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// A struct type whose literals are maps of their fields (see
/// [`compile_mutating`]).
struct MapLiteral {
    ty: cel::common::types::Type,
}

impl cel::StructType for MapLiteral {
    fn get_type(&self) -> &cel::common::types::Type {
        &self.ty
    }

    fn new_value<'b, 'v>(
        &self,
        fields: std::collections::BTreeMap<String, cel::common::value::CowVal<'b, 'v>>,
    ) -> Result<Box<dyn cel::common::value::Val + 'v>, ExecutionError> {
        let mut map = HashMap::new();
        for (name, value) in fields {
            map.insert(Key::from(name), Value::try_from(value.as_ref())?);
        }
        let v: Box<dyn cel::common::value::Val> =
            Value::Map(Map { map: Arc::new(map) }).try_into()?;
        Ok(v)
    }
}

/// A variable's value for [`Program::eval`].
#[derive(Debug, Clone, Copy)]
pub enum Binding<'a> {
    /// A JSON value (`None`: the variable is unset).
    Json(Option<&'a Json>),
    /// An optional of a JSON value (`optional.of(v)` / `optional.none()`).
    Optional(Option<&'a Json>),
    /// A JSON value of a variable declared `Dyn` whose runtime cost is
    /// measured from the value's own structure (each object an object type
    /// with its fields' exact types), as ValidatingAdmissionPolicy's
    /// `object`, `request`, `params` without a schema.
    Untyped(&'a Json),
}

/// How an evaluation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The runtime cost passed the limit: cel-go's `operation cancelled:
    /// actual cost limit exceeded`.
    CostLimit { cost: u64 },
    /// An error while evaluating, worded as cel-go words it (`no such key:
    /// x`, `division by zero`, `no such overload`, ...).
    Runtime { message: String, cost: u64 },
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::CostLimit { .. } => {
                f.write_str("operation cancelled: actual cost limit exceeded")
            }
            EvalError::Runtime { message, .. } => f.write_str(message),
        }
    }
}

/// cel-go's wording of an evaluation error.
fn go_message(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload(_) | ExecutionError::UnexpectedType { .. } => {
            "no such overload".into()
        }
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(_, _, _) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", show(i)),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::UndeclaredReference(r) => format!("no such attribute: {r}"),
        other => other.to_string(),
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

impl Program {
    /// The type the expression evaluates to (`Type::Dyn` when not known
    /// before running).
    pub fn result_type(&self) -> &Type {
        &self.result
    }

    /// The estimated maximum cost (cel-go's units) over values of the
    /// declared types.
    pub fn estimated_cost(&self) -> u64 {
        self.cost
    }

    /// Whether the expression references the declared variable `name`.
    pub fn references(&self, name: &str) -> bool {
        self.references.iter().any(|r| r == name)
    }

    /// The cost of evaluating with `vars` (sizes of the actual values).
    fn runtime_cost(&self, vars: &[(&str, Binding<'_>)]) -> u64 {
        let measured: Vec<(String, Type)> = self
            .decls
            .iter()
            .map(|(name, ty)| {
                let t = match vars.iter().find(|(n, _)| n == name).map(|(_, b)| *b) {
                    Some(Binding::Json(v)) => ty.measured(v),
                    Some(Binding::Untyped(v)) => Type::structural(v),
                    Some(Binding::Optional(v)) => match ty {
                        Type::Optional(inner) => Type::Optional(Box::new(inner.measured(v))),
                        other => other.measured(v),
                    },
                    None => ty.zeroed(),
                };
                (name.clone(), t)
            })
            .collect();
        let mut checker = check::Checker::new(&measured);
        checker.check(self.program.expression()).1
    }

    /// Evaluates with `vars` (each a declared variable's name and value)
    /// unless the runtime cost passes `limit`; returns the value and its
    /// cost.
    pub fn eval(
        &self,
        vars: &[(&str, Binding<'_>)],
        limit: u64,
    ) -> Result<(Value, u64), EvalError> {
        let cost = self.runtime_cost(vars);
        if cost > limit {
            return Err(EvalError::CostLimit { cost });
        }
        let mut ctx = Context::with_env(match &self.env {
            Some(LiteralEnv(e)) => e.clone(),
            None => env().clone(),
        });
        for (name, binding) in vars {
            let ty = self
                .decls
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.clone())
                .unwrap_or(Type::Dyn);
            let value = match binding {
                Binding::Json(None) => continue,
                Binding::Json(Some(v)) => to_value(v, &ty),
                Binding::Untyped(v) => untyped(v),
                Binding::Optional(v) => {
                    let inner = match &ty {
                        Type::Optional(t) => (**t).clone(),
                        t => t.clone(),
                    };
                    Value::Opaque(Arc::new(match v {
                        Some(v) => OptionalValue::of(to_value(v, &inner)),
                        None => OptionalValue::none(),
                    }))
                }
            };
            ctx.add_variable_from_value(*name, value);
        }
        self.program
            .execute(&ctx)
            .map(|v| (v, cost))
            .map_err(|e| EvalError::Runtime {
                message: go_message(&e),
                cost,
            })
    }
}

/// Go's `time.ParseDuration` (the `duration` format): `1h30m`, `-1.5s`,
/// `300ms`.
fn parse_go_duration(s: &str) -> Option<chrono::Duration> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        nanos += value * unit;
    }
    let d = chrono::Duration::nanoseconds(nanos as i64);
    Some(if neg { -d } else { d })
}

/// A JSON value as the CEL value of type `ty` (kube's
/// `UnstructuredToVal`): integers of `number` fields become doubles,
/// `byte`/`duration`/`date`/`date-time` strings become bytes, durations and
/// timestamps, objects expose their schema's properties by escaped name.
pub fn to_value(v: &Json, ty: &Type) -> Value {
    match (ty, v) {
        (_, Json::Null) => Value::Null,
        (Type::Double, Json::Number(n)) => Value::Float(n.as_f64().unwrap_or_default()),
        (Type::Int, Json::Number(n)) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Value::Int(f as i64),
                Some(f) => Value::Float(f),
                None => Value::Null,
            },
        },
        (Type::Bytes(_), Json::String(s)) => {
            use base64::Engine as _;
            match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(b) => Value::Bytes(Arc::new(b)),
                Err(_) => Value::String(Arc::new(s.clone())),
            }
        }
        (Type::Duration, Json::String(s)) => match parse_go_duration(s) {
            Some(d) => Value::Duration(d),
            None => Value::String(Arc::new(s.clone())),
        },
        (Type::Timestamp, Json::String(s)) => {
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                Value::Timestamp(t)
            } else if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                match d.and_hms_opt(0, 0, 0) {
                    Some(dt) => Value::Timestamp(dt.and_utc().fixed_offset()),
                    None => Value::String(Arc::new(s.clone())),
                }
            } else {
                Value::String(Arc::new(s.clone()))
            }
        }
        (Type::List(e, _), Json::Array(a)) => {
            Value::List(Arc::new(a.iter().map(|x| to_value(x, e)).collect()))
        }
        (Type::Map(_, val, _), Json::Object(m)) => {
            let map: HashMap<Key, Value> = m
                .iter()
                .map(|(k, x)| (Key::from(k.clone()), to_value(x, val)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
        (Type::Object(o), Json::Object(m)) => {
            let map: HashMap<Key, Value> = o
                .fields
                .iter()
                .filter_map(|(esc, f)| {
                    m.get(&f.name)
                        .filter(|x| !x.is_null())
                        .map(|x| (Key::from(esc.clone()), to_value(x, &f.ty)))
                })
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
        (_, v) => untyped(v),
    }
}

/// A CEL value as JSON (cel-go's `ConvertToNative` to a JSON value):
/// bytes as base64, durations as Go durations in seconds (`1.5s`),
/// timestamps as RFC 3339; `None` for values JSON cannot hold (types,
/// functions, opaque values other than optionals).
pub fn to_json(v: &Value) -> Option<Json> {
    Some(match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::UInt(u) => Json::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map(Json::Number)?,
        Value::String(s) => Json::String(s.to_string()),
        Value::Bytes(b) => {
            use base64::Engine as _;
            Json::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        Value::List(l) => Json::Array(l.iter().map(to_json).collect::<Option<Vec<_>>>()?),
        Value::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m.map.iter() {
                let key = match k {
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                out.insert(key, to_json(x)?);
            }
            Json::Object(out)
        }
        Value::Duration(d) => Json::String(format!(
            "{}s",
            d.num_nanoseconds()
                .map(|n| n as f64 / 1e9)
                .unwrap_or_default()
        )),
        Value::Timestamp(t) => Json::String(t.to_rfc3339()),
        _ => return None,
    })
}

fn untyped(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => match n.as_u64() {
                Some(u) => Value::UInt(u),
                None => Value::Float(n.as_f64().unwrap_or_default()),
            },
        },
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(a) => Value::List(Arc::new(a.iter().map(untyped).collect())),
        Json::Object(m) => {
            let map: HashMap<Key, Value> = m
                .iter()
                .map(|(k, x)| (Key::from(k.clone()), untyped(x)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
