//! The real `kube` crate (kube-client and kube-runtime 5) against the real
//! `ubernetes` binary: a `watcher` + `reflector` over ConfigMaps that converges
//! on creates, updates and deletes, survives a server restart (resuming, or
//! relisting after a 410), both initial-list strategies (`ListWatch` with
//! paging and `StreamingList` with `sendInitialEvents`), and typed CRUD for
//! Deployments, Services and Namespaces with every patch type the client has.
//!
//! Every test starts its own server (`ubernetes_e2e::Server`), so they can run
//! in parallel; harness calls that block (start, restart) run under
//! `block_in_place` so the watcher tasks keep being polled meanwhile.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::reflector::{self, Store};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, block_in_place};
use ubernetes_e2e::Server;

/// How long any one expectation may take before the test fails.
const WAIT: Duration = Duration::from_secs(30);

async fn start() -> Result<(Server, Client)> {
    let server = block_in_place(Server::start)?;
    let client = server.client().await?;
    Ok((server, client))
}

fn cm(name: &str, value: &str, labels: &[(&str, &str)]) -> Result<ConfigMap> {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"v": value},
    }))?)
}

async fn create_cm(api: &Api<ConfigMap>, name: &str, value: &str) -> Result<ConfigMap> {
    Ok(api
        .create(&PostParams::default(), &cm(name, value, &[])?)
        .await?)
}

/// What a test sees of a watcher stream (after the reflector applied it).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Init,
    InitApply(String),
    InitDone,
    Apply(String),
    Delete(String),
    /// A watcher error: the HTTP/Status code if there is one, and the text.
    Error(Option<u16>, String),
}

impl Seen {
    fn from_event(ev: Result<watcher::Event<ConfigMap>, watcher::Error>) -> Self {
        match ev {
            Ok(watcher::Event::Init) => Seen::Init,
            Ok(watcher::Event::InitApply(o)) => Seen::InitApply(o.name_any()),
            Ok(watcher::Event::InitDone) => Seen::InitDone,
            Ok(watcher::Event::Apply(o)) => Seen::Apply(o.name_any()),
            Ok(watcher::Event::Delete(o)) => Seen::Delete(o.name_any()),
            Err(e) => {
                let code = match &e {
                    watcher::Error::WatchError(status) => Some(status.code),
                    watcher::Error::InitialListFailed(kube::Error::Api(s))
                    | watcher::Error::WatchStartFailed(kube::Error::Api(s))
                    | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s.code),
                    _ => None,
                };
                Seen::Error(code, e.to_string())
            }
        }
    }
}

/// A `watcher` (with the default backoff) feeding a `reflector` store; every
/// event is forwarded to the test once the store has applied it.
struct Reflected {
    store: Store<ConfigMap>,
    events: mpsc::UnboundedReceiver<Seen>,
    /// Everything received so far, in order.
    seen: Vec<Seen>,
    task: JoinHandle<()>,
}

impl Reflected {
    fn start(api: Api<ConfigMap>, config: watcher::Config) -> Self {
        let (store, writer) = reflector::store();
        let (tx, events) = mpsc::unbounded_channel();
        let stream = reflector::reflector(writer, watcher(api, config).default_backoff());
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(ev) = stream.next().await {
                if tx.send(Seen::from_event(ev)).is_err() {
                    return;
                }
            }
        });
        Self {
            store,
            events,
            seen: Vec::new(),
            task,
        }
    }

    /// name → data["v"] of every object in the store but the namespace's
    /// `kube-root-ca.crt`, which the server publishes in every namespace.
    fn contents(&self) -> BTreeMap<String, String> {
        self.store
            .state()
            .iter()
            .filter(|o| o.name_any() != "kube-root-ca.crt")
            .map(|o| {
                let v = o
                    .data
                    .as_ref()
                    .and_then(|d| d.get("v"))
                    .cloned()
                    .unwrap_or_default();
                (o.name_any(), v)
            })
            .collect()
    }

    /// Await watcher events until the store holds exactly `want`.
    async fn converge(&mut self, what: &str, want: &[(&str, &str)]) -> Result<()> {
        let want: BTreeMap<String, String> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.contents() != want {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(ev)) => self.seen.push(ev),
                Ok(None) => bail!("watcher stream ended while waiting for {what}"),
                Err(_) => bail!(
                    "store did not converge to {want:?} ({what}) in {WAIT:?}: it holds {:?}; events: {:?}",
                    self.contents(),
                    self.seen
                ),
            }
        }
        // Take in whatever else is already queued.
        while let Ok(ev) = self.events.try_recv() {
            self.seen.push(ev);
        }
        Ok(())
    }

    /// Await the next `n` events (whatever they are).
    async fn next_events(&mut self, n: usize) -> Result<Vec<Seen>> {
        let mut out = Vec::new();
        while out.len() < n {
            match tokio::time::timeout(WAIT, self.events.recv()).await {
                Ok(Some(ev)) => {
                    self.seen.push(ev.clone());
                    out.push(ev);
                }
                Ok(None) => bail!("watcher stream ended after {out:?}"),
                Err(_) => bail!("only {out:?} arrived in {WAIT:?}"),
            }
        }
        Ok(out)
    }

    fn count(&self, f: impl Fn(&Seen) -> bool) -> usize {
        self.seen.iter().filter(|e| f(e)).count()
    }
}

impl Drop for Reflected {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The namespace's `default` ServiceAccount is created by the server's
/// controller shortly after the namespace; wait for it so no background
/// write lands in the middle of a test that counts revisions.
async fn await_default_service_account(client: &Client, ns: &str) -> Result<()> {
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    tokio::time::timeout(
        WAIT,
        await_condition(sas, "default", |o: Option<&ServiceAccount>| o.is_some()),
    )
    .await
    .context("no default ServiceAccount")??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_store_converges_on_creates_updates_and_deletes() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create_cm(&api, "before", "0").await?;

    let mut r = Reflected::start(api.clone(), watcher::Config::default());
    r.converge("the initial list", &[("before", "0")]).await?;

    create_cm(&api, "a", "1").await?;
    create_cm(&api, "b", "1").await?;
    r.converge("two creates", &[("a", "1"), ("b", "1"), ("before", "0")])
        .await?;

    let mut a = api.get("a").await?;
    a.data = Some([("v".to_string(), "2".to_string())].into());
    api.replace("a", &PostParams::default(), &a).await?;
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "3"}})),
    )
    .await?;
    r.converge(
        "an update and a patch",
        &[("a", "2"), ("b", "3"), ("before", "0")],
    )
    .await?;

    api.delete("before", &DeleteParams::default()).await?;
    api.delete("a", &DeleteParams::default()).await?;
    r.converge("two deletes", &[("b", "3")]).await?;

    ensure!(
        r.count(|e| *e == Seen::Init) == 1,
        "one initial list only: {:?}",
        r.seen
    );
    ensure!(
        r.count(|e| *e == Seen::Delete("a".into())) == 1
            && r.count(|e| *e == Seen::Delete("before".into())) == 1,
        "each delete arrives as one Delete event: {:?}",
        r.seen
    );
    Ok(())
}

/// The watcher's last resourceVersion is the store's current revision (no
/// write of any other kind after its last event), so after a graceful
/// restart its watch resumes from it: no second initial list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_resumes_after_a_graceful_restart_without_relisting() -> Result<()> {
    let (mut server, client) = start().await?;
    await_default_service_account(&client, "default").await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut r = Reflected::start(api.clone(), watcher::Config::default());
    r.converge("the empty initial list", &[]).await?;
    create_cm(&api, "before-restart", "1").await?;
    r.converge("a create", &[("before-restart", "1")]).await?;

    block_in_place(|| server.restart())?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    create_cm(&api, "after-restart", "2").await?;
    r.converge(
        "a create after the restart",
        &[("before-restart", "1"), ("after-restart", "2")],
    )
    .await?;

    ensure!(
        r.count(|e| *e == Seen::Init) == 1,
        "the watcher resumed rather than relisting: {:?}",
        r.seen
    );
    ensure!(
        r.count(|e| *e == Seen::Apply("after-restart".into())) == 1,
        "the change arrived as a watch event: {:?}",
        r.seen
    );
    Ok(())
}

/// Deterministic 410: the watcher (bookmarks off, so its resourceVersion only
/// moves with ConfigMap events) last saw revision R; a Secret write then
/// moves the store to R+1; a restart rebuilds the watch cache starting at
/// R+1, so resuming from R is "too old" (410 Expired, as kube-apiserver's
/// cacher after a restart) and the watcher must relist — a second `Init` —
/// and still converge, including on a change made after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_relists_after_a_410_when_its_resource_version_is_older_than_the_window()
-> Result<()> {
    let (mut server, client) = start().await?;
    await_default_service_account(&client, "default").await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut r = Reflected::start(api.clone(), watcher::Config::default().disable_bookmarks());
    r.converge("the empty initial list", &[]).await?;
    create_cm(&api, "seen", "1").await?;
    r.converge("a create", &[("seen", "1")]).await?;

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "bump"}, "stringData": {"k": "v"}
    }))?;
    secrets.create(&PostParams::default(), &secret).await?;

    block_in_place(|| server.restart())?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    create_cm(&api, "after-restart", "2").await?;
    r.converge(
        "a create after the restart",
        &[("seen", "1"), ("after-restart", "2")],
    )
    .await?;

    ensure!(
        r.count(|e| matches!(e, Seen::Error(Some(410), _))) >= 1,
        "the resumed watch was answered with 410: {:?}",
        r.seen
    );
    ensure!(
        r.count(|e| *e == Seen::Init) == 2,
        "the 410 was answered by exactly one relist: {:?}",
        r.seen
    );
    Ok(())
}

/// A restart starts the watch cache's window at the store's current
/// revision, so a raw watch from resourceVersion "1" afterwards is older
/// than the window: kube-apiserver answers with an ERROR event carrying a
/// 410 Expired Status ("too old resource version"). Before the restart the
/// same watch from the list's resourceVersion works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_watch_from_a_resource_version_older_than_the_window_gets_an_expired_error_event()
-> Result<()> {
    let (mut server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let list = api.list(&ListParams::default()).await?;
    let rv = list.metadata.resource_version.context("list has no rv")?;
    let mut stream = api.watch(&WatchParams::default(), &rv).await?.boxed();
    create_cm(&api, "w", "1").await?;
    match tokio::time::timeout(WAIT, stream.try_next()).await {
        Ok(Ok(Some(WatchEvent::Added(o)))) => ensure!(o.name_any() == "w", "added {o:?}"),
        other => bail!("expected ADDED w from a current rv, got {other:?}"),
    }
    drop(stream);

    block_in_place(|| server.restart())?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = api.watch(&WatchParams::default(), "1").await?.boxed();
    match tokio::time::timeout(WAIT, stream.try_next()).await {
        Ok(Ok(Some(WatchEvent::Error(status)))) => {
            ensure!(status.code == 410, "code: {status:?}");
            ensure!(status.reason == "Expired", "reason: {status:?}");
            ensure!(
                status.message.starts_with("too old resource version: 1 ("),
                "message: {status:?}"
            );
        }
        other => bail!("expected an ERROR event with 410, got {other:?}"),
    }
    Ok(())
}

/// With `--default-watch-cache-size=10`, twenty ConfigMap writes push a
/// revision out of the window: a raw watch from it gets the ERROR event
/// with 410 Expired, while one from inside the window replays what followed.
/// A watcher that only sees objects labelled `watched=yes` (bookmarks off)
/// keeps the resourceVersion of its last event; the server ends its watch
/// after `timeoutSeconds=1`; by then twenty other writes moved the window
/// past that resourceVersion, so the resumed watch is answered with 410 and
/// the watcher relists (a second `Init`) and still follows changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_window_overflow_answers_410_and_the_watcher_relists() -> Result<()> {
    let server = block_in_place(|| Server::start_with(&["--default-watch-cache-size=10"]))?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let first = api
        .create(
            &PostParams::default(),
            &cm("first", "1", &[("watched", "yes")])?,
        )
        .await?;
    let first_rv = first.resource_version().context("rv")?;
    let mut rvs = Vec::new();
    for i in 0..20 {
        let o = api
            .create(
                &PostParams::default(),
                &cm(&format!("filler-{i}"), "0", &[("watched", "no")])?,
            )
            .await?;
        rvs.push(o.resource_version().context("rv")?);
    }

    let mut stream = api.watch(&WatchParams::default(), &first_rv).await?.boxed();
    match tokio::time::timeout(WAIT, stream.try_next()).await {
        Ok(Ok(Some(WatchEvent::Error(status)))) => {
            ensure!(
                status.code == 410 && status.reason == "Expired",
                "{status:?}"
            );
        }
        other => bail!("expected an ERROR event with 410 from an aged-out rv, got {other:?}"),
    }
    drop(stream);
    let mut stream = api.watch(&WatchParams::default(), &rvs[14]).await?.boxed();
    for i in 15..20 {
        match tokio::time::timeout(WAIT, stream.try_next()).await {
            Ok(Ok(Some(WatchEvent::Added(o)))) => {
                ensure!(o.name_any() == format!("filler-{i}"), "replayed {o:?}")
            }
            other => bail!("expected ADDED filler-{i} replayed from the window, got {other:?}"),
        }
    }
    drop(stream);

    let mut r = Reflected::start(
        api.clone(),
        watcher::Config::default()
            .labels("watched=yes")
            .disable_bookmarks()
            .timeout(1),
    );
    r.converge("the initial list", &[("first", "1")]).await?;
    for i in 20..40 {
        api.create(
            &PostParams::default(),
            &cm(&format!("filler-{i}"), "0", &[("watched", "no")])?,
        )
        .await?;
    }
    // The watch ends after its 1 s timeout; the resume from `first`'s rv fails.
    let deadline = tokio::time::Instant::now() + WAIT;
    while r.count(|e| *e == Seen::Init) < 2 {
        match tokio::time::timeout_at(deadline, r.events.recv()).await {
            Ok(Some(ev)) => r.seen.push(ev),
            other => bail!("no relist: {other:?}; events: {:?}", r.seen),
        }
    }
    api.create(
        &PostParams::default(),
        &cm("second", "2", &[("watched", "yes")])?,
    )
    .await?;
    r.converge(
        "a create after the relist",
        &[("first", "1"), ("second", "2")],
    )
    .await?;
    ensure!(
        r.count(|e| matches!(e, Seen::Error(Some(410), _))) >= 1,
        "the resumed watch was answered with 410: {:?}",
        r.seen
    );
    Ok(())
}

/// `ListWatch` with a page size: the initial list is fetched in pages
/// (limit/continue), delivered as InitApply events between Init and InitDone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_list_watch_mode_pages_the_initial_list_then_follows_changes() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let names = ["p0", "p1", "p2", "p3", "p4"];
    for n in names {
        api.create(&PostParams::default(), &cm(n, "0", &[("mode", "list")])?)
            .await?;
    }
    api.create(&PostParams::default(), &cm("other", "0", &[("mode", "x")])?)
        .await?;
    let mut r = Reflected::start(
        api.clone(),
        watcher::Config::default().labels("mode=list").page_size(2),
    );
    let first = r.next_events(names.len() + 2).await?;
    let mut want = vec![Seen::Init];
    want.extend(names.iter().map(|n| Seen::InitApply(n.to_string())));
    want.push(Seen::InitDone);
    ensure!(first == want, "initial events: {first:?}");

    api.create(&PostParams::default(), &cm("p5", "1", &[("mode", "list")])?)
        .await?;
    api.create(
        &PostParams::default(),
        &cm("other2", "1", &[("mode", "x")])?,
    )
    .await?;
    let mut all: Vec<(&str, &str)> = names.iter().map(|n| (*n, "0")).collect();
    all.push(("p5", "1"));
    r.converge("a matching create", &all).await?;
    Ok(())
}

/// `StreamingList`: the initial state comes as a watch with
/// `sendInitialEvents=true` (ADDED per object, then a BOOKMARK annotated
/// `k8s.io/initial-events-end`), after which the same stream follows changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_streaming_list_mode_gets_initial_events_then_follows_changes() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for n in ["s0", "s1", "s2"] {
        api.create(&PostParams::default(), &cm(n, "0", &[("mode", "stream")])?)
            .await?;
    }
    api.create(&PostParams::default(), &cm("other", "0", &[])?)
        .await?;
    let mut r = Reflected::start(
        api.clone(),
        watcher::Config::default()
            .labels("mode=stream")
            .streaming_lists(),
    );
    let first = r.next_events(5).await?;
    ensure!(
        first.first() == Some(&Seen::Init),
        "starts with Init: {first:?}"
    );
    ensure!(
        first.last() == Some(&Seen::InitDone),
        "ends with InitDone: {first:?}"
    );
    let applied: BTreeSet<&str> = first[1..4]
        .iter()
        .filter_map(|e| match e {
            Seen::InitApply(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    ensure!(
        applied == BTreeSet::from(["s0", "s1", "s2"]),
        "initial objects: {first:?}"
    );

    api.create(
        &PostParams::default(),
        &cm("s3", "1", &[("mode", "stream")])?,
    )
    .await?;
    api.patch(
        "s0",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "9"}})),
    )
    .await?;
    api.delete("s1", &DeleteParams::default()).await?;
    r.converge(
        "changes after the initial events",
        &[("s0", "9"), ("s2", "0"), ("s3", "1")],
    )
    .await?;
    ensure!(
        r.count(|e| *e == Seen::Init) == 1,
        "no relist: {:?}",
        r.seen
    );
    Ok(())
}

fn deployment(name: &str) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [
                    {"name": "app", "image": "nginx:1.27"},
                    {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "infinity"]}
                ]}
            }
        }
    }))?)
}

fn container_images(d: &Deployment) -> Vec<(String, String)> {
    d.spec
        .template
        .spec
        .as_ref()
        .map(|p| {
            p.containers
                .iter()
                .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

fn api_status(err: &kube::Error) -> Option<&kube::core::Status> {
    match err {
        kube::Error::Api(s) => Some(s),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_crud_with_merge_json_and_strategic_patches() -> Result<()> {
    // The generations below are the API server's alone: kcm's deployment
    // controller, which a federation with no Cluster runs itself
    // (standalone mode), writes the revision annotation, and a Deployment's
    // annotation change bumps its generation too (kube's strategy), at
    // times of its own. Turned off here, as kube-apiserver without kcm.
    let server = block_in_place(|| Server::start_with(&["--standalone-controllers=false"]))?;
    let client = server.client().await?;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");

    let created = api
        .create(&PostParams::default(), &deployment("web")?)
        .await?;
    ensure!(
        created.metadata.generation == Some(1),
        "generation: {created:?}"
    );
    ensure!(created.uid().is_some(), "uid assigned");
    let spec = &created.spec;
    ensure!(
        spec.revision_history_limit == Some(10),
        "defaults: {spec:?}"
    );
    ensure!(
        spec.progress_deadline_seconds == Some(600),
        "defaults: {spec:?}"
    );
    ensure!(
        spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("RollingUpdate"),
        "default strategy: {spec:?}"
    );
    let got = api.get("web").await?;
    ensure!(got.uid() == created.uid(), "get returns the created object");

    // Merge patch: spec change bumps generation.
    let merged = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await?;
    ensure!(merged.spec.replicas == Some(3), "replicas: {merged:?}");
    ensure!(
        merged.metadata.generation == Some(2),
        "generation after a spec change"
    );

    // JSON patch (RFC 6902): test + add.
    // (`Patch::Json` holds a `json_patch::Patch`, built here by inference.)
    let ops = Patch::Json::<()>(serde_json::from_value(json!([
        {"op": "test", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/metadata/labels/tier", "value": "frontend"}
    ]))?);
    let jp = api.patch("web", &PatchParams::default(), &ops).await?;
    ensure!(
        jp.labels().get("tier").map(String::as_str) == Some("frontend"),
        "label added: {:?}",
        jp.labels()
    );
    ensure!(
        jp.metadata.generation == Some(2),
        "metadata-only change keeps generation"
    );

    // A failing JSON patch test op changes nothing.
    let bad = Patch::Json::<()>(serde_json::from_value(json!([
        {"op": "test", "path": "/spec/replicas", "value": 7},
        {"op": "replace", "path": "/spec/replicas", "value": 9}
    ]))?);
    let err = api
        .patch("web", &PatchParams::default(), &bad)
        .await
        .expect_err("a failing test op must fail the patch");
    ensure!(
        api_status(&err).map(|s| s.code) == Some(422),
        "failed test op: {err:?}"
    );

    // Strategic merge patch: containers merge by name, so the sidecar stays.
    let smp = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "nginx:1.28"}
            ]}}}})),
        )
        .await?;
    ensure!(
        container_images(&smp)
            == vec![
                ("app".to_string(), "nginx:1.28".to_string()),
                ("sidecar".to_string(), "busybox:1.36".to_string())
            ],
        "strategic merge by name: {:?}",
        container_images(&smp)
    );
    ensure!(
        smp.metadata.generation == Some(3),
        "template change bumps generation"
    );

    // The same body as a merge patch replaces the whole list.
    let mp = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "nginx:1.29"}
            ]}}}})),
        )
        .await?;
    ensure!(
        container_images(&mp) == vec![("app".to_string(), "nginx:1.29".to_string())],
        "merge patch replaces lists: {:?}",
        container_images(&mp)
    );

    // Update (PUT) with the current resourceVersion works; a stale one is 409.
    let mut current = api.get("web").await?;
    let stale = current.clone();
    current.labels_mut().insert("updated".into(), "yes".into());
    let replaced = api.replace("web", &PostParams::default(), &current).await?;
    ensure!(
        replaced.resource_version() != stale.resource_version(),
        "update moves the resourceVersion"
    );
    let err = api
        .replace("web", &PostParams::default(), &stale)
        .await
        .expect_err("a stale update must fail");
    let status = api_status(&err).context("a Status")?;
    ensure!(
        status.code == 409 && status.reason == "Conflict",
        "stale update: {status:?}"
    );

    api.delete("web", &DeleteParams::default()).await?;
    let err = api.get("web").await.expect_err("deleted");
    ensure!(
        api_status(&err).map(|s| s.code) == Some(404),
        "get after delete: {err:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_gets_a_cluster_ip_from_the_service_range_and_port_defaults() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc = |name: &str| -> Result<Service> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}
        }))?)
    };
    let a = api.create(&PostParams::default(), &svc("svc-a")?).await?;
    let b = api.create(&PostParams::default(), &svc("svc-b")?).await?;
    let mut ips = Vec::new();
    for s in [&a, &b] {
        let spec = s.spec.as_ref().context("spec")?;
        let ip: Ipv4Addr = spec
            .cluster_ip
            .as_deref()
            .context("clusterIP allocated")?
            .parse()?;
        // --service-cluster-ip-range default 10.96.0.0/12.
        let o = ip.octets();
        ensure!(
            o[0] == 10 && (96..112).contains(&o[1]),
            "{ip} in 10.96.0.0/12"
        );
        ensure!(
            spec.cluster_ips.as_deref() == Some(&[ip.to_string()][..]),
            "clusterIPs mirrors clusterIP: {spec:?}"
        );
        ensure!(
            spec.type_.as_deref() == Some("ClusterIP"),
            "type default: {spec:?}"
        );
        let port = spec
            .ports
            .as_ref()
            .and_then(|p| p.first())
            .context("port")?;
        ensure!(
            port.protocol.as_deref() == Some("TCP"),
            "protocol default: {port:?}"
        );
        ensure!(
            port.target_port
                == Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80)),
            "targetPort defaults to port: {port:?}"
        );
        ips.push(ip);
    }
    ensure!(ips[0] != ips[1], "distinct cluster IPs: {ips:?}");

    // clusterIP is immutable.
    let err = api
        .patch(
            "svc-a",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"clusterIP": "10.96.200.200", "clusterIPs": ["10.96.200.200"]}}),
            ),
        )
        .await
        .expect_err("clusterIP is immutable");
    ensure!(api_status(&err).map(|s| s.code) == Some(422), "{err:?}");

    let listed = api.list(&ListParams::default()).await?;
    let names: BTreeSet<String> = listed.items.iter().map(|s| s.name_any()).collect();
    ensure!(
        names.is_superset(&["kubernetes", "svc-a", "svc-b"].map(String::from).into()),
        "list: {names:?}"
    );
    api.delete("svc-a", &DeleteParams::default()).await?;
    ensure!(api.get_opt("svc-a").await?.is_none(), "deleted");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_create_get_and_delete_with_finalization() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}
    }))?;
    let created = api.create(&PostParams::default(), &ns).await?;
    ensure!(
        created.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Active"),
        "phase: {created:?}"
    );
    ensure!(
        created
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.as_ref())
            .is_some_and(|f| f.iter().any(|f| f == "kubernetes")),
        "kubernetes finalizer: {created:?}"
    );
    let got = api.get("team-a").await?;
    ensure!(got.uid() == created.uid(), "get");
    await_default_service_account(&client, "team-a").await?;

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    create_cm(&cms, "inside", "1").await?;

    api.delete("team-a", &DeleteParams::default()).await?;
    let uid = created.uid().context("uid")?;
    tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), "team-a", conditions::is_deleted(&uid)),
    )
    .await
    .context("namespace not gone in time")??;
    ensure!(api.get_opt("team-a").await?.is_none(), "namespace gone");
    let left = Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default().fields("metadata.namespace=team-a"))
        .await?;
    ensure!(left.items.is_empty(), "contents purged: {:?}", left.items);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_with_label_selectors_and_limit_continue_pages_through_every_match() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &cm(&format!("a{i}"), "0", &[("group", "a")])?,
        )
        .await?;
    }
    for i in 0..2 {
        api.create(
            &PostParams::default(),
            &cm(&format!("b{i}"), "0", &[("group", "b")])?,
        )
        .await?;
    }

    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    let mut remaining = Vec::new();
    loop {
        let mut lp = ListParams::default().labels("group=a").limit(2);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await?;
        pages.push(page.items.iter().map(|o| o.name_any()).collect::<Vec<_>>());
        remaining.push(page.metadata.remaining_item_count);
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
        ensure!(pages.len() < 10, "paging does not end: {pages:?}");
    }
    ensure!(
        pages
            == vec![
                vec!["a0".to_string(), "a1".into()],
                vec!["a2".into(), "a3".into()],
                vec!["a4".into()]
            ],
        "pages: {pages:?}"
    );
    ensure!(
        remaining == vec![Some(3), Some(1), None],
        "remainingItemCount per page: {remaining:?}"
    );

    let names = |l: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items.iter().map(|o| o.name_any()).collect()
    };
    let set = api
        .list(&ListParams::default().labels("group in (a,b),group!=a"))
        .await?;
    ensure!(names(set) == vec!["b0", "b1"], "set-based selector");
    let exists = api
        .list(&ListParams::default().labels("group,!missing"))
        .await?;
    ensure!(names(exists).len() == 7, "exists / !exists");
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=a3"))
        .await?;
    ensure!(names(by_name) == vec!["a3"], "field selector");
    Ok(())
}

/// `Api::list_metadata` / `get_metadata` negotiate
/// `as=PartialObjectMetadataList` / `as=PartialObjectMetadata`: only the
/// metadata comes back, under meta.k8s.io/v1 kinds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_lists_and_gets_return_partial_object_metadata() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("meta-a", "1", &[("k", "v")])?)
        .await?;
    let list = api
        .list_metadata(&ListParams::default().labels("k=v"))
        .await?;
    let names: Vec<String> = list.items.iter().map(|m| m.name_any()).collect();
    ensure!(names == ["meta-a"], "names: {names:?}");
    ensure!(
        list.items[0]
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("k"))
            .map(String::as_str)
            == Some("v"),
        "labels kept"
    );
    let one = api.get_metadata("meta-a").await?;
    ensure!(one.types.as_ref().map(|t| t.kind.as_str()) == Some("PartialObjectMetadata"));
    ensure!(one.metadata.uid.is_some(), "uid present");
    // The raw answer carries no data, only metadata.
    let raw = client
        .request_text(
            http::Request::get("/api/v1/namespaces/default/configmaps/meta-a")
                .header(
                    "Accept",
                    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                )
                .body(Vec::new())?,
        )
        .await?;
    let v: serde_json::Value = serde_json::from_str(&raw)?;
    ensure!(
        v.get("data").is_none() && v["kind"] == "PartialObjectMetadata",
        "raw: {raw}"
    );
    Ok(())
}

/// `Api::delete_collection` (DELETE on the collection) removes exactly the
/// objects its selector matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_collection_removes_only_the_selected_objects() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for (name, group) in [("dc-1", "x"), ("dc-2", "x"), ("dc-3", "y")] {
        api.create(&PostParams::default(), &cm(name, "1", &[("g", group)])?)
            .await?;
    }
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("g=x"),
    )
    .await?;
    let left: BTreeSet<String> = api
        .list(&ListParams::default().labels("g"))
        .await?
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    ensure!(
        left == BTreeSet::from(["dc-3".to_string()]),
        "left: {left:?}"
    );
    Ok(())
}

/// A watch asking for Tables (what `kubectl get -w` does) gets one row per
/// event, with the column definitions in the first event only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_watch_sends_column_definitions_once() -> Result<()> {
    let (_server, client) = start().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create_cm(&api, "tw-1", "1").await?;
    create_cm(&api, "tw-2", "1").await?;
    let raw = client
        .request_text(
            http::Request::get("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%21%3Dkube-root-ca.crt")
                .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                .body(Vec::new())?,
        )
        .await?;
    let events: Vec<serde_json::Value> = raw
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    ensure!(events.len() == 2, "two ADDED events: {raw}");
    let headers = |e: &serde_json::Value| {
        e["object"]["columnDefinitions"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter_map(|d| d["name"].as_str().map(str::to_string))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    ensure!(
        headers(&events[0]) == ["Name", "Data", "Age"],
        "first: {}",
        events[0]
    );
    ensure!(headers(&events[1]).is_empty(), "second: {}", events[1]);
    ensure!(
        events[1]["object"]["rows"][0]["cells"][0] == "tw-2",
        "row: {}",
        events[1]
    );
    Ok(())
}
