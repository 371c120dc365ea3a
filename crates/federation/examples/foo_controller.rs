//! FooController: seed 000's "How To Write A Federated Controller", in
//! Rust, against this crate's public API. A user's own federated controller
//! for the custom resource `foos.example.com/v1` `Foo`, run as a process of
//! its own next to the federation (built-in sync for the kind switched off
//! with `ubernetes serve --federation-controllers-disabled-for=foos.example.com`).
//!
//! The seed's four parts:
//! - an informer on the federation's Foos (a kube-runtime `Controller`);
//! - a federated informer on the Foos in every member cluster, with cluster
//!   lifecycle callbacks ([`FederatedInformer`] over the member set that
//!   [`members::follow`] keeps from the federation's Clusters);
//! - a reconcile that compares each member's copy with the desired one and
//!   updates it ([`member_object::member_copy`], [`member_object::is_subset`],
//!   [`dispatch::apply`]); every copy is stamped
//!   `example.com/reconciled-by: foo-controller` so one can see who wrote it;
//! - cascading deletion through the [`DeletionHelper`]: each Foo gets its
//!   PropagationRecord before anything is written, and the helper deletes
//!   (or, with `--cascade=orphan`, lets go) the copies when the Foo goes.
//!
//! Run: `KUBECONFIG=<federation kubeconfig> cargo run -p ubernetes-federation
//! --example foo_controller`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use futures::channel::mpsc;
use kube::Resource as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_federation::deletion::{DeletionHelper, Tracked};
use ubernetes_federation::events::Recorder;
use ubernetes_federation::informer::{FederatedInformer, InformerEvent, ObjectKey};
use ubernetes_federation::kinds::{self, FederatedKind};
use ubernetes_federation::{FederationOptions, dispatch, member_object, members};

/// The annotation every copy this controller writes carries.
const RECONCILED_BY: &str = "example.com/reconciled-by";

struct FooController {
    kind: FederatedKind,
    informer: Arc<FederatedInformer>,
    deletion: Arc<DeletionHelper>,
    fed: kube::Client,
    timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("federation: {0}")]
    Federation(#[from] kube::Error),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cluster {0}: {1}")]
    Member(String, String),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let fed = kube::Client::try_default().await?;
    let stop = CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        on_signal.cancel();
    });

    let kind = FederatedKind::new("example.com", "v1", "Foo", "foos", true).custom();
    let options = FederationOptions::default();
    // The member clusters, from the federation's Clusters and their Secrets.
    let members = members::follow(fed.clone(), options.clone(), stop.clone());
    // Federated informer: Foos in every member, with cluster lifecycle events.
    let informer = FederatedInformer::start(kind.clone(), members, stop.clone());
    // Deletion helper: PropagationRecords and cascading deletion.
    let deletion = DeletionHelper::new(
        fed.clone(),
        informer.clone(),
        Recorder::new(fed.clone()),
        options.member_request_timeout,
    );
    tokio::spawn(deletion.clone().run(stop.clone()));

    // A change of a copy re-queues its Foo; a cluster becoming available
    // re-queues every Foo (the seed's `ClusterAvailable` callback).
    let (refs_tx, refs_rx) = mpsc::unbounded();
    let (all_tx, all_rx) = mpsc::unbounded();
    let mut events = informer.subscribe();
    let ar = kind.resource.clone();
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            match e {
                InformerEvent::Changed { key, .. } => {
                    let mut r = ObjectRef::<DynamicObject>::new_with(&key.name, ar.clone());
                    if let Some(ns) = key.namespace {
                        r = r.within(&ns);
                    }
                    let _ = refs_tx.unbounded_send(r);
                }
                InformerEvent::ClusterReady(_) | InformerEvent::ClusterSynced(_) => {
                    let _ = all_tx.unbounded_send(());
                }
                _ => {}
            }
        }
    });

    let ctx = Arc::new(FooController {
        kind: kind.clone(),
        informer,
        deletion,
        fed: fed.clone(),
        timeout: options.member_request_timeout,
    });
    println!("foo-controller: reconciling {}", kind.id());
    let api: Api<DynamicObject> = Api::all_with(fed, &kind.resource);
    let closing = stop.clone();
    Controller::new_with(api, watcher::Config::default(), kind.resource.clone())
        .reconcile_on(refs_rx)
        .reconcile_all_on(all_rx)
        .graceful_shutdown_on(async move { closing.cancelled().await })
        .run(reconcile, error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                eprintln!("foo-controller: {e}");
            }
        })
        .await;
    Ok(())
}

fn error_policy(_obj: Arc<DynamicObject>, err: &Error, _ctx: Arc<FooController>) -> Action {
    eprintln!("foo-controller: reconcile failed: {err}");
    Action::requeue(Duration::from_secs(2))
}

/// Compare and update: every Ready member gets the Foo as the federation
/// has it (plus our stamp).
async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<FooController>) -> Result<Action, Error> {
    // Cascading deletion is the deletion helper's (through the record).
    if obj.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    match ctx.deletion.track(obj.meta()).await? {
        Tracked::Record(_) => {}
        Tracked::Wait => return Ok(Action::requeue(Duration::from_secs(1))),
    }
    let fed = kinds::to_value(&obj, &ctx.kind)?;
    let key = ObjectKey::of(&obj);
    let ns = key.namespace.as_deref();
    for member in ctx.informer.members().snapshot() {
        if !member.ready || ctx.informer.is_synced(&member.name) != Some(true) {
            continue;
        }
        let mut desired = member_object::member_copy(ctx.kind.policy(), &fed, &member.name)
            .map_err(|e| Error::Member(member.name.clone(), e))?;
        desired["metadata"]["annotations"][RECONCILED_BY] = json!("foo-controller");
        let actual = ctx
            .informer
            .get(&member.name, &key)
            .map(|a| serde_json::to_value(&*a))
            .transpose()?;
        if actual
            .as_ref()
            .is_some_and(|a| member_object::is_subset(&desired, a))
        {
            continue;
        }
        let mut result =
            dispatch::apply(&member, &ctx.kind, &desired, &key.name, ns, ctx.timeout).await;
        if let Err(e) = &result
            && e.not_found()
            && let Some(ns) = ns
            && dispatch::ensure_namespace(&ctx.fed, &member, ns, ctx.timeout).await
        {
            result = dispatch::apply(
                &member,
                &ctx.kind,
                &desired,
                &key.name,
                Some(ns),
                ctx.timeout,
            )
            .await;
        }
        match result {
            Ok(applied) => println!(
                "foo-controller: {} {key} in cluster {} (resourceVersion {})",
                if actual.is_some() {
                    "updated"
                } else {
                    "created"
                },
                member.name,
                applied
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
            Err(e) => return Err(Error::Member(member.name.clone(), e.message)),
        }
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}
