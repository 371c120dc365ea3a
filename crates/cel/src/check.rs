//! Type checking and cost estimation in one walk of a parsed expression.
//!
//! The checker knows the declared variables' [`Type`]s and the result types
//! of the functions of [`crate::library`] and the CEL standard library; it
//! reports what cel-go's checker reports for the mistakes rules make most:
//! an undeclared variable or function, a field the schema does not have
//! (`undefined field 'z'`), and — through the result type — a rule that is
//! not a `bool`. Overloads it does not know are typed `dyn` and left to
//! run time (cel-go would reject some of them at compile time).
//!
//! The cost follows cel-go's `checker/cost.go` model: 1 per identifier,
//! field selection and function call, 0 per constant, comprehensions cost
//! their step times the most elements of what they iterate over, string
//! functions 0.1 per character traversed, regular expressions 0.25 per
//! character of the pattern times the string traversal. Only the maximum
//! is tracked. It is an estimate of cel-go's numbers, not a copy: close for
//! the common shapes (field comparisons, `all`/`exists`/`map`/`filter` over
//! lists, string and list functions), rougher for the rest.

use std::collections::HashMap;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::types::{MAX_REQUEST_SIZE_BYTES, Type};

/// One problem found, at the expression node `id`.
#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub id: u64,
    pub message: String,
}

pub(crate) struct Checker<'a> {
    vars: &'a [(String, Type)],
    scopes: Vec<(String, Type)>,
    pub issues: Vec<Issue>,
    /// Variables the expression references.
    pub references: HashMap<String, ()>,
}

fn traverse(size: u64) -> u64 {
    // cel-go's StringTraversalCostFactor
    (size as f64 * 0.1).ceil() as u64
}

fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

fn is_dyn(t: &Type) -> bool {
    matches!(t, Type::Dyn)
}

impl<'a> Checker<'a> {
    pub fn new(vars: &'a [(String, Type)]) -> Self {
        Self {
            vars,
            scopes: Vec::new(),
            issues: Vec::new(),
            references: HashMap::new(),
        }
    }

    fn issue(&mut self, id: u64, message: String) {
        self.issues.push(Issue { id, message });
    }

    fn lookup(&self, name: &str) -> Option<Type> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    /// The type and maximum cost of `e`.
    pub fn check(&mut self, e: &IdedExpr) -> (Type, u64) {
        match &e.expr {
            Expr::Unspecified => (Type::Dyn, 0),
            Expr::Literal(l) => (literal(l), 0),
            Expr::Ident(name) => {
                if let Some(t) = self.lookup(name) {
                    if !self.scopes.iter().any(|(n, _)| n == name) {
                        self.references.insert(name.clone(), ());
                    }
                    return (t, 1);
                }
                if let Some(t) = type_name(name) {
                    return (t, 1);
                }
                self.issue(
                    e.id,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
                (Type::Dyn, 1)
            }
            Expr::Select(sel) => {
                let (operand, cost) = self.check(&sel.operand);
                let field = match &operand {
                    Type::Object(o) => match o.fields.get(&sel.field) {
                        Some(f) => f.ty.clone(),
                        None => {
                            self.issue(e.id, format!("undefined field '{}'", sel.field));
                            Type::Dyn
                        }
                    },
                    Type::Map(_, v, _) => (**v).clone(),
                    Type::Optional(inner) => match &**inner {
                        Type::Object(o) => o
                            .fields
                            .get(&sel.field)
                            .map(|f| Type::Optional(Box::new(f.ty.clone())))
                            .unwrap_or(Type::Dyn),
                        _ => Type::Dyn,
                    },
                    _ => Type::Dyn,
                };
                if sel.test {
                    (Type::Bool, cost + 1)
                } else {
                    (field, cost + 1)
                }
            }
            Expr::List(l) => {
                let mut cost = 10;
                let mut elem: Option<Type> = None;
                for item in &l.elements {
                    let (t, c) = self.check(item);
                    cost += c;
                    elem = Some(match elem {
                        None => t,
                        Some(prev) if prev == t => prev,
                        Some(prev) => prev.merged(&t),
                    });
                }
                let n = l.elements.len() as u64;
                (Type::List(Box::new(elem.unwrap_or(Type::Dyn)), n), cost)
            }
            Expr::Map(m) => {
                let mut cost = 30;
                let (mut key, mut val) = (None::<Type>, None::<Type>);
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let (k, c1) = self.check(&me.key);
                        let (v, c2) = self.check(&me.value);
                        cost += c1 + c2;
                        key = Some(key.map_or(k.clone(), |p| p.merged(&k)));
                        val = Some(val.map_or(v.clone(), |p| p.merged(&v)));
                    }
                }
                let n = m.entries.len() as u64;
                (
                    Type::Map(
                        Box::new(key.unwrap_or(Type::Dyn)),
                        Box::new(val.unwrap_or(Type::Dyn)),
                        n,
                    ),
                    cost,
                )
            }
            Expr::Struct(s) => {
                let mut cost = 40;
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        cost += self.check(&f.value).1;
                    }
                }
                (Type::Dyn, cost)
            }
            Expr::Comprehension(c) => {
                let (range, range_cost) = self.check(&c.iter_range);
                let (init, init_cost) = self.check(&c.accu_init);
                let n = range.max_size();
                let (iter1, iter2) = match &range {
                    Type::List(e, _) => (Type::Int, (**e).clone()),
                    Type::Map(k, v, _) => ((**k).clone(), (**v).clone()),
                    other => (other.iter_elem(), Type::Dyn),
                };
                let pushed = if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((c.iter_var.clone(), iter1));
                    self.scopes.push((v2.clone(), iter2));
                    2
                } else {
                    self.scopes.push((c.iter_var.clone(), range.iter_elem()));
                    1
                };
                self.scopes.push((c.accu_var.clone(), init.clone()));
                let (_, cond_cost) = self.check(&c.loop_cond);
                let (step, step_cost) = self.check(&c.loop_step);
                // `map`/`filter` start from `[]`: the step tells the element type,
                // and the result has as many elements as the range at most.
                let accu = match (&init, &step) {
                    (Type::List(e, _), Type::List(se, _)) if is_dyn(e) => Type::List(se.clone(), n),
                    (Type::List(_, _), Type::List(se, _)) => Type::List(se.clone(), n),
                    _ if is_dyn(&init) => step,
                    _ => init,
                };
                if let Some(last) = self.scopes.last_mut() {
                    last.1 = accu;
                }
                let (result, result_cost) = self.check(&c.result);
                for _ in 0..=pushed {
                    self.scopes.pop();
                }
                let cost = range_cost
                    .saturating_add(init_cost)
                    .saturating_add(result_cost)
                    .saturating_add(mul(n, step_cost.saturating_add(cond_cost)));
                (result, cost)
            }
            Expr::Call(call) => self.call(e.id, call),
        }
    }

    fn call(&mut self, id: u64, call: &CallExpr) -> (Type, u64) {
        let name = call.func_name.as_str();
        // `ns.fn(...)` where `ns` is no variable: a namespaced global function.
        if let Some(t) = &call.target
            && let Expr::Ident(ns) = &t.expr
            && self.lookup(ns).is_none()
            && type_name(ns).is_none()
        {
            let full = format!("{ns}.{name}");
            if namespaced(&full) {
                let mut args = Vec::new();
                let mut cost = 1u64;
                for a in &call.args {
                    let (t, c) = self.check(a);
                    cost = cost.saturating_add(c);
                    args.push(t);
                }
                return (namespaced_result(&full, &args), cost);
            }
        }
        let target = call.target.as_ref().map(|t| self.check(t));
        let mut args = Vec::with_capacity(call.args.len());
        let mut args_cost = 0u64;
        for a in &call.args {
            let (t, c) = self.check(a);
            args_cost = args_cost.saturating_add(c);
            args.push(t);
        }
        let target_cost = target.as_ref().map_or(0, |t| t.1);
        let inputs = target_cost.saturating_add(args_cost);
        let recv = target.map(|t| t.0);
        let first = recv.as_ref().or(args.first()).cloned().unwrap_or(Type::Dyn);
        let size_of = |t: &Type| t.max_size();
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Type::Dyn);
        let (ty, own) = match name {
            "_&&_" | "_||_" => return (Type::Bool, args_cost),
            "_?_:_" => {
                let (a, b) = (arg(1), arg(2));
                let ty = if a == b { a } else { a.merged(&b) };
                return (ty, args_cost);
            }
            "!_" | "@not_strictly_false" => (Type::Bool, 1),
            "_==_" | "_!=_" => {
                let n = size_of(&arg(0)).min(size_of(&arg(1)));
                let c = match arg(0) {
                    Type::String(_) | Type::Bytes(_) => 1 + traverse(n),
                    Type::List(_, _) | Type::Map(_, _, _) | Type::Object(_) => 1 + n,
                    _ => 1,
                };
                (Type::Bool, c)
            }
            "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let c = match arg(0) {
                    Type::String(n) | Type::Bytes(n) => 1 + traverse(n),
                    _ => 1,
                };
                (Type::Bool, c)
            }
            "@in" => {
                let c = match arg(1) {
                    Type::List(_, n) => 1 + n,
                    _ => 1,
                };
                (Type::Bool, c)
            }
            "_+_" => match (arg(0), arg(1)) {
                (Type::String(a), Type::String(b)) => {
                    (Type::String(a.saturating_add(b)), 1 + traverse(a + b))
                }
                (Type::Bytes(a), Type::Bytes(b)) => {
                    (Type::Bytes(a.saturating_add(b)), 1 + traverse(a + b))
                }
                (Type::List(e1, a), Type::List(e2, b)) => {
                    let e = if is_dyn(&e1) { e2 } else { e1 };
                    (Type::List(e, a.saturating_add(b)), 1 + traverse(a + b))
                }
                (Type::Timestamp, _) | (_, Type::Timestamp) => (Type::Timestamp, 1),
                (a, _) => (a, 1),
            },
            "_-_" => match (arg(0), arg(1)) {
                (Type::Timestamp, Type::Timestamp) => (Type::Duration, 1),
                (a, _) => (a, 1),
            },
            "_*_" | "_/_" | "_%_" | "-_" => (arg(0), 1),
            "_[_]" => {
                let t = match arg(0) {
                    Type::List(e, _) => *e,
                    Type::Map(_, v, _) => *v,
                    _ => Type::Dyn,
                };
                (t, 1)
            }
            "_?._" | "_[?_]" => (Type::Optional(Box::new(Type::Dyn)), 1),
            _ => match member_result(name, &first, recv.is_some(), &args) {
                Some(r) => r,
                None => {
                    self.issue(
                        id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                    (Type::Dyn, 1)
                }
            },
        };
        (ty, own.saturating_add(inputs))
    }
}

fn literal(l: &LiteralValue) -> Type {
    match l {
        LiteralValue::Boolean(_) => Type::Bool,
        LiteralValue::Bytes(b) => Type::Bytes(b.len() as u64),
        LiteralValue::Double(_) => Type::Double,
        LiteralValue::Int(_) => Type::Int,
        LiteralValue::Null => Type::Null,
        LiteralValue::String(s) => Type::String(s.chars().count() as u64),
        LiteralValue::UInt(_) => Type::Uint,
    }
}

/// Identifiers that name types (`int`, `string`, ...).
fn type_name(name: &str) -> Option<Type> {
    matches!(
        name,
        "int"
            | "uint"
            | "double"
            | "bool"
            | "string"
            | "bytes"
            | "list"
            | "map"
            | "null_type"
            | "type"
            | "dyn"
            | "google.protobuf.Duration"
            | "google.protobuf.Timestamp"
    )
    .then_some(Type::TypeValue)
}

/// Namespaced global functions of the standard library and extensions.
fn namespaced(full: &str) -> bool {
    matches!(
        full,
        "optional.of"
            | "optional.none"
            | "optional.ofNonZeroValue"
            | "math.greatest"
            | "math.least"
            | "math.ceil"
            | "math.floor"
            | "math.round"
            | "math.trunc"
            | "math.abs"
            | "math.sign"
            | "math.isInf"
            | "math.isNaN"
            | "math.isFinite"
            | "math.bitAnd"
            | "math.bitOr"
            | "math.bitXor"
            | "math.bitNot"
            | "math.bitShiftLeft"
            | "math.bitShiftRight"
            | "strings.quote"
            | "base64.encode"
            | "base64.decode"
            | "lists.range"
            | "format.named"
            | "jsonpatch.escapeKey"
    ) || crate::library::FORMATS
        .iter()
        .any(|f| full == format!("format.{f}"))
}

fn namespaced_result(full: &str, args: &[Type]) -> Type {
    let first = args.first().cloned().unwrap_or(Type::Dyn);
    match full {
        "optional.of" | "optional.ofNonZeroValue" => Type::Optional(Box::new(first)),
        "optional.none" => Type::Optional(Box::new(Type::Dyn)),
        "math.isInf" | "math.isNaN" | "math.isFinite" => Type::Bool,
        "math.greatest" | "math.least" => match first {
            Type::List(e, _) => *e,
            t => t,
        },
        "strings.quote" => Type::String(first.max_size().saturating_mul(2) + 2),
        "base64.encode" => Type::String(first.max_size().saturating_mul(4) / 3 + 4),
        "base64.decode" => Type::Bytes(first.max_size()),
        "lists.range" => Type::List(Box::new(Type::Int), MAX_REQUEST_SIZE_BYTES),
        "jsonpatch.escapeKey" => Type::String(first.max_size().saturating_mul(2)),
        "format.named" => Type::Optional(Box::new(Type::Opaque(crate::types::FORMAT))),
        f if f.starts_with("format.") => Type::Opaque(crate::types::FORMAT),
        _ => first,
    }
}

/// The result type and own cost of a (member or global) function call, or
/// `None` for a function no library declares.
fn member_result(name: &str, first: &Type, member: bool, args: &[Type]) -> Option<(Type, u64)> {
    let n = first.max_size();
    let elem = match first {
        Type::List(e, _) => (**e).clone(),
        _ => Type::Dyn,
    };
    let elem_cost = match &elem {
        Type::String(s) | Type::Bytes(s) => 1 + traverse(*s),
        _ => 1,
    };
    let arg_size = |i: usize| args.get(i).map_or(0, Type::max_size);
    let regex = |s: u64, r: u64| {
        let str_cost = traverse(1 + s);
        let re_cost = ((r as f64) * 0.25).ceil() as u64;
        1 + mul(str_cost.max(1), re_cost.max(1))
    };
    let list_of_strings = |m: u64, len: u64| Type::List(Box::new(Type::String(len)), m);
    Some(match name {
        "size" => (Type::Int, 1),
        "contains" | "startsWith" | "endsWith" => (Type::Bool, 1 + traverse(n)),
        "matches" => {
            // `matches(s, re)` as a global has the string first too.
            let re = if member { arg_size(0) } else { arg_size(1) };
            (Type::Bool, regex(n, re))
        }
        "find" => (Type::String(n), regex(n, arg_size(0))),
        "findAll" => (list_of_strings(n, n), regex(n, arg_size(0))),
        "lowerAscii" | "upperAscii" | "trim" | "reverse" if matches!(first, Type::String(_)) => {
            (Type::String(n), 1 + traverse(n))
        }
        "replace" => (
            Type::String(n.saturating_mul(arg_size(1).max(1))),
            1 + traverse(n),
        ),
        "substring" => (Type::String(n), 1 + traverse(n)),
        "charAt" => (Type::String(1), 1 + traverse(n)),
        "indexOf" | "lastIndexOf" if matches!(first, Type::String(_)) => {
            (Type::Int, 1 + traverse(n))
        }
        "indexOf" | "lastIndexOf" => (Type::Int, 1 + mul(n, elem_cost)),
        "split" => (list_of_strings(n, n), 1 + traverse(n)),
        "join" => (
            Type::String(n.saturating_mul(elem.max_size() + arg_size(0))),
            1 + mul(n, elem_cost),
        ),
        "format" => (Type::String(MAX_REQUEST_SIZE_BYTES), 1 + mul(n, 2)),
        "isSorted" => (Type::Bool, 1 + mul(n, elem_cost)),
        "sum" | "min" | "max" => (elem.clone(), 1 + mul(n, elem_cost)),
        "reverse" | "distinct" | "sort" | "slice" | "flatten" => {
            (first.clone(), 1 + mul(n, elem_cost))
        }
        "int" | "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
        | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" => {
            (Type::Int, 1)
        }
        "uint" => (Type::Uint, 1),
        "double" => (Type::Double, 1),
        "bool" => (Type::Bool, 1),
        // A number or bool prints in at most 32 characters (a double's
        // shortest round-trip form); a string converts to itself.
        "string" => match first {
            Type::Int | Type::Uint | Type::Double | Type::Bool => (Type::String(32), 1),
            Type::String(m) => (Type::String(*m), 1),
            _ => (Type::String(MAX_REQUEST_SIZE_BYTES), 1 + traverse(n)),
        },
        "bytes" => (Type::Bytes(n), 1 + traverse(n)),
        "dyn" => (args.first().cloned().unwrap_or(Type::Dyn), 1),
        "type" => (Type::TypeValue, 1),
        "duration" => (Type::Duration, 1),
        "timestamp" => (Type::Timestamp, 1),
        "hasValue" => (Type::Bool, 1),
        "value" => (
            match first {
                Type::Optional(t) => (**t).clone(),
                _ => Type::Dyn,
            },
            1,
        ),
        "orValue" => (
            match first {
                Type::Optional(t) if !is_dyn(t) => (**t).clone(),
                _ => args.first().cloned().unwrap_or(Type::Dyn),
            },
            1,
        ),
        "or" => (first.clone(), 1),
        // quantity
        "quantity" => (Type::Opaque(crate::types::QUANTITY), 1),
        "isQuantity" | "isURL" | "isInteger" | "isGreaterThan" | "isLessThan" => (Type::Bool, 1),
        "asInteger" | "sign" | "compareTo" => (Type::Int, 1),
        "asApproximateFloat" => (Type::Double, 1),
        "add" | "sub" => (Type::Opaque(crate::types::QUANTITY), 1),
        // url
        "url" => (Type::Opaque(crate::types::URL), 1),
        "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => {
            (Type::String(n), 1)
        }
        "getQuery" => (
            Type::Map(
                Box::new(Type::String(n)),
                Box::new(list_of_strings(n, n)),
                n,
            ),
            1,
        ),
        // format
        "validate" => (
            Type::Optional(Box::new(list_of_strings(8, MAX_REQUEST_SIZE_BYTES))),
            1 + traverse(arg_size(0)),
        ),
        _ => return None,
    })
}
