//! Property-style tests of the selector parsers: canonical strings
//! round-trip (Display → parse → Display), and arbitrary input never panics.
//! Inputs come from a seeded generator, so failures reproduce.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ubernetes_apimachinery::fields::FieldSelector;
use ubernetes_apimachinery::labels::Selector;

const NAME_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const INNER_CHARS: &[u8] = b"abcXYZ019-_.";

fn word(rng: &mut StdRng, max: usize) -> String {
    let len = rng.random_range(1..=max);
    let mut s = String::new();
    for i in 0..len {
        let set = if i == 0 || i == len - 1 {
            NAME_CHARS
        } else {
            INNER_CHARS
        };
        s.push(char::from(set[rng.random_range(0..set.len())]));
    }
    s
}

fn key(rng: &mut StdRng) -> String {
    let name = word(rng, 12);
    if rng.random_bool(0.3) {
        format!(
            "{}.example.com/{name}",
            word(rng, 6)
                .to_lowercase()
                .trim_matches(['-', '_', '.'])
                .replace(['_', '.'], "x")
        )
    } else {
        name
    }
}

fn value(rng: &mut StdRng) -> String {
    if rng.random_bool(0.1) {
        String::new()
    } else {
        word(rng, 10)
    }
}

fn requirement(rng: &mut StdRng) -> String {
    let k = key(rng);
    match rng.random_range(0..8) {
        0 => format!("{k}={}", value(rng)),
        1 => format!("{k}=={}", value(rng)),
        2 => format!("{k}!={}", value(rng)),
        3 => k,
        4 => format!("!{k}"),
        5 => {
            let n = rng.random_range(1..4);
            let vals: Vec<String> = (0..n).map(|_| value(rng)).collect();
            format!("{k} in ({})", vals.join(","))
        }
        6 => format!("{k} notin ({})", value(rng)),
        _ => format!("{k}>{}", rng.random_range(0i64..50)),
    }
}

#[test]
fn label_selector_display_round_trips_through_parse() {
    let mut rng = StdRng::seed_from_u64(0x5e1ec7);
    for _ in 0..2000 {
        let n = rng.random_range(1..5);
        let reqs: Vec<String> = (0..n).map(|_| requirement(&mut rng)).collect();
        let input = reqs.join(if rng.random_bool(0.5) { "," } else { " , " });
        let sel = Selector::parse(&input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        let canonical = sel.to_string();
        let again = Selector::parse(&canonical).unwrap_or_else(|e| panic!("{canonical:?}: {e}"));
        assert_eq!(again, sel, "{input:?} -> {canonical:?}");
        assert_eq!(again.to_string(), canonical);
    }
}

#[test]
fn label_selectors_match_the_labels_they_were_built_from() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..500 {
        let labels: BTreeMap<String, String> = (0..rng.random_range(1..5))
            .map(|_| (key(&mut rng), value(&mut rng)))
            .collect();
        let text: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let sel = Selector::parse(&text.join(",")).unwrap_or_else(|e| panic!("{e}"));
        assert!(sel.matches(&labels));
        assert_eq!(sel, Selector::from_set(&labels));
        let mut other = labels.clone();
        if let Some(v) = other.values_mut().next() {
            v.push('z');
        }
        assert!(!sel.matches(&other));
    }
}

#[test]
fn field_selector_display_round_trips_including_escapes() {
    let mut rng = StdRng::seed_from_u64(0xf1e1d);
    let specials = ['\\', ',', '=', 'a', 'b', '!', ' '];
    for _ in 0..2000 {
        let n = rng.random_range(1..4);
        let mut terms = Vec::new();
        for _ in 0..n {
            let field = format!("{}.{}", word(&mut rng, 6), word(&mut rng, 6));
            let v: String = (0..rng.random_range(0..8))
                .map(|_| specials[rng.random_range(0..specials.len())])
                .collect();
            let op = if rng.random_bool(0.5) { "=" } else { "!=" };
            terms.push(format!(
                "{field}{op}{}",
                ubernetes_apimachinery::fields::escape_value(&v)
            ));
        }
        let input = terms.join(",");
        let sel = FieldSelector::parse(&input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        let canonical = sel.to_string();
        let again =
            FieldSelector::parse(&canonical).unwrap_or_else(|e| panic!("{canonical:?}: {e}"));
        assert_eq!(again, sel, "{input:?} -> {canonical:?}");
    }
}

#[test]
fn arbitrary_selector_text_never_panics() {
    let mut rng = StdRng::seed_from_u64(42);
    let alphabet: Vec<char> = "ab=!,() \t\\<>-_./in notin\u{0}é\u{1F600}"
        .chars()
        .collect();
    for _ in 0..20_000 {
        let s: String = (0..rng.random_range(0..24))
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        if let Ok(sel) = Selector::parse(&s) {
            // Whatever parses re-parses to the same selector.
            assert_eq!(Selector::parse(&sel.to_string()).ok(), Some(sel), "{s:?}");
        }
        if let Ok(sel) = FieldSelector::parse(&s) {
            assert_eq!(
                FieldSelector::parse(&sel.to_string()).ok(),
                Some(sel),
                "{s:?}"
            );
        }
    }
}

#[test]
fn huge_selectors_parse_without_recursion() {
    let big: Vec<String> = (0..20_000).map(|i| format!("k{i}=v{i}")).collect();
    let sel = Selector::parse(&big.join(",")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sel.requirements().len(), 20_000);
    let paren = format!("a in ({})", "(".repeat(10_000));
    assert!(Selector::parse(&paren).is_err());
}
