//! The generic code names no built-in resource (issue 22): everything about
//! a kind (its printer, subresources and their REST, protobuf message,
//! storage version, which bodies are secret) is declared with the kind, and
//! the store, the handlers, the protobuf codec, discovery, the audit filter
//! and the OpenAPI routes look it up. This test
//! reads those files and fails on a string literal naming the resource of a
//! built-in kind (`"secrets"`, `"pods/binding"`) or one of the resources
//! served without storage (the reviews, `bindings`, `componentstatuses`:
//! declared where they are served), the lists taken from the declarations
//! themselves, and on code naming a subresource a kind declares
//! (`Some("scale")`, `"approval" =>`, `== "binding"`; what a subresource
//! does is the kind's). What remains is allowed below, each with its
//! reason.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The generic files, relative to `crates/`.
const GENERIC: &[&str] = &[
    "registry/src/store.rs",
    "apiserver/src/handlers/mod.rs",
    "apiserver/src/handlers/negotiate.rs",
    "apiserver/src/handlers/resource.rs",
    "apiserver/src/handlers/watch.rs",
    "apiserver/src/protobuf.rs",
    "apiserver/src/discovery.rs",
    "apiserver/src/audit.rs",
    "apiserver/src/openapi_routes.rs",
];

/// Generic files also scanned for the kinds of built-in resources
/// (`"ConfigMap"`, `"=v1 ConfigMap core.v1.ConfigMap"`): the protobuf codec
/// once held a table of every kind and its message.
const KINDS_TOO: &[&str] = &["apiserver/src/protobuf.rs"];

/// `(file, resource, reason)`: a resource name a generic file may keep.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "registry/src/store.rs",
        "namespaces",
        "the generic store checks that an object's namespace exists (kube's \
         NamespaceLifecycle admission) and answers kube's NotFound for it",
    ),
    (
        "apiserver/src/handlers/resource.rs",
        "namespaces",
        "`namespaces` is a segment of kube's URL scheme (/api/v1/namespaces/{ns}/…)",
    ),
];

/// `(file, subresource, reason)`: a subresource name a generic file may keep.
const ALLOWED_SUBRESOURCES: &[(&str, &str, &str)] = &[(
    "apiserver/src/audit.rs",
    "proxy",
    "kube's generic server names `proxy` for every kind: its \
     BasicLongRunningRequestCheck({watch, proxy}, {attach, exec, proxy, log, \
     portforward}), and proxied bodies are never audited",
)];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The code of a file: no test modules, no comment lines.
fn code(text: &str) -> String {
    text.split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The contents of the string literals in `code` (escapes kept as written).
fn string_literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = code.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        // A char literal '"' is not a string.
        if c == '"' && prev != '\'' {
            let mut s = String::new();
            while let Some(d) = chars.next() {
                match d {
                    '\\' => {
                        s.push(d);
                        if let Some(e) = chars.next() {
                            s.push(e);
                        }
                    }
                    '"' => break,
                    _ => s.push(d),
                }
            }
            out.push(s);
            prev = '"';
        } else {
            prev = c;
        }
    }
    out
}

/// The built-in resources a literal names: a `/`-separated segment equal to
/// one (`"secrets"`, `"pods/binding"`, `"/api/v1/secrets"`).
fn named<'a>(literal: &str, resources: &'a BTreeSet<String>) -> Vec<&'a str> {
    literal
        .split('/')
        .filter_map(|seg| resources.get(seg).map(String::as_str))
        .collect()
}

/// The built-in kinds a literal names: a word equal to one (`"ConfigMap"`,
/// `"core.v1.ConfigMap"`).
fn kinds_named<'a>(literal: &str, kinds: &'a BTreeSet<String>) -> Vec<&'a str> {
    literal
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|word| kinds.get(word).map(String::as_str))
        .collect()
}

fn violations(resources: &BTreeSet<String>, kinds: &BTreeSet<String>) -> Vec<String> {
    let subresources = builtin_subresources();
    let mut found = Vec::new();
    for file in GENERIC {
        let path = crates_dir().join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for sub in subresources_named(&code(&text), &subresources) {
            if !ALLOWED_SUBRESOURCES
                .iter()
                .any(|(f, s, _)| f == file && *s == sub)
            {
                found.push(format!("{file}: names the subresource {sub}"));
            }
        }
        for literal in string_literals(&code(&text)) {
            for resource in named(&literal, resources) {
                if !ALLOWED.iter().any(|(f, r, _)| f == file && *r == resource) {
                    found.push(format!("{file}: \"{literal}\" names {resource}"));
                }
            }
            if KINDS_TOO.contains(file) {
                for kind in kinds_named(&literal, kinds) {
                    found.push(format!("{file}: \"{literal}\" names kind {kind}"));
                }
            }
        }
    }
    found
}

/// The subresources of built-in kinds named in `code`: a literal equal to
/// one, or, for one that is also a field name (`status`), a literal
/// compared or matched (`Some("status")`, `"status" =>`, `== "status"`,
/// `"approval" | "status"`).
fn subresources_named<'a>(code: &str, subresources: &'a BTreeSet<String>) -> Vec<&'a str> {
    let literals = string_literals(code);
    subresources
        .iter()
        .filter(|sub| {
            let quoted = format!("\"{sub}\"");
            let compared = [
                format!("Some({quoted}"),
                format!("{quoted} =>"),
                format!("{quoted} |"),
                format!("| {quoted}"),
                format!("== {quoted}"),
                format!("!= {quoted}"),
            ]
            .iter()
            .any(|p| code.contains(p.as_str()));
            compared || (!FIELD_NAMES.contains(&sub.as_str()) && literals.contains(sub))
        })
        .map(String::as_str)
        .collect()
}

/// Subresource names that are also field names of every object (a literal
/// alone does not name the subresource).
const FIELD_NAMES: &[&str] = &["status"];

fn builtin_subresources() -> BTreeSet<String> {
    ubernetes_registry::kinds::builtin()
        .iter()
        .flat_map(|k| k.info().subresources.clone())
        .map(|s| s.name)
        .collect()
}

/// The resources of built-in kinds and those served without storage.
fn builtin_resources() -> BTreeSet<String> {
    ubernetes_registry::kinds::builtin()
        .iter()
        .map(|k| k.info().resource.clone())
        .chain(
            ubernetes_apiserver::unstored::resources()
                .into_iter()
                .map(|i| i.resource),
        )
        .collect()
}

fn builtin_kinds() -> BTreeSet<String> {
    ubernetes_registry::kinds::builtin()
        .iter()
        .map(|k| k.info().kind.clone())
        .collect()
}

#[test]
fn generic_files_name_no_built_in_resource() {
    let resources = builtin_resources();
    assert!(resources.contains("secrets") && resources.contains("events"));
    assert!(resources.contains("bindings") && resources.contains("tokenreviews"));
    let found = violations(&resources, &builtin_kinds());
    assert!(
        found.is_empty(),
        "generic code names built-in resources (declare it on the kind instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn every_allowed_name_is_still_there() {
    // An allow-list entry whose name is gone must go too.
    let resources = builtin_resources();
    for (file, resource, _) in ALLOWED {
        let text = std::fs::read_to_string(crates_dir().join(file)).unwrap_or_default();
        let present = string_literals(&code(&text))
            .iter()
            .any(|l| named(l, &resources).contains(resource));
        assert!(
            present,
            "{file} no longer names {resource}: drop it from ALLOWED"
        );
    }
    let subresources = builtin_subresources();
    for (file, sub, _) in ALLOWED_SUBRESOURCES {
        let text = std::fs::read_to_string(crates_dir().join(file)).unwrap_or_default();
        assert!(
            subresources_named(&code(&text), &subresources).contains(sub),
            "{file} no longer names the subresource {sub}: drop it from ALLOWED_SUBRESOURCES"
        );
    }
}

#[test]
fn the_scan_finds_a_named_resource() {
    let resources = builtin_resources();
    let code = code("fn f() { g(\"pods/binding\", '\"'); }\n// \"secrets\" in a comment\n");
    let literals = string_literals(&code);
    assert_eq!(literals, ["pods/binding"]);
    assert_eq!(named(&literals[0], &resources), ["pods"]);
    assert!(named("podsx", &resources).is_empty());
    let kinds = builtin_kinds();
    assert_eq!(
        kinds_named("=v1 ConfigMap core.v1.ConfigMap", &kinds),
        ["ConfigMap", "ConfigMap"]
    );
    assert!(kinds_named("meta.v1.DeleteOptions", &kinds).is_empty());
}

#[test]
fn the_scan_finds_a_named_subresource() {
    let subs = builtin_subresources();
    assert!(
        [
            "status", "scale", "approval", "binding", "token", "finalize"
        ]
        .iter()
        .all(|s| subs.contains(*s))
    );
    let named = |text: &str| subresources_named(&code(text), &subs);
    assert_eq!(
        named("store.patch(ns, name, Some(\"scale\"), o)"),
        ["scale"]
    );
    assert_eq!(
        named("matches!(sub, Some(\"approval\" | \"status\"))"),
        ["approval", "status"]
    );
    assert_eq!(named("if sub == \"status\" {}"), ["status"]);
    assert_eq!(named("match s { \"binding\" => 1 }"), ["binding"]);
    // A field called `status` is no subresource; a comment is no code.
    assert!(named("json!({\"status\": s}); v.get(\"status\")\n// Some(\"scale\")").is_empty());
}
