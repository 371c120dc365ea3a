//! The cluster proxy (SPEC §3.10): `/apis/federation/v1beta1/clusters/<name>/proxy[/<path>]`
//! forwards to `<path>` on the member cluster `<name>`, with the
//! federation's own credentials for it, as kube-apiserver's `nodes/proxy`
//! and `services/proxy` subresources forward to a node or a service.
//!
//! - **Authorization** is the request's, done by the filter chain
//!   ([`crate::authz`]) like any other: verb from the HTTP method (`get`,
//!   `create`, `update`, `patch`, `delete`), resource `clusters`,
//!   subresource `proxy`, the cluster's name; a refusal is kube's 403
//!   (`clusters.federation "east" is forbidden: User "x" cannot get resource
//!   "clusters/proxy" …`). `cluster-admin` may; anyone else needs a role
//!   granting `clusters/proxy`.
//! - **Which member, which credentials**: the Cluster must exist (else 404
//!   `clusters.federation "x" not found`); the request then goes out with
//!   the client the federation controllers built for that member (the
//!   kubeconfig of the Cluster's Secret, the server picked from
//!   `serverAddressByClientCIDRs`; [`MemberClients`] is filled by
//!   `ubernetes serve` from the federation's member set), without its
//!   retries so the member's answer comes back as it is.
//! - **As whom (issue 28)**: the federation's account in a member is
//!   cluster-admin in effect, so the proxy never acts as itself: it
//!   impersonates the caller, as Karmada's cluster proxy does. The member
//!   gets `Impersonate-User` (the caller's name, after the federation's
//!   own authentication and impersonation), `Impersonate-Group` for each of
//!   the caller's groups except `system:authenticated` and
//!   `system:unauthenticated` (the member adds them itself; Karmada's
//!   `SkipGroup`), `Impersonate-Extra-<key>` for each extra value (the key
//!   percent-encoded as client-go does, upper case too, so its case
//!   survives) and `Impersonate-Uid` when the caller has one. So the
//!   member's own RBAC decides what the caller may do there, and its audit
//!   log names the caller (with the federation's account as the
//!   impersonator). Any `Impersonate-*` header of the incoming request is
//!   dropped first (the federation's authentication consumed them).
//!   `clusters/proxy` stays the federation-side gate: both must allow.
//!   Groups pass unchanged, `system:masters` included: a caller in
//!   `system:masters` in the federation is in it in the member too (the
//!   federation's admin reaches every member as admin; who holds that group
//!   is the federation operator's decision). **Member-side setup**: the
//!   federation's account must be allowed to `impersonate` `users`,
//!   `groups` and `serviceaccounts` and, in `authentication.k8s.io`, `uids`
//!   and `userextras/*`; the ClusterRole `ubernetes join` binds (every verb
//!   on every resource) allows it, and so does a member admin kubeconfig.
//! - **What passes**: method, path, query string, body and headers go out;
//!   status, headers and body come back, the body streamed as it arrives
//!   (a `?watch=true` through the proxy delivers each event at once). The
//!   member's errors are its own answers, passed on unchanged. The caller's
//!   `Authorization` and `Host`, and hop-by-hop headers (`Connection`,
//!   those it names, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, …) are
//!   not forwarded in either direction (but for an upgrade's own pair,
//!   below).
//! - **Upgrades** (`exec`, `attach`, `port-forward`, `cp`: WebSocket with
//!   kubectl's `v5.channel.k8s.io`/`v4.channel.k8s.io`… subprotocols, or
//!   `SPDY/3.1`): after the same authorization and with the same
//!   impersonation, the request goes to the member with `Connection:
//!   Upgrade` and its `Upgrade` protocol, its handshake headers
//!   (`Sec-WebSocket-Key`, `Sec-WebSocket-Protocol`,
//!   `X-Stream-Protocol-Version`, …) unchanged. A member answering 101 gets
//!   its 101 and handshake headers passed back, then both upgraded
//!   connections are spliced byte for byte, both ways
//!   (`copy_bidirectional`) until either side closes; the proxy does not
//!   read the frames. Any other answer (kube-apiserver's error when it has
//!   no kubelet, a 403) is the member's, passed on unchanged. An `Upgrade`
//!   without `Connection: upgrade` (or the reverse) and HTTP/2 `CONNECT` are
//!   400. A pull member's client carries the same upgrade over its agent's
//!   tunnel as an HTTP/2 extended CONNECT and answers with the member's 101
//!   (`ubernetes_federation::pull::TunnelService`), so this path is the
//!   same for both modes.
//! - **What does not**: a Cluster whose member has no client (no usable
//!   credentials, not probed yet, federation controllers off) and a member
//!   that cannot be reached are 503 `ServiceUnavailable` naming the cluster
//!   and the error.
//!
//! A proxied request is long-running (kube's rule for the `proxy`
//! subresource): the 60 s request timeout does not apply.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use http::header::{self, HeaderMap, HeaderName};
use http::{Method, Uri};
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::user::{ALL_UNAUTHENTICATED, UserInfo};
use ubernetes_rbac::impersonation::{
    IMPERSONATE_EXTRA_PREFIX, IMPERSONATE_GROUP_HEADER, IMPERSONATE_UID_HEADER,
    IMPERSONATE_USER_HEADER, strip_impersonation_headers,
};

use crate::response::status_response;
use crate::state::AppState;

/// The federation group, version and resource the proxy hangs off.
const GROUP: &str = "federation";
const VERSION: &str = "v1beta1";
const RESOURCE: &str = "clusters";

use crate::cluster_proxy::split_path;
pub use crate::cluster_proxy::{ClusterProxy, MemberClients, is_proxy_path};

/// The proxy's routes (more specific than the generic resource route).
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/apis/federation/v1beta1/clusters/{name}/proxy", any(proxy))
        .route(
            "/apis/federation/v1beta1/clusters/{name}/proxy/",
            any(proxy),
        )
        .route(
            "/apis/federation/v1beta1/clusters/{name}/proxy/{*path}",
            any(proxy),
        )
}

async fn proxy(State(state): State<Arc<AppState>>, request: Request) -> Response {
    match forward(&state, request).await {
        Ok(response) => response,
        Err(e) => status_response(&e),
    }
}

/// Headers never forwarded, in either direction: hop-by-hop (RFC 9110
/// §7.6.1, as Go's `httputil.ReverseProxy`) and what the outgoing
/// connection sets itself. The pull agent (`ubernetes agent`) drops them too.
pub const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// `headers` without the hop-by-hop ones (and those `Connection` names)
/// and without `also`.
pub(crate) fn end_to_end(headers: &HeaderMap, also: &[HeaderName]) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || named.iter().any(|x| x == n) || also.contains(name) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// `system:authenticated` (`user.AllAuthenticated`).
const ALL_AUTHENTICATED: &str = "system:authenticated";

/// An extra key as a header name suffix: client-go's `headerKeyEscape`
/// (every byte that is not an HTTP token character, and `%`, as `%XX`),
/// upper-case letters escaped too since header names are sent lower case
/// and the member lower-cases the name before it unescapes the key.
fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let plain = b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$&'*+-.^_`|~".contains(&b);
        if plain {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The headers that make the member act as `user` (see the module
/// documentation); an error names what cannot be carried.
pub(crate) fn impersonation_headers(user: &UserInfo) -> Result<HeaderMap, String> {
    let value = |v: &str, what: &str| {
        http::HeaderValue::from_str(v).map_err(|_| {
            format!(
                "the {what} of user {:?} cannot be sent in a header",
                user.name
            )
        })
    };
    let mut out = HeaderMap::new();
    out.insert(IMPERSONATE_USER_HEADER, value(&user.name, "name")?);
    for group in &user.groups {
        if group != ALL_AUTHENTICATED && group != ALL_UNAUTHENTICATED {
            out.append(IMPERSONATE_GROUP_HEADER, value(group, "group")?);
        }
    }
    for (key, values) in &user.extra {
        let name = HeaderName::try_from(format!(
            "{IMPERSONATE_EXTRA_PREFIX}{}",
            escape_extra_key(key)
        ))
        .map_err(|_| {
            format!(
                "the extra key {key:?} of user {:?} cannot be sent",
                user.name
            )
        })?;
        for v in values {
            out.append(name.clone(), value(v, "extra")?);
        }
    }
    if !user.uid.is_empty() {
        out.insert(IMPERSONATE_UID_HEADER, value(&user.uid, "uid")?);
    }
    Ok(out)
}

/// An error and its causes, one after the other (`a: b: c`).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

async fn forward(state: &AppState, mut request: Request) -> Result<Response, ApiError> {
    let path = request.uri().path().to_string();
    let (name, member_path) = split_path(&path).ok_or_else(ApiError::no_route)?;
    let name = name.to_string();
    // 404 for a Cluster that does not exist, as any read of it.
    let clusters = state
        .registry
        .get(GROUP, VERSION, RESOURCE)
        .ok_or_else(ApiError::no_route)?;
    clusters.get(None, &name).await?;
    let upgrade = upgrade_protocol(&request)
        .map_err(|e| ApiError::bad_request(format!("the proxy of cluster {name:?} {e}")))?;
    let client = state.cluster_proxy.client(&name).ok_or_else(|| {
        ApiError::service_unavailable(format!(
            "error trying to reach cluster {name:?}: the federation has no client for it \
             (its credentials are not usable yet; see the Cluster's Ready condition)"
        ))
    })?;
    let target = match request.uri().query() {
        Some(q) => format!("{member_path}?{q}"),
        None => member_path.to_string(),
    };
    let uri: Uri = target
        .parse()
        .map_err(|e| ApiError::bad_request(format!("invalid proxy path {target:?}: {e}")))?;
    // The caller, as the federation authenticated (and impersonated) them.
    let user = request
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .ok_or_else(|| ApiError::internal("no user found for request"))?;
    if user.name.is_empty() {
        return Err(ApiError::internal("no user found for request"));
    }
    let impersonate = impersonation_headers(&user).map_err(|e| {
        ApiError::bad_request(format!(
            "the proxy of cluster {name:?} cannot act as the caller in the member: {e}"
        ))
    })?;
    // The caller's side of an upgrade, taken before the request is consumed.
    let client_upgrade = upgrade.as_ref().map(|_| hyper::upgrade::on(&mut request));
    let (parts, body) = request.into_parts();
    let limit = usize::try_from(state.options.max_request_body_bytes).unwrap_or(usize::MAX);
    let body = axum::body::to_bytes(body, limit)
        .await
        .map_err(|e| ApiError::bad_request(format!("error reading the request body: {e}")))?;
    let mut out = http::Request::new(kube::client::Body::from(body));
    *out.method_mut() = parts.method;
    *out.uri_mut() = uri;
    *out.headers_mut() = end_to_end(
        &parts.headers,
        &[
            header::AUTHORIZATION,
            header::HOST,
            header::CONTENT_LENGTH,
            header::EXPECT,
        ],
    );
    if let Some(protocol) = &upgrade {
        // The hop-by-hop pair that asks the member for the same upgrade;
        // everything else of the handshake (Sec-WebSocket-*, X-Stream-
        // Protocol-Version, …) is end to end and already copied.
        set_upgrade_headers(out.headers_mut(), protocol.clone());
    }
    // Never an impersonation the caller asked for: the member acts as the
    // caller the federation authenticated, and only as them.
    strip_impersonation_headers(out.headers_mut());
    for (header, value) in &impersonate {
        out.headers_mut().append(header.clone(), value.clone());
    }
    tracing::debug!(cluster = %name, user = %user.name, method = %out.method(), path = %target,
        upgrade = upgrade.is_some(), "proxying to member");
    let mut response = client.send(out).await.map_err(|e| {
        ApiError::service_unavailable(format!(
            "error trying to reach cluster {name:?}: {}",
            error_chain(&e)
        ))
    })?;
    if let Some(client_upgrade) = client_upgrade
        && response.status() == http::StatusCode::SWITCHING_PROTOCOLS
    {
        return Ok(splice(&name, &user.name, client_upgrade, &mut response));
    }
    // Anything else (a member refusing the upgrade included) is the
    // member's answer, passed on as it is and streamed.
    let (parts, body) = response.into_parts();
    let mut response = Response::new(Body::new(body));
    *response.status_mut() = parts.status;
    *response.headers_mut() = end_to_end(&parts.headers, &[]);
    Ok(response)
}

/// The protocol an upgrade request asks for (`websocket`, `SPDY/3.1`), or
/// `None` for a plain request; an error (ending a sentence about the
/// proxy) for what cannot be passed through: HTTP/2's extended CONNECT, an
/// `Upgrade` without `Connection: upgrade` or the other way round.
fn upgrade_protocol(request: &Request) -> Result<Option<http::HeaderValue>, String> {
    if request.method() == Method::CONNECT {
        return Err("does not pass CONNECT requests (use HTTP/1.1 upgrades)".to_string());
    }
    let protocol = request.headers().get(header::UPGRADE);
    let connection_upgrade = request
        .headers()
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    match (protocol, connection_upgrade) {
        (None, false) => Ok(None),
        (Some(p), true) if !p.is_empty() => Ok(Some(p.clone())),
        _ => Err(
            "cannot pass an upgrade request without both \"Connection: Upgrade\" and \
             \"Upgrade: <protocol>\""
                .to_string(),
        ),
    }
}

/// `Connection: Upgrade` and `Upgrade: protocol` in `headers`.
fn set_upgrade_headers(headers: &mut HeaderMap, protocol: http::HeaderValue) {
    headers.insert(
        header::CONNECTION,
        http::HeaderValue::from_static("Upgrade"),
    );
    headers.insert(header::UPGRADE, protocol);
}

/// The member switched protocols: answer the caller with the member's 101
/// (its handshake headers: `Sec-WebSocket-Accept`,
/// `Sec-WebSocket-Protocol`, `X-Stream-Protocol-Version`, …) and, once
/// both connections are upgraded, copy bytes both ways until either side
/// closes.
fn splice(
    cluster: &str,
    user: &str,
    client_upgrade: hyper::upgrade::OnUpgrade,
    member: &mut http::Response<kube::client::Body>,
) -> Response {
    let member_upgrade = hyper::upgrade::on(&mut *member);
    let mut response = Response::new(Body::empty());
    *response.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    *response.headers_mut() = end_to_end(member.headers(), &[]);
    if let Some(protocol) = member.headers().get(header::UPGRADE) {
        set_upgrade_headers(response.headers_mut(), protocol.clone());
    }
    let (cluster, user) = (cluster.to_string(), user.to_string());
    tokio::spawn(async move {
        let (caller, member) = match tokio::try_join!(client_upgrade, member_upgrade) {
            Ok(both) => both,
            Err(e) => {
                tracing::debug!(%cluster, %user, error = %e, "an upgraded proxy connection did not start");
                return;
            }
        };
        let mut caller = hyper_util::rt::TokioIo::new(caller);
        let mut member = hyper_util::rt::TokioIo::new(member);
        match tokio::io::copy_bidirectional(&mut caller, &mut member).await {
            Ok((up, down)) => {
                tracing::debug!(%cluster, %user, up, down, "upgraded proxy connection closed");
            }
            Err(e) => {
                tracing::debug!(%cluster, %user, error = %e, "upgraded proxy connection ended");
            }
        }
    });
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn proxy_paths_name_the_cluster_and_the_member_path() {
        let p = |s| split_path(s);
        assert_eq!(
            p("/apis/federation/v1beta1/clusters/east/proxy/api/v1/namespaces"),
            Some(("east", "/api/v1/namespaces"))
        );
        assert_eq!(
            p("/apis/federation/v1beta1/clusters/east/proxy"),
            Some(("east", "/"))
        );
        assert_eq!(
            p("/apis/federation/v1beta1/clusters/east/proxy/"),
            Some(("east", "/"))
        );
        assert_eq!(p("/apis/federation/v1beta1/clusters/east/proxyx"), None);
        assert_eq!(p("/apis/federation/v1beta1/clusters/east/status"), None);
        assert_eq!(p("/apis/federation/v1beta1/clusters/east"), None);
        assert_eq!(p("/apis/federation/v1beta1/clusters//proxy"), None);
    }

    #[test]
    fn hop_by_hop_headers_and_the_ones_connection_names_stay_behind() {
        let mut h = HeaderMap::new();
        h.insert("connection", "close, X-Private".parse().unwrap());
        h.insert("x-private", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("transfer-encoding", "chunked".parse().unwrap());
        h.insert("authorization", "Bearer caller".parse().unwrap());
        h.insert("accept", "application/json".parse().unwrap());
        h.append("warning", "299 - \"a\"".parse().unwrap());
        h.append("warning", "299 - \"b\"".parse().unwrap());
        let out = end_to_end(&h, &[header::AUTHORIZATION]);
        let mut names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["accept", "warning"]);
        assert_eq!(out.get_all("warning").iter().count(), 2);
    }

    #[test]
    fn the_caller_is_impersonated_with_groups_extra_and_uid() {
        let mut user = UserInfo::new("alice", &["devs", "system:authenticated", "system:masters"]);
        user.uid = "u-1".into();
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec!["X509SHA256=ab".into()],
        );
        user.extra
            .insert("Scopes".into(), vec!["a".into(), "b".into()]);
        let h = impersonation_headers(&user).unwrap();
        let all =
            |n: &str| -> Vec<&str> { h.get_all(n).iter().map(|v| v.to_str().unwrap()).collect() };
        assert_eq!(all("impersonate-user"), ["alice"]);
        // The member adds system:authenticated itself; system:masters is
        // the member's decision and passes.
        assert_eq!(all("impersonate-group"), ["devs", "system:masters"]);
        assert_eq!(all("impersonate-uid"), ["u-1"]);
        assert_eq!(
            all("impersonate-extra-authentication.kubernetes.io%2Fcredential-id"),
            ["X509SHA256=ab"]
        );
        // Upper case is escaped so that it survives the member's lower-casing.
        assert_eq!(all("impersonate-extra-%53copes"), ["a", "b"]);
        assert_eq!(h.len(), 7);

        let anonymous = UserInfo::anonymous();
        let h = impersonation_headers(&anonymous).unwrap();
        assert_eq!(h.get("impersonate-user").unwrap(), "system:anonymous");
        assert!(h.get("impersonate-group").is_none() && h.get("impersonate-uid").is_none());

        let bad = UserInfo::new("bad\nname", &[]);
        assert!(impersonation_headers(&bad).is_err());
    }

    #[test]
    fn extra_keys_are_escaped_as_client_go_does() {
        assert_eq!(escape_extra_key("scopes"), "scopes");
        assert_eq!(escape_extra_key("a/b c%"), "a%2Fb%20c%25");
        assert_eq!(escape_extra_key("Key"), "%4Bey");
    }

    #[test]
    fn upgrades_are_recognised() {
        let req = |h: &[(&str, &str)], m: Method| {
            let mut r = http::Request::builder().method(m).uri("/x");
            for (k, v) in h {
                r = r.header(*k, *v);
            }
            r.body(Body::empty()).unwrap()
        };
        assert_eq!(
            upgrade_protocol(&req(
                &[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")],
                Method::POST
            )),
            Ok(Some(http::HeaderValue::from_static("SPDY/3.1")))
        );
        assert_eq!(
            upgrade_protocol(&req(
                &[
                    ("connection", "keep-alive, upgrade"),
                    ("upgrade", "websocket")
                ],
                Method::GET
            )),
            Ok(Some(http::HeaderValue::from_static("websocket")))
        );
        assert!(upgrade_protocol(&req(&[("upgrade", "websocket")], Method::GET)).is_err());
        assert!(upgrade_protocol(&req(&[("connection", "upgrade")], Method::GET)).is_err());
        assert!(upgrade_protocol(&req(&[], Method::CONNECT)).is_err());
        assert_eq!(
            upgrade_protocol(&req(&[("connection", "keep-alive")], Method::GET)),
            Ok(None)
        );
    }
}
