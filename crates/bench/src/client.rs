//! The HTTP side of the bench: a `kube::Client` built from a kubeconfig, and
//! raw requests that keep client-side work small (bodies are serialised
//! once, responses are read as bytes and parsed only where a figure needs
//! them), because the client shares the machine's cores with the server.

use std::path::Path;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use kube::Client;
use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A client for `context` (or the current context) of the kubeconfig at `path`.
pub async fn from_kubeconfig(path: &Path, context: Option<&str>) -> Result<Client> {
    let kc = Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(
        kc,
        &KubeConfigOptions {
            context: context.map(str::to_owned),
            ..Default::default()
        },
    )
    .await
    .context("building a client configuration from the kubeconfig")?;
    Client::try_from(config).context("building the client")
}

/// A response: its status and its whole body.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body bytes.
    pub body: Bytes,
}

impl Reply {
    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.body).context("response body is not JSON")
    }

    /// The body as text, for error messages (cut to 300 bytes).
    pub fn text(&self) -> String {
        let s = String::from_utf8_lossy(&self.body);
        s.chars().take(300).collect()
    }

    /// Fail unless the status is `want`.
    pub fn expect(self, want: StatusCode, what: &str) -> Result<Self> {
        if self.status != want {
            bail!(
                "{what}: HTTP {} (wanted {want}): {}",
                self.status,
                self.text()
            );
        }
        Ok(self)
    }
}

/// Send one request and read the whole response.
pub async fn call(
    client: &Client,
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Result<Reply> {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(ct) = content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    req = req.header(http::header::ACCEPT, "application/json");
    let req = req.body(Body::from(body)).context("building a request")?;
    let res = client.send(req).await?;
    let status = res.status();
    let body = res.into_body().collect_bytes().await?;
    Ok(Reply { status, body })
}

/// `GET uri`.
pub async fn get(client: &Client, uri: &str) -> Result<Reply> {
    call(client, Method::GET, uri, None, Vec::new()).await
}

/// `POST uri` with a JSON body.
pub async fn post_json(client: &Client, uri: &str, body: Vec<u8>) -> Result<Reply> {
    call(client, Method::POST, uri, Some("application/json"), body).await
}

/// `PUT uri` with a JSON body.
pub async fn put_json(client: &Client, uri: &str, body: Vec<u8>) -> Result<Reply> {
    call(client, Method::PUT, uri, Some("application/json"), body).await
}

/// `PATCH uri` with a JSON merge patch.
pub async fn merge_patch(client: &Client, uri: &str, body: Vec<u8>) -> Result<Reply> {
    call(
        client,
        Method::PATCH,
        uri,
        Some("application/merge-patch+json"),
        body,
    )
    .await
}

/// `PATCH uri` as a server-side apply (`application/apply-patch+yaml`)
/// with a JSON body, as kube-rs and kubectl send it; `uri` carries the
/// `fieldManager` (and `force`) query.
pub async fn apply_patch(client: &Client, uri: &str, body: Vec<u8>) -> Result<Reply> {
    call(
        client,
        Method::PATCH,
        uri,
        Some("application/apply-patch+yaml"),
        body,
    )
    .await
}

/// `DELETE uri`.
pub async fn delete(client: &Client, uri: &str) -> Result<Reply> {
    call(client, Method::DELETE, uri, None, Vec::new()).await
}

/// Whether the server answers `/readyz` with `ok`.
pub async fn is_ready(client: &Client) -> bool {
    matches!(get(client, "/readyz").await, Ok(r) if r.status == StatusCode::OK && r.body.as_ref() == b"ok")
}

/// Every item of a list, read in pages of `limit` (following `continue`),
/// with `selector` as the label selector if given. Returns the items and
/// how many requests it took.
pub async fn list_paged(
    client: &Client,
    collection: &str,
    selector: Option<&str>,
    limit: usize,
) -> Result<(Vec<serde_json::Value>, usize)> {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut uri = format!("{collection}?limit={limit}");
        if let Some(sel) = selector {
            uri.push_str(&format!("&labelSelector={}", query_escape(sel)));
        }
        if let Some(t) = &token {
            uri.push_str(&format!("&continue={}", query_escape(t)));
        }
        let mut page = get(client, &uri)
            .await?
            .expect(StatusCode::OK, "list")?
            .json()?;
        pages += 1;
        if let Some(serde_json::Value::Array(list)) =
            page.get_mut("items").map(serde_json::Value::take)
        {
            items.extend(list);
        }
        token = page
            .pointer("/metadata/continue")
            .and_then(serde_json::Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        if token.is_none() {
            return Ok((items, pages));
        }
    }
}

/// The path of the ConfigMap collection of `namespace`.
pub fn configmaps(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps")
}

/// Percent-encode a query value (label selectors hold `=`, `,`, `!`).
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(query_escape("bench-group=g1"), "bench-group%3Dg1");
        assert_eq!(query_escape("a!=b,c"), "a%21%3Db%2Cc");
        assert_eq!(query_escape("plain-1.x_y~"), "plain-1.x_y~");
    }

    #[test]
    fn a_reply_with_another_status_is_an_error_that_shows_the_body() {
        let r = Reply {
            status: StatusCode::CONFLICT,
            body: Bytes::from_static(br#"{"kind":"Status","reason":"AlreadyExists"}"#),
        };
        let err = r.expect(StatusCode::CREATED, "create x").err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("409"), "{msg}");
        assert!(msg.contains("AlreadyExists"), "{msg}");
    }
}
