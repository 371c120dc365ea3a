use super::*;
use serde_json::json;

fn self_type(schema: Json) -> Type {
    Type::from_schema(&schema, false).unwrap()
}

/// Compile `rule` with `self` typed by `schema` and evaluate against `v`.
fn eval(schema: Json, rule: &str, v: Json) -> Result<Value, String> {
    let t = self_type(schema);
    let p = compile(rule, &[("self", t)]).map_err(|e| e.0)?;
    p.eval(&[("self", Binding::Json(Some(&v)))], PER_CALL_LIMIT)
        .map(|(v, _)| v)
        .map_err(|e| e.to_string())
}

fn truthy(schema: Json, rule: &str, v: Json) -> bool {
    match eval(schema, rule, v) {
        Ok(Value::Bool(b)) => b,
        other => panic!("{rule}: {other:?}"),
    }
}

fn spec_xy() -> Json {
    json!({"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"},
        "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ratio": {"type": "number"}}})
}

#[test]
fn field_rules_of_kube_docs_evaluate() {
    let s = spec_xy();
    assert!(truthy(
        s.clone(),
        "self.x + self.y > 0",
        json!({"x": 1, "y": 0})
    ));
    assert!(!truthy(
        s.clone(),
        "self.x + self.y > 0",
        json!({"x": 0, "y": 0})
    ));
    assert!(truthy(
        s.clone(),
        "has(self.name) || self.x == 0",
        json!({"x": 0})
    ));
    assert!(!truthy(s.clone(), "has(self.name)", json!({"x": 0})));
    assert!(truthy(
        s.clone(),
        "self.tags.all(t, t.startsWith('a'))",
        json!({"tags": ["ab", "ac"]})
    ));
    assert!(truthy(
        s.clone(),
        "self.tags.exists(t, t == 'b')",
        json!({"tags": ["a", "b"]})
    ));
    assert!(truthy(
        s.clone(),
        "self.tags.map(t, t + '!') == ['a!']",
        json!({"tags": ["a"]})
    ));
    assert!(truthy(
        s.clone(),
        "size(self.tags.filter(t, t != 'a')) == 1",
        json!({"tags": ["a", "b"]})
    ));
    assert!(truthy(
        s.clone(),
        "self.name.matches('^[a-z]+$')",
        json!({"name": "abc"})
    ));
    assert!(truthy(
        s.clone(),
        "'app' in self.labels && self.labels['app'] == 'web'",
        json!({"labels": {"app": "web"}})
    ));
    assert!(truthy(s.clone(), "self.ratio > 0.5", json!({"ratio": 1})));
    assert!(truthy(
        s.clone(),
        "self.labels.all(k, k.size() < 5)",
        json!({"labels": {"app": "web"}})
    ));
}

#[test]
fn kubernetes_libraries_are_there() {
    let s = json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "integer"}},
        "s": {"type": "string"}}});
    let ok = |rule: &str, v: Json| assert!(truthy(s.clone(), rule, v), "{rule}");
    ok(
        "self.l.isSorted() && self.l.sum() == 6 && self.l.min() == 1 && self.l.max() == 3",
        json!({"l": [1, 2, 3]}),
    );
    ok(
        "!self.l.isSorted() && self.l.indexOf(2) == 0 && self.l.lastIndexOf(2) == 2",
        json!({"l": [2, 1, 2]}),
    );
    ok(
        "self.s.charAt(1) == 'b' && self.s.indexOf('c') == 2 && self.s.upperAscii() == 'ABC'",
        json!({"s": "abc"}),
    );
    ok(
        "self.s.replace('b', 'x') == 'axc' && self.s.split('b') == ['a', 'c'] && self.s.substring(1) == 'bc'",
        json!({"s": "abc"}),
    );
    ok(
        "' x '.trim() == 'x' && ['a', 'b'].join('-') == 'a-b' && 'ABC'.lowerAscii() == 'abc'",
        json!({}),
    );
    ok(
        "self.s.find('[0-9]+') == '123' && self.s.findAll('[a-z]') == ['a', 'b']",
        json!({"s": "a123b"}),
    );
    ok(
        "quantity('1Gi').isGreaterThan(quantity('1G')) && quantity('500m').compareTo(quantity('0.5')) == 0",
        json!({}),
    );
    ok(
        "quantity('2k').asInteger() == 2000 && isQuantity('1.5Mi') && !isQuantity('abc') && quantity('1Gi') == quantity('1024Mi')",
        json!({}),
    );
    ok(
        "quantity('1').add(quantity('500m')).asApproximateFloat() == 1.5 && quantity('1').sub(2).sign() == -1",
        json!({}),
    );
    ok(
        "url('https://example.com:8080/path?a=1&a=2').getHost() == 'example.com:8080' && url('https://example.com/p').getScheme() == 'https'",
        json!({}),
    );
    ok(
        "url('https://[::1]:80/x').getHostname() == '::1' && url('https://example.com/p').getEscapedPath() == '/p' && url('http://a/b?x=1').getQuery()['x'] == ['1']",
        json!({}),
    );
    ok(
        "isURL('/absolute') && !isURL('relative') && url('https://example.com').getPort() == ''",
        json!({}),
    );
    ok(
        "!format.dns1123Label().validate('my-name').hasValue() && format.dns1123Label().validate('My_Name').hasValue()",
        json!({}),
    );
    ok(
        "format.named('dns1123Subdomain').value().validate('example.com') == optional.none() && !format.named('nope').hasValue()",
        json!({}),
    );
}

#[test]
fn an_undefined_field_fails_to_compile_with_cel_gos_message() {
    let t = self_type(json!({"type": "object", "properties": {"x": {"type": "integer"}}}));
    let e = compile("self.z == 100", &[("self", t.clone())]).unwrap_err();
    assert_eq!(
        e.0,
        "ERROR: <input>:1:5: undefined field 'z'\n | self.z == 100\n | ....^"
    );
    let e = compile("other > 1", &[("self", t.clone())]).unwrap_err();
    assert!(
        e.0.starts_with("ERROR: <input>:1:1: undeclared reference to 'other' (in container '')"),
        "{}",
        e.0
    );
    let e = compile("self.x.nope()", &[("self", t)]).unwrap_err();
    assert!(e.0.contains("undeclared reference to 'nope'"), "{}", e.0);
}

#[test]
fn a_syntax_error_is_reported_as_cel_go_does() {
    let e = compile("self = 42", &[("self", Type::Dyn)]).unwrap_err();
    assert!(e.0.starts_with("ERROR: <input>:1:"), "{}", e.0);
    assert!(e.0.contains("Syntax error"), "{}", e.0);
    assert!(e.0.contains("\n | self = 42\n | "), "{}", e.0);
}

#[test]
fn result_types_are_known() {
    let t = self_type(spec_xy());
    let p = compile("self.x + 1", &[("self", t.clone())]).unwrap();
    assert_eq!(p.result_type(), &Type::Int);
    let p = compile("self.x > 1", &[("self", t.clone())]).unwrap();
    assert_eq!(p.result_type(), &Type::Bool);
    let p = compile("'x is ' + string(self.x)", &[("self", t)]).unwrap();
    assert!(matches!(p.result_type(), Type::String(_)));
}

#[test]
fn transition_rules_see_old_self() {
    let t = Type::Int;
    let p = compile(
        "self >= oldSelf",
        &[("self", t.clone()), ("oldSelf", t.clone())],
    )
    .unwrap();
    assert!(p.references("oldSelf") && p.references("self"));
    let new = json!(9);
    let old = json!(10);
    let (v, _) = p
        .eval(
            &[
                ("self", Binding::Json(Some(&new))),
                ("oldSelf", Binding::Json(Some(&old))),
            ],
            PER_CALL_LIMIT,
        )
        .unwrap();
    assert_eq!(v, Value::Bool(false));
    let opt = Type::Optional(Box::new(t.clone()));
    let p = compile(
        "!oldSelf.hasValue() || self >= oldSelf.value()",
        &[("self", t), ("oldSelf", opt)],
    )
    .unwrap();
    let (v, _) = p
        .eval(
            &[
                ("self", Binding::Json(Some(&new))),
                ("oldSelf", Binding::Optional(None)),
            ],
            PER_CALL_LIMIT,
        )
        .unwrap();
    assert_eq!(v, Value::Bool(true));
    let (v, _) = p
        .eval(
            &[
                ("self", Binding::Json(Some(&new))),
                ("oldSelf", Binding::Optional(Some(&old))),
            ],
            PER_CALL_LIMIT,
        )
        .unwrap();
    assert_eq!(v, Value::Bool(false));
}

#[test]
fn runtime_errors_use_cel_gos_words() {
    let s = spec_xy();
    assert_eq!(
        eval(s.clone(), "self.x > 0", json!({})).unwrap_err(),
        "no such key: x"
    );
    assert_eq!(
        eval(s, "self.x / 0 > 1", json!({"x": 1})).unwrap_err(),
        "division by zero"
    );
}

/// The e2e conformance spec's schema: maxItems 725 keeps the nested `all`
/// under the estimated limit, while 725 actual elements blow the per-call
/// limit at run time.
#[test]
fn costs_follow_kubes_limits() {
    let t = self_type(json!({"type": "object", "properties": {
        "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}}}));
    let rule = "self.largeArray.all(x, self.largeArray.all(y, y == x))";
    let p = compile(rule, &[("self", t)]).unwrap();
    assert!(
        p.estimated_cost() < STATIC_ESTIMATED_COST_LIMIT,
        "{}",
        p.estimated_cost()
    );
    let small = json!({"largeArray": [2, 2]});
    assert!(
        p.eval(&[("self", Binding::Json(Some(&small)))], PER_CALL_LIMIT)
            .is_ok()
    );
    let big = json!({"largeArray": vec![20; 725]});
    let e = p
        .eval(&[("self", Binding::Json(Some(&big)))], PER_CALL_LIMIT)
        .unwrap_err();
    assert!(matches!(e, EvalError::CostLimit { .. }));
    assert_eq!(
        e.to_string(),
        "operation cancelled: actual cost limit exceeded"
    );

    // Unbounded lists of unbounded strings: the estimate is huge.
    let t = self_type(json!({"type": "array", "items": {"type": "string"}}));
    let p = compile("self.all(s, s == 'string constant')", &[("self", t)]).unwrap();
    assert!(
        p.estimated_cost() > STATIC_ESTIMATED_COST_LIMIT / 10,
        "{}",
        p.estimated_cost()
    );
}

#[test]
fn absent_fields_cost_nothing_at_run_time() {
    let t = self_type(json!({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "string"}}}}));
    let p = compile(
        "!has(self.l) || self.l.all(a, self.l.all(b, a == b))",
        &[("self", t)],
    )
    .unwrap();
    let v = json!({});
    let (r, cost) = p
        .eval(&[("self", Binding::Json(Some(&v)))], PER_CALL_LIMIT)
        .unwrap();
    assert_eq!(r, Value::Bool(true));
    assert!(cost < 100, "{cost}");
}

#[test]
fn quantities_parse_as_kube_parses_them() {
    use library::Quantity;
    assert_eq!(Quantity::parse("1Ki"), Quantity::parse("1024"));
    assert_eq!(Quantity::parse("1.5"), Quantity::parse("1500m"));
    assert_eq!(Quantity::parse("1e3"), Quantity::parse("1k"));
    assert!(Quantity::parse("1.2.3").is_err());
    assert!(Quantity::parse("12x").is_err());
}

#[test]
fn quantities_print_in_kubes_canonical_form() {
    use crate::library::Quantity;
    let c = |s: &str| Quantity::parse(s).unwrap().canonical(s.contains('i'));
    assert_eq!(c("1000m"), "1");
    assert_eq!(c("0.5"), "500m");
    assert_eq!(c("1500"), "1500");
    assert_eq!(c("2000"), "2k");
    assert_eq!(c("1024Mi"), "1Gi");
    assert_eq!(c("1536Mi"), "1536Mi");
    assert_eq!(c("0"), "0");
    let sum = Quantity::parse("768Mi")
        .unwrap()
        .add(&Quantity::parse("512Mi").unwrap())
        .unwrap();
    assert_eq!(sum.canonical(true), "1280Mi");
    assert!(Quantity::parse("1").unwrap() < Quantity::parse("1001m").unwrap());
}

#[test]
fn untyped_bindings_cost_what_their_fields_cost_and_results_convert_to_json() {
    let obj = json!({"spec": {"replicas": 9}, "metadata": {"name": "web", "labels": {"a": "b"}}});
    let p = compile(
        "'replicas ' + string(obj.spec.replicas) + ' of ' + obj.metadata.name",
        &[("obj", Type::Dyn)],
    )
    .unwrap();
    let (v, cost) = p
        .eval(&[("obj", Binding::Untyped(&obj))], PER_CALL_LIMIT)
        .unwrap();
    assert_eq!(to_json(&v), Some(json!("replicas 9 of web")));
    assert!(cost < 100, "a short concatenation is cheap: {cost}");
    let p = compile("{'n': [1, 2.5, true, null]}", &[]).unwrap();
    let (v, _) = p.eval(&[], PER_CALL_LIMIT).unwrap();
    assert_eq!(to_json(&v), Some(json!({"n": [1, 2.5, true, null]})));
}

/// Evaluate a mutation with `object` bound (untyped) and return its JSON.
fn mutation(expr: &str, object: Json) -> Result<Json, String> {
    let p = compile_mutating(expr, &[("object", Type::Dyn)]).map_err(|e| e.0)?;
    let (v, _) = p
        .eval(&[("object", Binding::Untyped(&object))], PER_CALL_LIMIT)
        .map_err(|e| e.to_string())?;
    to_json(&v).ok_or_else(|| "not JSON".to_string())
}

#[test]
fn mutating_struct_literals_are_the_objects_they_stand_for() {
    let obj = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
    assert_eq!(
        mutation(
            "Object{spec: Object.spec{replicas: object.spec.replicas + 2, paused: false}}",
            obj.clone()
        )
        .unwrap(),
        json!({"spec": {"replicas": 3, "paused": false}})
    );
    assert_eq!(
        mutation(
            r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b~c"), value: object.metadata.name}]"#,
            obj.clone()
        )
        .unwrap(),
        json!([{"op": "add", "path": "/metadata/labels/a~1b~0c", "value": "web"}])
    );
    // Struct literals inside comprehensions and conditionals are found too.
    assert_eq!(
        mutation(
            r#"[1, 2].map(i, JSONPatch{op: "remove", path: "/x/" + string(i)})"#,
            obj.clone()
        )
        .unwrap(),
        json!([{"op": "remove", "path": "/x/1"}, {"op": "remove", "path": "/x/2"}])
    );
    // Validation rules (plain `compile`) still know no struct types, and
    // other names are refused when evaluated.
    let p = compile("Object{}", &[]).unwrap();
    assert!(p.eval(&[], PER_CALL_LIMIT).is_err());
    assert!(mutation("Other{a: 1}", obj).is_err());
}
