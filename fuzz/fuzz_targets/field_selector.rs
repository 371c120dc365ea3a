//! Fuzz the field selector parser (`fields::FieldSelector::parse`, the
//! `fieldSelector` query parameter) and its value escaping: a parsed
//! selector's string form must parse to the same terms, and
//! `unescape_value(escape_value(s)) == s` for every string.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use ubernetes_apimachinery::fields::{FieldSelector, escape_value, unescape_value};
use ubernetes_fuzz::text;

/// The terms as sorted strings (parse sorts its terms; `==` reads as `=`).
fn terms(sel: &FieldSelector) -> Vec<String> {
    let mut t: Vec<String> = sel.requirements().iter().map(ToString::to_string).collect();
    t.sort();
    t
}

fuzz_target!(|data: &[u8]| {
    let s = text(data);
    assert_eq!(
        unescape_value(&escape_value(&s)).as_deref(),
        Ok(&*s),
        "escape/unescape does not round-trip"
    );
    let Ok(sel) = FieldSelector::parse(&s) else {
        return;
    };
    let printed = sel.to_string();
    match FieldSelector::parse(&printed) {
        Ok(again) => assert_eq!(
            terms(&again),
            terms(&sel),
            "{printed:?} reparses to other terms"
        ),
        Err(e) => panic!("string form {printed:?} of {s:?} does not parse: {e:?}"),
    }
    let fields: BTreeMap<String, String> = [("metadata.name", "a"), ("status.phase", "Running")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let _ = sel.matches(&fields);
    let _ = sel.requires_exact_match("metadata.name");
});
