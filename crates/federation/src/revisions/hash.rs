//! Kube's names for revisions: FNV hashes rendered with apimachinery's
//! `rand.SafeEncodeString`, over JSON written as Go's `encoding/json`
//! writes a `map[string]interface{}` (keys sorted, `<`, `>`, `&`, U+2028
//! and U+2029 escaped), so a StatefulSet's ControllerRevision `data` is
//! byte for byte what kube's controller stores and kubectl compares.
//! Pure.

use serde_json::Value;

/// apimachinery's `rand` alphabet (no vowels, no 0, 1, 3).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const FNV_OFFSET: u32 = 2_166_136_261;
const FNV_PRIME: u32 = 16_777_619;

/// FNV-1a, 32 bits (Go's `fnv.New32a`).
pub fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(FNV_OFFSET, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(FNV_PRIME)
    })
}

/// FNV-1, 32 bits (Go's `fnv.New32`, which `HashControllerRevision` uses).
pub fn fnv32(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(FNV_OFFSET, |h, b| h.wrapping_mul(FNV_PRIME) ^ u32::from(*b))
}

/// apimachinery's `rand.SafeEncodeString(fmt.Sprint(h))`.
pub fn safe_encode(h: u32) -> String {
    h.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// `value` as Go's `json.Marshal` writes it after a round trip through
/// `map[string]interface{}`: compact, object keys sorted, and `<`, `>`,
/// `&`, U+2028, U+2029 escaped (Go escapes them for HTML; they occur only
/// inside strings, so replacing them in the whole text is exact).
pub fn go_json(value: &Value) -> String {
    let canonical = crate::member_object::canonical_json(value);
    let mut out = String::with_capacity(canonical.len());
    for c in canonical.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fnv_matches_the_reference_vectors() {
        // The FNV reference test vectors (Go's hash/fnv tests).
        assert_eq!(fnv32a(b""), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c_292c);
        assert_eq!(fnv32a(b"foobar"), 0xbf9c_f968);
        assert_eq!(fnv32(b"a"), 0x050c_5d7e);
        assert_eq!(fnv32(b"foobar"), 0x31f0_b262);
    }

    #[test]
    fn safe_encoding_maps_each_digit_like_apimachinery() {
        // '0' is byte 48, 48 % 27 = 21 → '4'; '9' is 57 % 27 = 3 → 'f'.
        assert_eq!(safe_encode(0), "4");
        assert_eq!(safe_encode(9), "f");
        assert_eq!(safe_encode(1_234_567_890), "56789bcdf4");
        assert!(
            safe_encode(u32::MAX)
                .chars()
                .all(|c| ALPHANUMS.contains(&(c as u8)))
        );
    }

    #[test]
    fn json_is_written_as_go_writes_a_map() {
        let v = json!({"spec": {"template": {"b": [1, "x<y>&z"], "a": null, "$patch": "replace"}}});
        assert_eq!(
            go_json(&v),
            r#"{"spec":{"template":{"$patch":"replace","a":null,"b":[1,"x\u003cy\u003e\u0026z"]}}}"#
        );
        assert_eq!(go_json(&json!("a\"b\\\n\u{1}")), r#""a\"b\\\n\u0001""#);
    }
}
