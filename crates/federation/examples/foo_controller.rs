//! FooController: seed 000's "How To Write A Federated Controller", in
//! Rust, against this crate's public API. A user's own federated controller
//! for the custom resource `foos.example.com/v1` `Foo`, run as a process of
//! its own next to the federation (built-in sync for the kind switched off
//! with `ubernetes serve --federation-controllers-disabled-for=foos.example.com`).
//!
//! The seed's four parts, each a piece of this crate's library:
//! - an informer on the federation's Foos: the kind's shared reflector
//!   ([`Context::objects`], a kube-runtime `Controller` over its cache);
//! - a federated informer on the Foos in every member cluster
//!   ([`Context::informers`], over the member set that [`Context::follow`]
//!   keeps from the federation's Clusters), whose copy changes and cluster
//!   lifecycle re-queue the Foos ([`Federated::federated`]);
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
use kube::Resource as _;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_federation::deletion::{DeletionHelper, Tracked};
use ubernetes_federation::informer::{Federated as _, FederatedInformer, ObjectKey};
use ubernetes_federation::kinds::{self, FederatedKind};
use ubernetes_federation::objects::SharedObjects;
use ubernetes_federation::{Context, FederationOptions, dispatch, member_object};

/// The annotation every copy this controller writes carries.
const RECONCILED_BY: &str = "example.com/reconciled-by";

struct FooController {
    ctx: Context,
    kind: FederatedKind,
    objects: Arc<SharedObjects>,
    informer: Arc<FederatedInformer>,
    deletion: Arc<DeletionHelper>,
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
    let stop = CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        on_signal.cancel();
    });

    let kind = FederatedKind::new("example.com", "v1", "Foo", "foos", true).custom();
    // The member set (from the federation's Clusters), the informers.
    let ctx = Context::follow(
        kube::Client::try_default().await?,
        FederationOptions::default(),
        &stop,
    );
    let objects = ctx.objects.for_kind(&kind);
    let informer = ctx.informers.for_kind(&kind);
    // Deletion helper: PropagationRecords and cascading deletion.
    let deletion = DeletionHelper::new(
        ctx.fed.clone(),
        informer.clone(),
        ctx.recorder.clone(),
        ctx.options.member_request_timeout,
    );
    tokio::spawn(deletion.clone().run(stop.clone()));

    println!("foo-controller: reconciling {}", kind.id());
    // A Foo changed, a copy of it changed, or a cluster came or went.
    let controller = objects.controller().federated(&informer);
    let this = Arc::new(FooController {
        ctx,
        kind,
        objects,
        informer,
        deletion,
    });
    let closing = stop.clone();
    controller
        .graceful_shutdown_on(async move { closing.cancelled().await })
        .run(reconcile, error_policy, this)
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
    // The shared cache keeps metadata only: the content, as it is now.
    let Some(obj) = ctx.objects.fetch(&obj).await? else {
        return Ok(Action::await_change());
    };
    let fed = kinds::to_value(&obj, &ctx.kind)?;
    let key = ObjectKey::of(&obj);
    let ns = key.namespace.as_deref();
    let timeout = ctx.ctx.options.member_request_timeout;
    for member in ctx.ctx.members.snapshot() {
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
        let fed_client = &ctx.ctx.fed;
        let result = dispatch::apply_with_namespace::<Value>(
            fed_client, &member, &ctx.kind, &desired, &key.name, ns, timeout,
        )
        .await;
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
