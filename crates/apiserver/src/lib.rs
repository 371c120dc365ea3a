//! # ubernetes-apiserver
//!
//! The HTTP layer of the API server (kube-apiserver's `pkg/endpoints` and
//! `pkg/server`): TLS serving, authentication, discovery, OpenAPI, and one
//! generic handler per verb that turns requests into registry calls. Handlers
//! do HTTP only: every kind-specific rule lives in the registry's strategies.
//!
//! Modules:
//! - `options`: the server's flags (kube-apiserver's names where one exists).
//! - `serve`: the rustls listener, HTTP/1.1 + HTTP/2, graceful shutdown.
//! - `audit`: the audit log filters (`--audit-policy-file`, `--audit-log-path`).
//! - `authn`: x509 client certificates, bearer tokens, in-process identity.
//! - `health`: `/version`, `/healthz`, `/livez`, `/readyz`.
//! - `in_process`: the `kube::Client` over the router for embedded controllers.
//! - `metrics`: `/metrics` and kube-apiserver's request and storage metrics.
//! - `routes` (`api_router`) over `handlers`, over `state` and `response`:
//!   the API itself. Imports point down that chain only.
//! - `proxy`: the cluster proxy (`clusters/<name>/proxy/...` to a member).
//!
//! Start with `serve.rs` (how a request arrives), then `handlers/`.
#![forbid(unsafe_code)]

pub mod audit;
pub mod authn;
pub mod authz;
pub mod cluster_proxy;
pub mod core_extras;
pub mod csr_signing;
pub mod discovery;
pub mod field_manager;
pub mod handlers;
pub mod health;
pub mod hooks;
pub mod in_process;
pub mod issuer;
pub mod leader_election;
pub mod member_view;
pub mod metrics;
pub mod openapi_routes;
pub mod options;
pub mod protobuf;
pub mod proxy;
pub mod response;
pub mod reviews;
pub mod routes;
pub mod serve;
pub mod service_accounts;
pub mod state;
pub mod table;
pub mod tunnel;
pub mod unstored;
pub mod yaml;

pub use routes::api_router;
pub use state::{AppState, build_state};

/// The modules' imports point one way (routes → handlers → state →
/// response): a module that imports one which (through others) imports it
/// back fails here, naming the ring. Test code is left out (a test may
/// start a whole server).
#[cfg(test)]
mod module_graph {
    use std::collections::{BTreeMap, BTreeSet};

    fn module_of(path: &std::path::Path, src: &std::path::Path) -> String {
        let rel = path.strip_prefix(src).unwrap_or(path);
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        // A module's submodules count as the module (handlers/*).
        parts.first().cloned().unwrap_or_default()
    }

    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }

    #[test]
    fn no_module_imports_one_that_imports_it_back() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in &files {
            let from = module_of(file, &src);
            if from == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(file).unwrap_or_default();
            // Code only: no tests, no comments (doc links are not imports).
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or("")
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let deps = graph.entry(from.clone()).or_default();
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != from {
                    deps.insert(name);
                }
            }
        }
        // Depth-first search for a back edge.
        fn visit(
            m: &str,
            graph: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(at) = path.iter().position(|p| p == m) {
                let mut ring = path[at..].to_vec();
                ring.push(m.to_string());
                return Some(ring);
            }
            if done.contains(m) {
                return None;
            }
            path.push(m.to_string());
            for d in graph.get(m).into_iter().flatten() {
                if let Some(ring) = visit(d, graph, path, done) {
                    return Some(ring);
                }
            }
            path.pop();
            done.insert(m.to_string());
            None
        }
        let mut done = BTreeSet::new();
        for m in graph.keys() {
            if let Some(ring) = visit(m, &graph, &mut Vec::new(), &mut done) {
                panic!("modules import each other in a ring: {}", ring.join(" -> "));
            }
        }
        assert!(graph.contains_key("handlers") && graph.contains_key("state"));
    }
}
