//! Fuzz the label selector parser (`labels::Selector::parse`, the
//! `labelSelector` query parameter of every list and watch) and
//! `Selector::from_label_selector` (a `metav1.LabelSelector` in a body).
//! A parsed selector's canonical string must parse to the same selector.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use ubernetes_apimachinery::labels::Selector;
use ubernetes_apimachinery::patch::parse_json;
use ubernetes_fuzz::text;

fn check_round_trip(sel: &Selector, what: &str) {
    let canonical = sel.to_string();
    match Selector::parse(&canonical) {
        Ok(again) => assert_eq!(
            again.to_string(),
            canonical,
            "{what}: canonical form {canonical:?} reparses differently"
        ),
        Err(e) => panic!("{what}: canonical form {canonical:?} does not parse: {e:?}"),
    }
    let labels: BTreeMap<String, String> = [("app", "web"), ("tier", "front"), ("n", "5")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let _ = sel.matches(&labels);
    let _ = sel.requires_exact_match("app");
}

fuzz_target!(|data: &[u8]| {
    let s = text(data);
    if let Ok(sel) = Selector::parse(&s) {
        check_round_trip(&sel, "parse");
    }
    if let Ok(json) = parse_json(data)
        && let Ok(sel) = Selector::from_label_selector(&json)
        && !sel.matches_nothing()
    {
        check_round_trip(&sel, "from_label_selector");
    }
});
