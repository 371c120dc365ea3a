//! Watch: a chunked stream of newline-delimited `{"type","object"}` events
//! (kube-apiserver's `endpoints/handlers/watch.go`).
//!
//! Start points, as kube-apiserver:
//! - `resourceVersion` unset or `0`: synthetic `ADDED` for every current
//!   object, then changes;
//! - `sendInitialEvents=true` (with `resourceVersionMatch=NotOlderThan` and
//!   `allowWatchBookmarks=true`): the same, then a `BOOKMARK` annotated
//!   `k8s.io/initial-events-end: "true"`;
//! - `resourceVersion=N`: changes after N; too old → an `ERROR` event with a
//!   410 `Expired` Status, then the stream ends.
//!
//! Each event's JSON is built from the cache's shared bytes (no
//! re-serialisation) unless a Table was asked for.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_registry::store::{ReadAt, event_type_name};

use super::negotiate::{self, Output, Query};
use super::resource::{Target, partial_metadata, selector_filter};
use super::{HandlerResult, State, bytes_response};

/// Bookmark interval when `allowWatchBookmarks=true` (kube-apiserver sends
/// them about once a minute; more often costs little and helps resumes).
const BOOKMARK_EVERY: Duration = Duration::from_secs(10);

/// Default watch length when the client sets no `timeoutSeconds`
/// (kube-apiserver: `--min-request-timeout` 1800 s, randomised up to 2x).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Encoder {
    info: ResourceInfo,
    output: Output,
    first: bool,
}

impl Encoder {
    fn event(&mut self, kind: &str, object_json: &Bytes) -> Result<Bytes, ApiError> {
        match self.output {
            Output::Json => {
                let mut buf = Vec::with_capacity(object_json.len() + kind.len() + 24);
                buf.extend_from_slice(b"{\"type\":\"");
                buf.extend_from_slice(kind.as_bytes());
                buf.extend_from_slice(b"\",\"object\":");
                buf.extend_from_slice(object_json);
                buf.extend_from_slice(b"}\n");
                Ok(Bytes::from(buf))
            }
            _ => {
                let obj: Value = serde_json::from_slice(object_json)
                    .map_err(|e| ApiError::internal(e.to_string()))?;
                self.event_value(kind, &obj)
            }
        }
    }

    fn event_value(&mut self, kind: &str, obj: &Value) -> Result<Bytes, ApiError> {
        if self.output == Output::Protobuf {
            // Length-delimited WatchEvent frames (Status objects included).
            return crate::protobuf::encode_watch_event(kind, obj).map(Bytes::from);
        }
        let is_meta = matches!(kind, "BOOKMARK" | "ERROR");
        let rendered = match self.output {
            Output::Table if !is_meta => {
                let mut t = crate::table::table(&self.info, std::slice::from_ref(obj), None, true);
                // kube-apiserver sends the column definitions with the first
                // event only.
                if !self.first {
                    ubernetes_registry::printers::strip_headers(&mut t);
                }
                self.first = false;
                t
            }
            Output::PartialMetadata if !is_meta => partial_metadata(obj),
            _ => obj.clone(),
        };
        let mut line = serde_json::to_vec(&json!({"type": kind, "object": rendered}))
            .map_err(|e| ApiError::internal(e.to_string()))?;
        line.push(b'\n');
        Ok(Bytes::from(line))
    }

    fn bookmark(&mut self, rev: u64, initial_end: bool) -> Result<Bytes, ApiError> {
        let mut meta = json!({"resourceVersion": rev.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": meta});
        self.event_value("BOOKMARK", &obj)
    }

    fn error(&mut self, e: &ApiError) -> Result<Bytes, ApiError> {
        self.event_value("ERROR", &e.status())
    }
}

/// Serve a watch.
pub async fn watch(
    state: &State,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
) -> HandlerResult {
    let _ = state;
    let output = negotiate::for_kind(
        negotiate::output(headers)?,
        &target.store.info().api_version(),
        &target.store.info().kind,
    )?;
    if output == Output::Yaml {
        return Err(ApiError::not_acceptable("watch is served as JSON only").into());
    }
    let filter = selector_filter(&target.store, query)?;
    let bookmarks = query.flag("allowWatchBookmarks");
    let send_initial = query.get("sendInitialEvents").map(|v| v == "true");
    let rv = query.get("resourceVersion").unwrap_or("").to_string();
    let rv_match = query.get("resourceVersionMatch").unwrap_or("");
    if send_initial.is_some() && rv_match != "NotOlderThan" {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![ubernetes_apimachinery::error::field::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
            )],
        )
        .into());
    }
    if send_initial == Some(true) && !bookmarks {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![ubernetes_apimachinery::error::field::forbidden(
                "allowWatchBookmarks",
                "allowWatchBookmarks must be set to true when sendInitialEvents is true",
            )],
        )
        .into());
    }
    let timeout = match query.get("timeoutSeconds") {
        Some(t) => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t:?}")))?,
        ),
        None => DEFAULT_TIMEOUT,
    };
    let store = target.store.clone();
    let ns = target.namespace.clone();
    // Initial state and start revision.
    let initial_events =
        send_initial == Some(true) || (send_initial.is_none() && (rv.is_empty() || rv == "0"));
    let (initial, start) = if initial_events {
        let read_at = if rv.is_empty() || send_initial == Some(true) && rv.is_empty() {
            ReadAt::Latest
        } else if rv == "0" {
            ReadAt::Any
        } else {
            match rv.parse::<u64>() {
                Ok(n) => ReadAt::NotOlderThan(n),
                Err(_) => {
                    return Err(
                        ApiError::bad_request(format!("invalid resource version: {rv:?}")).into(),
                    );
                }
            }
        };
        let list = store
            .list(ns.as_deref(), filter.as_ref(), 0, None, read_at)
            .await?;
        (list.items, list.resource_version)
    } else if send_initial == Some(false) {
        let from = if rv.is_empty() || rv == "0" {
            store.sync_revision().await?
        } else {
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?
        };
        (Vec::new(), from)
    } else {
        let from = rv
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
        (Vec::new(), from)
    };
    let mut enc = Encoder {
        info: store.info().clone(),
        output,
        first: true,
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let watch_rx = store.watch(ns.as_deref(), start, filter).await;
    tokio::spawn(async move {
        let send = |b: Result<Bytes, ApiError>| {
            let tx = tx.clone();
            async move {
                match b {
                    Ok(bytes) => tx.send(Ok(bytes)).await.is_ok(),
                    Err(e) => {
                        tracing::warn!(error = %e, "encoding a watch event failed");
                        false
                    }
                }
            }
        };
        let mut rx = match watch_rx {
            Ok(rx) => rx,
            Err(e) => {
                let _ = send(enc.error(&e)).await;
                return;
            }
        };
        for item in &initial {
            if !send(enc.event("ADDED", item)).await {
                return;
            }
        }
        let mut last_rev = start;
        if send_initial == Some(true) && !send(enc.bookmark(start, true)).await {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(BOOKMARK_EVERY);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = tx.closed() => return,
                _ = ticker.tick(), if bookmarks => {
                    if !send(enc.bookmark(last_rev, false)).await {
                        return;
                    }
                }
                ev = rx.recv() => {
                    match ev {
                        Some(Ok(ev)) => {
                            last_rev = last_rev.max(ev.object.mod_revision);
                            if !send(enc.event(event_type_name(ev.kind), &ev.object.json)).await {
                                return;
                            }
                        }
                        Some(Err(e)) => {
                            let e = match e {
                                ubernetes_storage::StorageError::Compacted { requested, compacted } => {
                                    ApiError::expired(format!("too old resource version: {requested} ({compacted})"))
                                }
                                ubernetes_storage::StorageError::WatcherTooSlow => ApiError::gone(
                                    "watch closed: the client fell too far behind; relist and watch again",
                                ),
                                other => ApiError::internal(other.to_string()),
                            };
                            let _ = send(enc.error(&e)).await;
                            return;
                        }
                        None => return,
                    }
                }
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let content_type = if output == Output::Protobuf {
        crate::protobuf::PROTOBUF_WATCH_CONTENT_TYPE
    } else {
        "application/json"
    };
    let mut resp = bytes_response(StatusCode::OK, content_type, Body::from_stream(stream), &[]);
    resp.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache, private"),
    );
    Ok(resp)
}
