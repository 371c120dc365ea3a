//! # ubernetes-federation
//!
//! The federation controllers that `ubernetes serve` embeds: they watch the
//! federation's own API through an in-process `kube::Client` and keep the
//! joined member clusters in step, each reached with its own `kube::Client`.
//!
//! Where to start reading:
//! - [`run`]: starts every controller and stops them with the token;
//! - [`clusters`] and [`members`]: the Cluster health controller and the
//!   shared, live set of member clients it maintains;
//! - [`propagation`]: one kube-runtime controller per federated kind that
//!   server-side-applies each object to every selected Ready member,
//!   repairs drift and cleans up on deletion;
//! - pure policy, no I/O: [`placement`] (cluster-selector annotation),
//!   [`overrides`] (per-cluster JSON patches), [`member_object`] (what is
//!   sent to a member and what is never propagated), [`record`] (the
//!   `federation.kubernetes.io/propagation` annotation, which also keeps the
//!   per-cluster record of what was applied, so restarts send no writes).
//!
//! What it is not: it never touches the store directly; everything goes
//! through the public Kubernetes API, as any user's controller would.
#![forbid(unsafe_code)]

pub mod clusters;
pub mod events;
pub mod kinds;
pub mod member_object;
pub mod members;
pub mod options;
pub mod overrides;
pub mod placement;
pub mod propagation;
pub mod record;

pub use options::FederationOptions;

use tokio_util::sync::CancellationToken;

/// Run every federation controller until `stop` is cancelled. `client` is
/// the in-process client to the federation's own API, authenticated as
/// `system:ubernetes:federation-controller`.
pub async fn run(
    client: kube::Client,
    options: FederationOptions,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let members = members::Members::new();
    let clusters = tokio::spawn(clusters::run(
        client.clone(),
        members.clone(),
        options.clone(),
        stop.clone(),
    ));
    let propagation = tokio::spawn(propagation::run(client, members, options, stop));
    let (c, p) = tokio::join!(clusters, propagation);
    c??;
    p??;
    Ok(())
}
