//! Patch bodies are attacker-controlled: deep nesting is refused with a 400
//! before any recursion (checked on a small thread stack), and arbitrary
//! bodies against arbitrary documents never panic.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use ubernetes_apimachinery::patch::{NoPatchMeta, json_patch, merge_patch, strategic_merge_patch};

fn on_small_stack<F: FnOnce() + Send + 'static>(f: F) {
    let h = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    assert!(h.join().is_ok(), "patch code overflowed or panicked");
}

fn deep(open: &str, close: &str, n: usize) -> Vec<u8> {
    format!("{}{}", open.repeat(n), close.repeat(n)).into_bytes()
}

#[test]
fn ten_thousand_nesting_levels_are_a_400_not_a_stack_overflow() {
    on_small_stack(|| {
        let doc = json!({"a": 1});
        let arrays = deep("[", "]", 10_000);
        let objects = deep("{\"a\":", "}", 10_000);

        let e = json_patch(&doc, &arrays).err().map(|e| (e.code, e.message));
        assert_eq!(
            e,
            Some((400, "invalid character '[' exceeded max depth".to_string()))
        );

        let e = strategic_merge_patch(&doc, &objects, &NoPatchMeta)
            .err()
            .map(|e| (e.code, e.message));
        assert_eq!(
            e,
            Some((400, "invalid character '{' exceeded max depth".to_string()))
        );

        // evanphx's MergePatch reports any undecodable patch as "Invalid JSON Patch".
        let e = merge_patch(&doc, &objects)
            .err()
            .map(|e| (e.code, e.message));
        assert_eq!(e, Some((400, "Invalid JSON Patch".to_string())));
    });
}

#[test]
fn nesting_up_to_the_limit_is_accepted() {
    let depth = ubernetes_apimachinery::patch::MAX_NESTING_DEPTH;
    let fixed = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    let out = merge_patch(&json!({}), fixed.as_bytes());
    assert!(out.is_ok(), "{out:?}");
    let out = strategic_merge_patch(&json!({}), fixed.as_bytes(), &NoPatchMeta);
    assert!(out.is_ok(), "{out:?}");
}

fn random_value(rng: &mut StdRng, depth: usize) -> Value {
    let keys = [
        "a",
        "b",
        "name",
        "$patch",
        "$retainKeys",
        "$setElementOrder/a",
        "$deleteFromPrimitiveList/b",
        "c",
    ];
    let scalars = [
        json!(null),
        json!(1),
        json!(1.5),
        json!("x"),
        json!("delete"),
        json!("replace"),
        json!("merge"),
        json!(true),
    ];
    if depth > 4 || rng.random_bool(0.3) {
        return scalars[rng.random_range(0..scalars.len())].clone();
    }
    if rng.random_bool(0.5) {
        let mut m = serde_json::Map::new();
        for _ in 0..rng.random_range(0..4) {
            m.insert(
                keys[rng.random_range(0..keys.len())].to_string(),
                random_value(rng, depth + 1),
            );
        }
        Value::Object(m)
    } else {
        Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        )
    }
}

struct AllMerge;
impl ubernetes_apimachinery::patch::PatchMeta for AllMerge {
    fn field(
        &self,
        name: &str,
    ) -> Option<(
        ubernetes_apimachinery::patch::FieldPatchMeta,
        Box<dyn ubernetes_apimachinery::patch::PatchMeta>,
    )> {
        let meta = ubernetes_apimachinery::patch::FieldPatchMeta {
            merge: true,
            retain_keys: name == "c",
            merge_key: (name != "b").then(|| "name".to_string()),
        };
        Some((meta, Box::new(AllMerge)))
    }
}

#[test]
fn random_patches_against_random_documents_never_panic() {
    let mut rng = StdRng::seed_from_u64(0xbad_f00d);
    for _ in 0..20_000 {
        let doc = random_value(&mut rng, 0);
        let patch = random_value(&mut rng, 0).to_string();
        let _ = strategic_merge_patch(&doc, patch.as_bytes(), &AllMerge);
        let _ = strategic_merge_patch(&doc, patch.as_bytes(), &NoPatchMeta);
        let _ = merge_patch(&doc, patch.as_bytes());
        let op = ["add", "remove", "replace", "move", "copy", "test", "x"][rng.random_range(0..7)];
        let path = [
            "", "/", "/a", "/a/0", "/a/-", "/a/-1", "/name", "/b/c/d", "/a/9",
        ][rng.random_range(0..9)];
        let from = ["/a", "/b", "/a/0", ""][rng.random_range(0..4)];
        let ops =
            json!([{"op": op, "path": path, "from": from, "value": random_value(&mut rng, 3)}]);
        let _ = json_patch(&doc, ops.to_string().as_bytes());
    }
}

#[test]
fn random_bytes_never_panic_the_decoders() {
    let mut rng = StdRng::seed_from_u64(99);
    let alphabet = b"{}[]\":,0123456789.eE+-truefalsnl \\\n\t$patch";
    for _ in 0..20_000 {
        let body: Vec<u8> = (0..rng.random_range(0..40))
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        let doc = json!({"a": [1, 2], "name": "x"});
        for r in [
            json_patch(&doc, &body),
            merge_patch(&doc, &body),
            strategic_merge_patch(&doc, &body, &AllMerge),
        ] {
            if let Err(e) = r {
                assert!([400, 413, 422, 500].contains(&e.code), "{e:?}");
            }
        }
    }
}
