//! The in-process client: a `kube::Client` whose transport is the server's
//! own axum router (a tower service: no socket, no TLS hop), for the
//! controllers embedded in the binary (ARCHITECTURE decision 4).
//!
//! Every request it sends carries an [`InProcessIdentity`] extension with
//! the caller's identity, which authentication trusts (a remote request
//! cannot carry extensions). Give it the router of the full filter chain
//! ([`crate::serve::build_router`], as [`crate::serve::RunningServer::client`]
//! does) and authorization, admission and every other filter apply to the
//! controllers exactly as to any remote client.
//!
//! What it needs no more of: kube's request body (`kube::client::Body`)
//! goes straight into the router, which accepts any `http_body::Body` of
//! `Bytes`, and axum's response body is wrapped by `kube::Client::new`.
//! kube builds origin-form URIs (`/api/v1/...`), which the router routes on
//! as they are; no `Host` is needed since nothing in the chain reads it.
//! `kube::Client::new` spawns its request buffer on the current tokio
//! runtime, so call [`in_process_client`] from inside one.

use axum::Router;
use kube::client::Body;

use crate::authn::{InProcessIdentity, UserInfo};

/// A `kube::Client` over `app` acting as `user` (default namespace
/// `default`).
pub fn in_process_client(app: Router, user: UserInfo) -> kube::Client {
    let identity = InProcessIdentity(user);
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut request: http::Request<Body>| {
            request.extensions_mut().insert(identity.clone());
            request
        })
        .service(app);
    kube::Client::new(service, "default")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use futures::{StreamExt as _, TryStreamExt as _};
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::options::ServerOptions;
    use crate::serve::{self, RunningServer};

    async fn server(dir: &std::path::Path) -> (RunningServer, CancellationToken) {
        let stop = CancellationToken::new();
        let mut options = ServerOptions::for_test(dir);
        options.secure_port = 0;
        let server = serve::start(options, stop.clone().cancelled_owned())
            .await
            .expect("server starts");
        (server, stop)
    }

    #[tokio::test]
    async fn an_in_process_client_lists_namespaces_through_the_filter_chain() {
        let dir = tempfile::tempdir().unwrap();
        let (server, stop) = server(dir.path()).await;
        let admin = server.client(UserInfo::new("admin", &["system:masters"]));
        let names: Vec<String> = Api::<Namespace>::all(admin)
            .list(&ListParams::default())
            .await
            .expect("list namespaces")
            .items
            .into_iter()
            .filter_map(|ns| ns.metadata.name)
            .collect();
        assert!(names.iter().any(|n| n == "default"), "{names:?}");
        assert!(names.iter().any(|n| n == "kube-system"), "{names:?}");
        stop.cancel();
        server.wait().await.unwrap();
    }

    #[tokio::test]
    async fn an_in_process_client_is_authorized_as_its_user() {
        let dir = tempfile::tempdir().unwrap();
        let (server, stop) = server(dir.path()).await;
        let nobody = server.client(UserInfo::new("nobody", &[]));
        let err = Api::<Namespace>::all(nobody)
            .list(&ListParams::default())
            .await
            .expect_err("nobody may not list namespaces");
        match err {
            kube::Error::Api(status) => {
                assert_eq!(status.code, 403, "{status:?}");
                assert!(
                    status
                        .message
                        .contains("User \"nobody\" cannot list resource \"namespaces\""),
                    "{status:?}"
                );
            }
            other => panic!("expected a 403 Status, got {other:?}"),
        }
        stop.cancel();
        server.wait().await.unwrap();
    }

    #[tokio::test]
    async fn an_in_process_client_watches_and_sees_a_create() {
        let dir = tempfile::tempdir().unwrap();
        let (server, stop) = server(dir.path()).await;
        let admin = server.client(UserInfo::new("admin", &["system:masters"]));
        let cms: Api<ConfigMap> = Api::namespaced(admin, "default");
        let rv = cms
            .list(&ListParams::default())
            .await
            .expect("list")
            .metadata
            .resource_version
            .expect("list resourceVersion");
        let mut events = cms
            // Only the object this test creates: the server's own controllers
            // (kube-root-ca.crt) may write ConfigMaps in `default` meanwhile.
            .watch(&WatchParams::default().fields("metadata.name=seen"), &rv)
            .await
            .expect("watch")
            .boxed();
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("seen".into());
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("create");
        let first = tokio::time::timeout(std::time::Duration::from_secs(10), events.try_next())
            .await
            .expect("an event in time")
            .expect("a well-formed event")
            .expect("the stream is open");
        match first {
            WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("seen")),
            other => panic!("expected ADDED, got {other:?}"),
        }
        stop.cancel();
        drop(events);
        server.wait().await.unwrap();
    }
}
