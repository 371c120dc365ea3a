//! [`ClusterProxy`]: the member clients the cluster proxy forwards with,
//! held by the state (the routes in `proxy.rs` use it), and which paths
//! are proxy paths ([`is_proxy_path`], which the audit and metrics filters
//! ask).

use std::sync::Arc;

use parking_lot::RwLock;

/// Resolves a joined member's name to the client the federation reaches it
/// with; `None` when the federation has no client for it.
pub type MemberClients = Arc<dyn Fn(&str) -> Option<kube::Client> + Send + Sync>;

/// The member clients of the running federation, set once the federation
/// controllers start (empty while they are off).
#[derive(Default)]
pub struct ClusterProxy {
    clients: RwLock<Option<MemberClients>>,
}

impl std::fmt::Debug for ClusterProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterProxy")
            .field("clients", &self.clients.read().is_some())
            .finish()
    }
}

impl ClusterProxy {
    /// Forward with `clients` from now on.
    pub fn set_member_clients(&self, clients: MemberClients) {
        *self.clients.write() = Some(clients);
    }

    pub(crate) fn client(&self, name: &str) -> Option<kube::Client> {
        self.clients.read().as_ref().and_then(|f| f(name))
    }
}

/// The path prefix before the cluster's name.
const PREFIX: &str = "/apis/federation/v1beta1/clusters/";

/// Whether `path` is a cluster proxy path (a long-running request).
pub fn is_proxy_path(path: &str) -> bool {
    split_path(path).is_some()
}

/// Whether `path` is a pull member's tunnel path
/// (`/apis/federation/v1beta1/clusters/NAME/tunnel`, [`crate::tunnel`]): a
/// long-running request. Here, beside [`is_proxy_path`], so that the audit
/// filter asks it without importing the tunnel's handler (and its state).
pub fn is_tunnel_path(path: &str) -> bool {
    path.strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix("/tunnel"))
        .is_some_and(|name| !name.is_empty() && !name.contains('/'))
}

/// `(cluster name, path on the member)` of a proxy path, as sent (still
/// percent-encoded); the member path of `…/proxy` is `/`.
pub(crate) fn split_path(path: &str) -> Option<(&str, &str)> {
    let (name, rest) = path.strip_prefix(PREFIX)?.split_once('/')?;
    let rest = rest.strip_prefix("proxy")?;
    if name.is_empty() || !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    Some((name, if rest.is_empty() { "/" } else { rest }))
}

/// The cluster name that means every member (`clusters/-/proxy`,
/// `federation@all`, served by [`crate::member_view`]; no Cluster can be
/// named so).
pub const ALL: &str = "-";

/// Whether `path` is a `clusters/-/proxy` path.
pub fn is_all_members_path(path: &str) -> bool {
    matches!(split_path(path), Some((ALL, _)))
}

/// The authorization filter's refusal of a `clusters/-/proxy` request,
/// kept for when the caller may read no member at all.
#[derive(Clone, Debug)]
pub struct DeferredGate(pub ubernetes_apimachinery::ApiError);

/// Called by the authorization filter on a refused request: `true` when
/// it is a `clusters/-/proxy` request, whose gate is then the member
/// view's, per cluster (`clusters/proxy` on each member); the refusal is
/// kept in `extensions`.
pub fn defer_gate(
    path: &str,
    refusal: &ubernetes_apimachinery::ApiError,
    extensions: &mut http::Extensions,
) -> bool {
    if !is_all_members_path(path) {
        return false;
    }
    extensions.insert(DeferredGate(refusal.clone()));
    true
}
