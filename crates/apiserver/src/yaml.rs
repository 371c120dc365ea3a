//! YAML request bodies, decoded with a bound on alias expansion (issue 28,
//! `docs/security.md`): a "billion laughs" body is refused in go-yaml's
//! words before its expansion is built. Imports nothing of this crate, so
//! both the handlers and the audit log (which decodes audited bodies) use it.

use serde_json::Value;
use ubernetes_apimachinery::ApiError;

/// The least a YAML body may expand to: kube-apiserver's default request
/// body limit, 3 MiB (`options::DEFAULT_MAX_REQUEST_BODY_BYTES`; a test
/// there checks they are the same).
pub const EXPANSION_FLOOR: usize = 3 * 1024 * 1024;

/// go-yaml's answer to an alias bomb, which kube-apiserver passes on.
const EXCESSIVE_ALIASING: &str = "document contains excessive aliasing";

/// How much a YAML body may expand to, counted as [`BoundedValue`] does:
/// as much as the largest body the server accepts by default (3 MiB), or
/// twice the body when that is more. A document without aliases never
/// reaches it (each node costs at most its text in the body and one byte);
/// aliases may repeat what the body holds up to it, and no further
/// ("billion laughs").
fn yaml_expansion_limit(body_len: usize) -> usize {
    EXPANSION_FLOOR.max(body_len.saturating_mul(2))
}

/// Parse a YAML body (one document). Aliases are expanded, but the
/// expanded document may not grow past [`yaml_expansion_limit`]: beyond it
/// the body is refused (400) in go-yaml's words, `error converting YAML to
/// JSON: yaml: document contains excessive aliasing`, before the memory is
/// spent.
pub fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    if let Some(value) = decode_json_object(body) {
        return Ok(value);
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the YAML body is not valid UTF-8"))?;
    let limit = yaml_expansion_limit(body.len());
    let budget = std::cell::Cell::new(limit);
    let exceeded = std::cell::Cell::new(false);
    let seed = BoundedValue {
        budget: &budget,
        exceeded: &exceeded,
    };
    // serde-saphyr's own node and event counts (which include replayed
    // aliases) are set past what the byte budget allows (every node costs
    // at least one), so the byte budget decides.
    let mut options = serde_saphyr::Options::default();
    let mut parser_budget = serde_saphyr::Budget::default();
    parser_budget.max_nodes = parser_budget.max_nodes.max(limit.saturating_add(1));
    parser_budget.max_events = parser_budget
        .max_events
        .max(limit.saturating_mul(2).saturating_add(16));
    options.budget = Some(parser_budget);
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde::de::DeserializeSeed::deserialize(seed, de)
    })
    .map_err(|e| {
        // The error itself, out of its snippet and alias-site wrappers.
        let mut inner = &e;
        while let serde_saphyr::Error::AliasError { error, .. }
        | serde_saphyr::Error::WithSnippet { error, .. } = inner
        {
            inner = error;
        }
        let detail = match inner {
            _ if exceeded.get() => EXCESSIVE_ALIASING.to_string(),
            serde_saphyr::Error::AliasReplayCounterOverflow { .. }
            | serde_saphyr::Error::AliasReplayLimitExceeded { .. }
            | serde_saphyr::Error::AliasExpansionLimitExceeded { .. }
            | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. }
            | serde_saphyr::Error::Budget {
                breach:
                    serde_saphyr::budget::BudgetBreach::Aliases { .. }
                    | serde_saphyr::budget::BudgetBreach::AliasAnchorRatio { .. }
                    | serde_saphyr::budget::BudgetBreach::RecordedAnchorEvents { .. }
                    | serde_saphyr::budget::BudgetBreach::RecordedAnchorBytes { .. },
                ..
            } => EXCESSIVE_ALIASING.to_string(),
            // go-yaml's wording, which kube-apiserver passes on.
            serde_saphyr::Error::DuplicateMappingKey {
                key: Some(key),
                location,
            } => format!(
                "line {}: key {} already set in map",
                location.line(),
                Value::String(key.clone())
            ),
            _ => e.to_string().lines().next().unwrap_or_default().to_string(),
        };
        ApiError::bad_request(format!("error converting YAML to JSON: yaml: {detail}"))
    })
}

/// A YAML body that is a JSON object with no repeated key, as JSON: what
/// kubectl, client-go and kube-rs send as a server-side apply
/// (`application/apply-patch+yaml`). JSON is YAML and reads the same
/// either way; the JSON parse is several times cheaper. `None` for
/// anything else (YAML proper, repeated keys, an error), which the YAML
/// parse then decodes or refuses in its own words. JSON has no aliases, so
/// the expansion bound cannot be reached by it.
fn decode_json_object(body: &[u8]) -> Option<Value> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde::de::DeserializeSeed::deserialize(UniqueKeys, &mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// A JSON value whose objects may not repeat a key (YAML refuses that;
/// serde_json's `Value` would keep the last).
#[derive(Clone, Copy)]
struct UniqueKeys;

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            if object.insert(key, value).is_some() {
                return Err(serde::de::Error::custom("repeated key"));
            }
        }
        Ok(Value::Object(object))
    }
}

/// A JSON value deserialized with a byte budget shared by the whole
/// document: every node costs one, every string (and key) its length too.
/// Alias expansion reaches the visitor as repeated nodes, so an alias bomb
/// runs out of budget and fails (setting `exceeded`) before it is built.
#[derive(Clone, Copy)]
struct BoundedValue<'a> {
    budget: &'a std::cell::Cell<usize>,
    exceeded: &'a std::cell::Cell<bool>,
}

impl BoundedValue<'_> {
    fn spend<E: serde::de::Error>(self, cost: usize) -> Result<(), E> {
        match self.budget.get().checked_sub(cost.saturating_add(1)) {
            Some(left) => {
                self.budget.set(left);
                Ok(())
            }
            None => {
                self.exceeded.set(true);
                Err(E::custom(EXCESSIVE_ALIASING))
            }
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for BoundedValue<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for BoundedValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::from(v))
    }

    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Value, E> {
        self.spend(0)?;
        serde::Deserialize::deserialize(serde::de::value::I128Deserializer::<E>::new(v))
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Value, E> {
        self.spend(0)?;
        serde::Deserialize::deserialize(serde::de::value::U128Deserializer::<E>::new(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.spend(v.len())?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.spend(v.len())?;
        Ok(Value::String(v))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::Null)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, de)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend(0)?;
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.spend(key.len())?;
            let value = map.next_value_seed(self)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_object_body_reads_as_its_yaml_reading_does() {
        for body in [
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v\u0026<"},"n":[1,-2,3.5,true,null]}"#,
            "  \n{\"a\": {\"b\": []}, \"c\": \"yes\", \"d\": 1e3}\n",
        ] {
            let fast = decode_json_object(body.as_bytes()).expect("taken as JSON");
            let yaml: Value = serde_saphyr::from_str(body).expect("yaml");
            assert_eq!(fast, yaml, "{body}");
            assert_eq!(decode_yaml(body.as_bytes()).expect("decoded"), fast);
        }
        // YAML proper and a repeated key take the YAML way and its words.
        assert_eq!(decode_json_object(b"a: 1\nb: [x]\n"), None);
        assert_eq!(
            decode_yaml(b"a: 1\nb: [x]\n").expect("yaml"),
            serde_json::json!({"a": 1, "b": ["x"]})
        );
        assert_eq!(decode_json_object(br#"{"a": 1, "a": 2}"#), None);
        let err = decode_yaml(br#"{"a": 1, "a": 2}"#).expect_err("repeated");
        assert!(
            err.message.contains("already set in map"),
            "{}",
            err.message
        );
    }

    /// A "billion laughs" body: `levels` anchors, each a list of `fanout`
    /// aliases of the one before, over a string of `leaf` bytes.
    fn laughs(levels: usize, fanout: usize, leaf: usize) -> String {
        let mut doc = format!(
            "apiVersion: v1\nkind: ConfigMap\nl0: &l0 \"{}\"\n",
            "x".repeat(leaf)
        );
        for i in 1..=levels {
            let refs = vec![format!("*l{}", i - 1); fanout].join(", ");
            doc.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        doc
    }

    #[test]
    fn a_yaml_alias_bomb_is_refused_in_go_yaml_words_before_it_is_built() {
        // 10^9 strings of 1 KiB if expanded: a terabyte.
        let bomb = laughs(9, 10, 1024);
        let started = std::time::Instant::now();
        let err = decode_yaml(bomb.as_bytes()).expect_err("refused");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(err.status_code(), http::StatusCode::BAD_REQUEST);
        assert_eq!(
            err.message,
            "error converting YAML to JSON: yaml: document contains excessive aliasing"
        );
        // Expansion into empty nodes (no bytes to count) is bounded too.
        let empty = "a: &a []\n".to_string()
            + &(1..=12)
                .map(|i| {
                    let prev = if i == 1 {
                        "a".to_string()
                    } else {
                        format!("b{}", i - 1)
                    };
                    format!("b{i}: &b{i} [{}]\n", vec![format!("*{prev}"); 10].join(","))
                })
                .collect::<String>();
        let err = decode_yaml(empty.as_bytes()).expect_err("refused");
        assert!(
            err.message.ends_with("excessive aliasing"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_yaml_body_with_a_few_aliases_or_none_decodes() {
        // go-yaml accepts a few aliases: so does the server.
        let few = laughs(2, 3, 10);
        let v = decode_yaml(few.as_bytes()).expect("decodes");
        assert_eq!(v["l2"][2][1], "xxxxxxxxxx");
        let data =
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: &l {a: b}\n  annotations: *l\n";
        let v = decode_yaml(data.as_bytes()).expect("decodes");
        assert_eq!(v["metadata"]["annotations"], serde_json::json!({"a": "b"}));
        // A large document without aliases, past the 3 MiB floor, is not
        // mistaken for one: the limit is twice the body.
        let mut big = String::from("items:\n");
        for i in 0..32_000 {
            big.push_str(&format!("- {{n: {i}, s: \"{}\"}}\n", "y".repeat(100)));
        }
        assert!(big.len() > 3 * 1024 * 1024);
        let v = decode_yaml(big.as_bytes()).expect("decodes");
        assert_eq!(v["items"][31_999]["n"], 31_999);
    }
}
