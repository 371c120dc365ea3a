//! A kube-runtime `Controller` over a `#[derive(CustomResource)]` kind,
//! running against the real server: the CRD comes from `CustomResourceExt`,
//! the controller reconciles each object by server-side applying its
//! status (`Patch::Apply` on the status subresource), and objects created
//! with `Patch::Apply` are seen and reconciled.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::task::block_in_place;
use ubernetes_e2e::Server;

/// A tiny custom kind: a greeting the controller answers.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.ubernetes.io",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus"
)]
pub struct GreetingSpec {
    pub name: String,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct GreetingStatus {
    pub reply: String,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ReconcileError(#[from] kube::Error);

async fn reconcile(g: Arc<Greeting>, api: Arc<Api<Greeting>>) -> Result<Action, ReconcileError> {
    let reply = format!("hello, {}", g.spec.name);
    if g.status.as_ref().map(|s| s.reply.as_str()) != Some(reply.as_str()) {
        let status = json!({
            "apiVersion": "example.ubernetes.io/v1",
            "kind": "Greeting",
            "status": {"reply": reply},
        });
        api.patch_status(
            &g.name_any(),
            &PatchParams::apply("greeter").force(),
            &Patch::Apply(&status),
        )
        .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Greeting>, _: &ReconcileError, _: Arc<Api<Greeting>>) -> Action {
    Action::requeue(Duration::from_millis(500))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_runtime_controller_reconciles_a_derived_custom_resource() -> Result<()> {
    let server = block_in_place(Server::start)?;
    let client = server.client().await?;

    // The CRD straight from the derive, applied server-side.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "greetings.example.ubernetes.io",
        &PatchParams::apply("e2e"),
        &Patch::Apply(Greeting::crd()),
    )
    .await
    .context("applying the CRD")?;
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(
            crds,
            "greetings.example.ubernetes.io",
            conditions::is_crd_established(),
        ),
    )
    .await??;

    let api: Api<Greeting> = Api::namespaced(client.clone(), "default");
    let ctx = Arc::new(api.clone());
    let controller = tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {}),
    );

    // Objects created with server-side apply get their status.
    for who in ["world", "ubernetes"] {
        let obj = json!({
            "apiVersion": "example.ubernetes.io/v1",
            "kind": "Greeting",
            "metadata": {"name": who},
            "spec": {"name": who},
        });
        api.patch(who, &PatchParams::apply("e2e"), &Patch::Apply(&obj))
            .await
            .context("applying a Greeting")?;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let world = api.get("world").await?;
        let other = api.get("ubernetes").await?;
        let replies = (world.status.map(|s| s.reply), other.status.map(|s| s.reply));
        if replies
            == (
                Some("hello, world".to_string()),
                Some("hello, ubernetes".to_string()),
            )
        {
            // The status belongs to the controller's field manager.
            let managers: Vec<String> = world
                .metadata
                .managed_fields
                .unwrap_or_default()
                .into_iter()
                .filter_map(|m| m.manager)
                .collect();
            if !managers.iter().any(|m| m == "greeter") {
                bail!("no greeter entry in managedFields: {managers:?}");
            }
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("not reconciled in time: {replies:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A spec change is reconciled again.
    api.patch(
        "world",
        &PatchParams::apply("e2e"),
        &Patch::Apply(&json!({
            "apiVersion": "example.ubernetes.io/v1",
            "kind": "Greeting",
            "metadata": {"name": "world"},
            "spec": {"name": "planet"},
        })),
    )
    .await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let world = api.get("world").await?;
        if world.status.map(|s| s.reply).as_deref() == Some("hello, planet") {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the spec change was not reconciled");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    controller.abort();
    Ok(())
}
