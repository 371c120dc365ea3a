//! The generic store over a real sled engine and watch cache, with the real
//! built-in kinds: metadata rules, optimistic concurrency, status split,
//! finalizers, namespaces and garbage collection.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use ubernetes_registry::controllers::{
    self, BootstrapOptions, GarbageCollector, NamespaceController,
};
use ubernetes_registry::store::{DeleteOptions, DeleteResult, ReadAt, WriteOptions};
use ubernetes_registry::{Registry, RegistryOptions, Store};
use ubernetes_storage::Storage;
use ubernetes_storage::sled_engine::SledStorage;

struct Env {
    registry: Arc<Registry>,
    _dir: tempfile::TempDir,
}

async fn env() -> Env {
    env_over(|engine| engine).await
}

/// [`env`] with the engine wrapped by `wrap` (e.g. a call recorder).
async fn env_over(wrap: impl FnOnce(Arc<dyn Storage>) -> Arc<dyn Storage>) -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: Arc<dyn Storage> =
        wrap(Arc::new(SledStorage::open(dir.path()).expect("open sled")));
    let registry = Registry::new(
        storage,
        ubernetes_registry::kinds::builtin(),
        RegistryOptions::default(),
    )
    .await
    .expect("registry");
    controllers::bootstrap(
        &registry,
        &BootstrapOptions {
            advertise_address: "127.0.0.1".into(),
            secure_port: 6443,
        },
    )
    .await
    .expect("bootstrap");
    Env {
        registry,
        _dir: dir,
    }
}

impl Env {
    fn store(&self, group: &str, version: &str, resource: &str) -> Arc<Store> {
        self.registry
            .get(group, version, resource)
            .unwrap_or_else(|| panic!("{resource} is served"))
    }

    async fn create(&self, store: &Store, ns: Option<&str>, obj: Value) -> Value {
        let namespaces = self.registry.namespaces();
        store
            .create(namespaces.as_deref(), ns, obj, &WriteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("create failed: {}", e.message))
            .object
    }
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}})
}

/// An object's `metadata.resourceVersion` as a number.
fn rv_of(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("a resourceVersion")
}

async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..100 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not true within 5 s");
}

#[tokio::test]
async fn create_assigns_uid_timestamp_and_a_global_resource_version() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    let a = env.create(&cms, Some("default"), cm("a")).await;
    let b = env.create(&cms, Some("default"), cm("b")).await;
    let rv = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .expect("rv")
    };
    assert!(rv(&b) > rv(&a));
    assert_eq!(a["metadata"]["uid"].as_str().map(str::len), Some(36));
    assert!(a["metadata"]["creationTimestamp"].is_string());
    // ConfigMaps do not track generation (kube-apiserver leaves it unset).
    assert!(a["metadata"].get("generation").is_none());
    // A read sees the write at once.
    let got = cms.get_value(Some("default"), "a").await.expect("get");
    assert_eq!(got["metadata"]["uid"], a["metadata"]["uid"]);
    assert_eq!(
        got["metadata"]["resourceVersion"],
        a["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn create_of_an_existing_name_is_already_exists() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    env.create(&cms, Some("default"), cm("dup")).await;
    let err = cms
        .create(
            env.registry.namespaces().as_deref(),
            Some("default"),
            cm("dup"),
            &WriteOptions::default(),
        )
        .await
        .expect_err("second create fails");
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "AlreadyExists");
    assert_eq!(err.message, "configmaps \"dup\" already exists");
}

#[tokio::test]
async fn invalid_names_are_refused_with_a_cause_on_metadata_name() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    let err = cms
        .create(
            env.registry.namespaces().as_deref(),
            Some("default"),
            cm("Bad_Name"),
            &WriteOptions::default(),
        )
        .await
        .expect_err("invalid");
    assert_eq!(err.code, 422);
    assert_eq!(err.causes[0].field, "metadata.name");
    assert!(err.message.starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{}", err.message);
}

#[tokio::test]
async fn a_stale_resource_version_on_update_is_a_conflict() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    let created = env.create(&cms, Some("default"), cm("c")).await;
    let mut first = created.clone();
    first["data"]["a"] = json!("2");
    cms.update(Some("default"), "c", first, None, &WriteOptions::default())
        .await
        .expect("first update");
    let mut stale = created.clone();
    stale["data"]["a"] = json!("3");
    let err = cms
        .update(Some("default"), "c", stale, None, &WriteOptions::default())
        .await
        .expect_err("stale update");
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    let now = cms.get_value(Some("default"), "c").await.expect("get");
    assert_eq!(now["data"]["a"], "2");
}

/// An update and a patch start from the watch cache's object (kube's
/// cacher hands GuaranteedUpdate its cached object): no read of the store
/// before the write when the cache has the object.
#[tokio::test]
async fn updates_and_patches_start_from_the_watch_cache() {
    let recorder = Arc::new(std::sync::OnceLock::new());
    let seen = recorder.clone();
    let env = env_over(move |engine| {
        let r = Arc::new(ubernetes_storage::conformance::Recorder::new(engine));
        let _ = seen.set(r.clone());
        r
    })
    .await;
    let recorder = recorder.get().expect("the recorder");
    let cms = env.store("", "v1", "configmaps");
    let created = env.create(&cms, Some("default"), cm("cached")).await;
    let rv = rv_of(&created);
    eventually("the cache has the object", || async {
        cms.revision() >= rv
    })
    .await;
    recorder.take_calls();
    let mut changed = created.clone();
    changed["data"]["a"] = json!("2");
    let updated = cms
        .update(
            Some("default"),
            "cached",
            changed,
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("update");
    assert_eq!(updated.object["data"]["a"], "2");
    let rv = rv_of(&updated.object);
    let calls = recorder.take_calls();
    eventually("the cache has the update", || async {
        cms.revision() >= rv
    })
    .await;
    recorder.take_calls();
    let patched = cms
        .patch(
            Some("default"),
            "cached",
            None,
            &WriteOptions::default(),
            |cur| {
                let mut v = cur.clone();
                v["data"]["b"] = json!("3");
                Ok(v)
            },
        )
        .await
        .expect("patch");
    assert_eq!(patched.object["data"], json!({"a": "2", "b": "3"}));
    for calls in [calls, recorder.take_calls()] {
        assert!(
            !calls.contains(&"get_with_staleness"),
            "no store read before the write: {calls:?}"
        );
        assert_eq!(
            calls.iter().filter(|c| **c == "update").count(),
            1,
            "{calls:?}"
        );
    }
}

/// A write right after another, before the watch cache applied the first:
/// the attempt from the cache's older object fails (its resourceVersion
/// precondition) or finds nothing to change, and the store's own state
/// decides, as if no cache were there.
#[tokio::test]
async fn an_update_after_a_write_the_cache_has_not_seen_sees_the_store() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    let created = env.create(&cms, Some("default"), cm("behind")).await;
    let mut stale_seen = 0;
    let mut last = created.clone();
    for i in 0..10 {
        // Change `a`, then at once update naming the new resourceVersion.
        let mut first = last.clone();
        first["data"]["a"] = json!(format!("x{i}"));
        let first = cms
            .update(
                Some("default"),
                "behind",
                first,
                None,
                &WriteOptions::default(),
            )
            .await
            .expect("first update")
            .object;
        let rv = rv_of(&first);
        if cms.revision() < rv {
            stale_seen += 1;
        }
        let mut second = first.clone();
        second["data"]["b"] = json!(format!("y{i}"));
        let second = cms
            .update(
                Some("default"),
                "behind",
                second,
                None,
                &WriteOptions::default(),
            )
            .await
            .expect("an update naming the store's current resourceVersion")
            .object;
        assert_eq!(second["data"]["a"], json!(format!("x{i}")));
        // Back to what the cache may still hold, unconditionally: a change
        // against the store's state, so it is written.
        let mut back = second.clone();
        back["data"] = first["data"].clone();
        back["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("resourceVersion");
        let back = cms
            .update(
                Some("default"),
                "behind",
                back,
                None,
                &WriteOptions::default(),
            )
            .await
            .expect("the update back")
            .object;
        assert_ne!(
            back["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"],
            "written"
        );
        let now = cms.get_value(Some("default"), "behind").await.expect("get");
        assert_eq!(now["data"], first["data"]);
        last = back;
    }
    assert!(
        stale_seen > 0,
        "the cache was never behind: the test tested nothing"
    );
}

#[tokio::test]
async fn an_unchanged_update_writes_nothing() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    let created = env.create(&cms, Some("default"), cm("same")).await;
    let res = cms
        .update(
            Some("default"),
            "same",
            created.clone(),
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("update");
    assert_eq!(
        res.object["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn generation_moves_with_the_spec_not_with_status_or_metadata() {
    let env = env().await;
    let deploys = env.store("apps", "v1", "deployments");
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}});
    let created = env.create(&deploys, Some("default"), d).await;
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["spec"]["replicas"], 1, "defaulted");
    let mut labelled = created.clone();
    labelled["metadata"]["labels"] = json!({"x": "y"});
    let r = deploys
        .update(
            Some("default"),
            "web",
            labelled,
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("label update");
    assert_eq!(r.object["metadata"]["generation"], 1);
    let mut scaled = r.object.clone();
    scaled["spec"]["replicas"] = json!(3);
    let r = deploys
        .update(
            Some("default"),
            "web",
            scaled,
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("spec update");
    assert_eq!(r.object["metadata"]["generation"], 2);
    // Status through the main resource is ignored; through /status it lands
    // without touching the spec.
    let mut with_status = r.object.clone();
    with_status["status"] = json!({"replicas": 3});
    with_status["spec"]["replicas"] = json!(5);
    let main = deploys
        .update(
            Some("default"),
            "web",
            with_status.clone(),
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("main update");
    assert!(
        main.object
            .get("status")
            .is_none_or(|s| s.get("replicas").is_none())
    );
    assert_eq!(main.object["spec"]["replicas"], 5);
    let mut status_write = main.object.clone();
    status_write["status"] = json!({"replicas": 3});
    status_write["spec"]["replicas"] = json!(9);
    let st = deploys
        .update(
            Some("default"),
            "web",
            status_write,
            Some("status"),
            &WriteOptions::default(),
        )
        .await
        .expect("status update");
    assert_eq!(st.object["status"]["replicas"], 3);
    assert_eq!(st.object["spec"]["replicas"], 5);
}

#[tokio::test]
async fn a_finalizer_holds_deletion_until_it_is_removed() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    let mut obj = cm("held");
    obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
    env.create(&cms, Some("default"), obj).await;
    let res = cms
        .delete(Some("default"), "held", &DeleteOptions::default())
        .await
        .expect("delete");
    let DeleteResult::Pending(marked) = res else {
        panic!("deletion should wait for the finalizer");
    };
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    cms.patch(
        Some("default"),
        "held",
        None,
        &WriteOptions::default(),
        |cur| {
            let mut next = cur.clone();
            next["metadata"]["finalizers"] = json!([]);
            Ok(next)
        },
    )
    .await
    .expect("remove finalizer");
    let err = cms.get(Some("default"), "held").await.expect_err("gone");
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn creating_in_a_missing_namespace_is_not_found() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    let err = cms
        .create(
            env.registry.namespaces().as_deref(),
            Some("nope"),
            cm("x"),
            &WriteOptions::default(),
        )
        .await
        .expect_err("no namespace");
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "namespaces \"nope\" not found");
}

#[tokio::test]
async fn lists_page_with_continue_tokens_at_one_revision() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    for i in 0..5 {
        env.create(&cms, Some("default"), cm(&format!("p{i}")))
            .await;
    }
    let first = cms
        .list(Some("default"), None, 2, None, ReadAt::Latest)
        .await
        .expect("page 1");
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.remaining_item_count, Some(3));
    // A write between pages is not seen by the paged list.
    env.create(&cms, Some("default"), cm("p9")).await;
    let token = first.continue_token.clone().expect("continue");
    let second = cms
        .list(Some("default"), None, 10, Some(&token), ReadAt::Latest)
        .await
        .expect("page 2");
    assert_eq!(second.items.len(), 3);
    assert!(second.continue_token.is_none());
    assert_eq!(second.resource_version, first.resource_version);
}

/// The chunking conformance spec: once the first page's revision is
/// compacted, its continue token is 410 with an inconsistent continue token
/// that lists the rest at the latest revision (kube's etcd3 store).
#[tokio::test]
async fn a_compacted_continue_token_expires_with_an_inconsistent_one() {
    let env = env().await;
    let cms = env.store("", "v1", "configmaps");
    for i in 0..5 {
        env.create(&cms, Some("default"), cm(&format!("p{i}")))
            .await;
    }
    let first = cms
        .list(Some("default"), None, 2, None, ReadAt::Latest)
        .await
        .expect("page 1");
    let token = first.continue_token.clone().expect("continue");
    env.create(&cms, Some("default"), cm("p9")).await;
    let storage = env.registry.storage().clone();
    let now = storage.current_revision().await.expect("revision");
    storage.compact(now).await.expect("compact");
    let err = cms
        .list(Some("default"), None, 2, Some(&token), ReadAt::Latest)
        .await
        .expect_err("the token's revision is compacted");
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    assert!(
        err.message
            .starts_with("The provided continue parameter is too old")
    );
    let inconsistent = err.list_continue.clone().expect("an inconsistent token");
    let rest = cms
        .list(
            Some("default"),
            None,
            2,
            Some(&inconsistent),
            ReadAt::Latest,
        )
        .await
        .expect("the rest at the latest revision");
    assert!(rest.resource_version > first.resource_version);
    let names: Vec<String> = rest
        .items
        .iter()
        .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
        .filter_map(|v| v["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(names.len(), 2);
    assert!(!names.iter().any(|n| n == "p0" || n == "p1"), "{names:?}");
    assert!(rest.continue_token.is_some());
    // An exact read of a compacted revision is kube's 410 too.
    let err = cms
        .list(
            Some("default"),
            None,
            0,
            None,
            ReadAt::Exact(first.resource_version),
        )
        .await
        .expect_err("compacted");
    assert_eq!(err.code, 410);
    assert!(
        err.message.starts_with("too old resource version"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn cluster_ips_are_allocated_once_each() {
    let env = env().await;
    let svcs = env.store("", "v1", "services");
    let mk = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"ports": [{"port": 80}]}})
    };
    let a = env.create(&svcs, Some("default"), mk("a")).await;
    let b = env.create(&svcs, Some("default"), mk("b")).await;
    let kube = svcs
        .get_value(Some("default"), "kubernetes")
        .await
        .expect("kubernetes service");
    assert_eq!(kube["spec"]["clusterIP"], "10.96.0.1");
    assert_ne!(a["spec"]["clusterIP"], b["spec"]["clusterIP"]);
    assert_eq!(a["spec"]["type"], "ClusterIP");
    assert_eq!(a["spec"]["ports"][0]["protocol"], "TCP");
}

#[tokio::test]
async fn the_kubernetes_endpoints_and_endpointslice_follow_the_address_and_port() {
    let env = env().await;
    let eps = env.store("", "v1", "endpoints");
    let slices = env.store("discovery.k8s.io", "v1", "endpointslices");
    let check = |port: u16, address: &'static str| {
        let (eps, slices) = (eps.clone(), slices.clone());
        async move {
            let ep = eps
                .get_value(Some("default"), "kubernetes")
                .await
                .expect("endpoints");
            assert_eq!(
                ep["subsets"],
                json!([{"addresses": [{"ip": address}],
                        "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}])
            );
            let slice = slices
                .get_value(Some("default"), "kubernetes")
                .await
                .expect("slice");
            assert_eq!(
                slice["metadata"]["labels"]["kubernetes.io/service-name"],
                "kubernetes"
            );
            assert_eq!(slice["addressType"], "IPv4");
            assert_eq!(slice["endpoints"][0]["addresses"], json!([address]));
            assert_eq!(slice["endpoints"][0]["conditions"]["ready"], true);
            assert_eq!(
                slice["ports"],
                json!([{"name": "https", "port": port, "protocol": "TCP"}])
            );
        }
    };
    check(6443, "127.0.0.1").await;
    // A restart on another port and address: both are put right.
    controllers::bootstrap(
        &env.registry,
        &BootstrapOptions {
            advertise_address: "10.1.2.3".into(),
            secure_port: 7443,
        },
    )
    .await
    .expect("bootstrap again");
    check(7443, "10.1.2.3").await;
}

#[tokio::test]
async fn background_gc_deletes_dependents_of_a_deleted_owner() {
    let env = env().await;
    GarbageCollector::start(env.registry.clone());
    let cms = env.store("", "v1", "configmaps");
    let owner = env.create(&cms, Some("default"), cm("owner")).await;
    let mut dep = cm("dependent");
    dep["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "owner", "uid": owner["metadata"]["uid"]}]);
    env.create(&cms, Some("default"), dep).await;
    cms.delete(Some("default"), "owner", &DeleteOptions::default())
        .await
        .expect("delete owner");
    eventually("dependent collected", || async {
        cms.get(Some("default"), "dependent").await.is_err()
    })
    .await;
}

#[tokio::test]
async fn an_owner_of_a_kind_not_served_yet_is_not_taken_for_gone() {
    // At start the GC runs before the CRDs are served: a dependent of a
    // custom resource must survive that (kube's GC retries restMappingError).
    let env = env().await;
    GarbageCollector::start(env.registry.clone());
    let cms = env.store("", "v1", "configmaps");
    let mut kept = cm("of-a-widget");
    kept["metadata"]["ownerReferences"] = json!([{"apiVersion": "example.com/v1",
        "kind": "Widget", "name": "w", "uid": "00000000-0000-0000-0000-000000000001"}]);
    env.create(&cms, Some("default"), kept).await;
    // Created after it: once this one (owner served, and absent) is
    // collected, the GC has looked at the first one too.
    let mut marker = cm("of-a-missing-configmap");
    marker["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "gone", "uid": "00000000-0000-0000-0000-000000000002"}]);
    env.create(&cms, Some("default"), marker).await;
    eventually("the dependent of an absent ConfigMap collected", || async {
        cms.get(Some("default"), "of-a-missing-configmap")
            .await
            .is_err()
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    cms.get_value(Some("default"), "of-a-widget")
        .await
        .expect("a dependent of an unserved kind stays");
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_and_strips_the_reference() {
    let env = env().await;
    GarbageCollector::start(env.registry.clone());
    let cms = env.store("", "v1", "configmaps");
    let owner = env.create(&cms, Some("default"), cm("o")).await;
    let mut dep = cm("d");
    dep["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "o", "uid": owner["metadata"]["uid"]}]);
    env.create(&cms, Some("default"), dep).await;
    let opts = DeleteOptions {
        propagation_policy: Some("Orphan".into()),
        ..Default::default()
    };
    cms.delete(Some("default"), "o", &opts)
        .await
        .expect("delete");
    eventually("owner gone", || async {
        cms.get(Some("default"), "o").await.is_err()
    })
    .await;
    let d = cms
        .get_value(Some("default"), "d")
        .await
        .expect("dependent stays");
    assert!(d["metadata"].get("ownerReferences").is_none());
}

#[tokio::test]
async fn foreground_deletion_removes_dependents_before_the_owner() {
    let env = env().await;
    GarbageCollector::start(env.registry.clone());
    let cms = env.store("", "v1", "configmaps");
    let owner = env.create(&cms, Some("default"), cm("fg")).await;
    let mut dep = cm("fg-dep");
    dep["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "fg", "uid": owner["metadata"]["uid"], "blockOwnerDeletion": true}]);
    env.create(&cms, Some("default"), dep).await;
    let opts = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    let res = cms
        .delete(Some("default"), "fg", &opts)
        .await
        .expect("delete");
    assert!(matches!(res, DeleteResult::Pending(_)));
    eventually("both gone", || async {
        cms.get(Some("default"), "fg").await.is_err()
            && cms.get(Some("default"), "fg-dep").await.is_err()
    })
    .await;
}

/// "Garbage collector should not be blocked by dependency circle": three
/// objects owning each other in a circle, every reference blocking; the
/// foreground deletion of one drains them all (kube breaks the cycle by
/// making a waiting dependent's reference non-blocking).
#[tokio::test]
async fn foreground_deletion_is_not_blocked_by_an_ownership_circle() {
    let env = env().await;
    GarbageCollector::start(env.registry.clone());
    let cms = env.store("", "v1", "configmaps");
    let names = ["c1", "c2", "c3"];
    let mut uids = Vec::new();
    for n in names {
        let o = env.create(&cms, Some("default"), cm(n)).await;
        uids.push(o["metadata"]["uid"].clone());
    }
    // c1 owned by c3, c2 by c1, c3 by c2.
    for (i, n) in names.iter().enumerate() {
        let owner = (i + 2) % 3;
        let refs = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": names[owner],
            "uid": uids[owner], "controller": true, "blockOwnerDeletion": true}]);
        cms.patch(Some("default"), n, None, &WriteOptions::default(), |cur| {
            let mut next = cur.clone();
            next["metadata"]["ownerReferences"] = refs.clone();
            Ok(next)
        })
        .await
        .expect("owner references");
    }
    let opts = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    cms.delete(Some("default"), "c1", &opts)
        .await
        .expect("delete");
    eventually("the circle drained", || async {
        let mut gone = true;
        for n in names {
            gone &= cms.get(Some("default"), n).await.is_err();
        }
        gone
    })
    .await;
}

/// A blocking dependent that waits for a dependent of its own (here a
/// finalizer holds that one) keeps its owner waiting: no circle, nothing
/// to unblock (the federation gives every object such a dependent, its
/// PropagationRecord, so this is the common case with members joined).
#[tokio::test]
async fn foreground_deletion_waits_for_a_dependent_that_waits_for_its_own() {
    let env = env().await;
    GarbageCollector::start(env.registry.clone());
    let cms = env.store("", "v1", "configmaps");
    let owner = env.create(&cms, Some("default"), cm("top")).await;
    let mut mid = cm("mid");
    mid["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "top", "uid": owner["metadata"]["uid"], "blockOwnerDeletion": true}]);
    let mid = env.create(&cms, Some("default"), mid).await;
    let mut leaf = cm("leaf");
    leaf["metadata"]["finalizers"] = json!(["example.com/hold"]);
    leaf["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "mid", "uid": mid["metadata"]["uid"], "blockOwnerDeletion": true}]);
    env.create(&cms, Some("default"), leaf).await;
    let opts = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    cms.delete(Some("default"), "top", &opts)
        .await
        .expect("delete");
    eventually("the leaf being deleted", || async {
        cms.get_value(Some("default"), "leaf")
            .await
            .is_ok_and(|l| l["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    for n in ["top", "mid"] {
        let o = cms
            .get_value(Some("default"), n)
            .await
            .unwrap_or_else(|e| panic!("{n} went while the leaf is held: {e:?}"));
        assert_eq!(
            o["metadata"]["finalizers"],
            json!(["foregroundDeletion"]),
            "{n}"
        );
        assert!(
            o["metadata"]["ownerReferences"]
                .as_array()
                .is_none_or(|r| r.iter().all(|r| r["blockOwnerDeletion"] == true)),
            "{n}: {o}"
        );
    }
    cms.patch(
        Some("default"),
        "leaf",
        None,
        &WriteOptions::default(),
        |cur| {
            let mut next = cur.clone();
            next["metadata"]["finalizers"] = json!(null);
            Ok(next)
        },
    )
    .await
    .expect("release the leaf");
    eventually("all three gone", || async {
        let mut gone = true;
        for n in ["top", "mid", "leaf"] {
            gone &= cms.get(Some("default"), n).await.is_err();
        }
        gone
    })
    .await;
}

#[tokio::test]
async fn deleting_a_namespace_purges_it_and_refuses_new_content_meanwhile() {
    let env = env().await;
    NamespaceController::start(env.registry.clone());
    let nss = env.store("", "v1", "namespaces");
    let cms = env.store("", "v1", "configmaps");
    env.create(
        &nss,
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}}),
    )
    .await;
    let sas = env.store("", "v1", "serviceaccounts");
    eventually("default service account", || async {
        sas.get(Some("tmp"), "default").await.is_ok()
    })
    .await;
    let mut held = cm("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    env.create(&cms, Some("tmp"), held).await;
    env.create(&cms, Some("tmp"), cm("plain")).await;
    nss.delete(None, "tmp", &DeleteOptions::default())
        .await
        .expect("delete ns");
    let ns = nss.get_value(None, "tmp").await.expect("still there");
    assert_eq!(ns["status"]["phase"], "Terminating");
    let err = cms
        .create(
            env.registry.namespaces().as_deref(),
            Some("tmp"),
            cm("late"),
            &WriteOptions::default(),
        )
        .await
        .expect_err("terminating");
    assert_eq!(err.code, 403);
    assert!(
        err.message.contains("because it is being terminated"),
        "{}",
        err.message
    );
    eventually("plain purged", || async {
        cms.get(Some("tmp"), "plain").await.is_err()
    })
    .await;
    // Touching a terminating namespace does not skip its spec finalizer.
    nss.patch(None, "tmp", None, &WriteOptions::default(), |cur| {
        let mut next = cur.clone();
        next["metadata"]["labels"]["touched"] = json!("yes");
        Ok(next)
    })
    .await
    .expect("label a terminating namespace");
    assert!(
        nss.get(None, "tmp").await.is_ok(),
        "still waiting for its contents"
    );
    assert!(
        nss.get(None, "tmp").await.is_ok(),
        "held by the finalized configmap"
    );
    cms.patch(Some("tmp"), "held", None, &WriteOptions::default(), |cur| {
        let mut next = cur.clone();
        next["metadata"]["finalizers"] = json!([]);
        Ok(next)
    })
    .await
    .expect("release");
    eventually("namespace gone", || async {
        nss.get(None, "tmp").await.is_err()
    })
    .await;
}

/// A store shared with other servers whose watches cannot vouch for their
/// progress (an etcd older than 3.4.31 / 3.5.13): this engine's watches
/// never deliver anything, as a watch cache that has not caught up.
struct SharedWithoutProgress {
    inner: Arc<SledStorage>,
}

#[async_trait::async_trait]
impl Storage for SharedWithoutProgress {
    async fn get(
        &self,
        key: &str,
    ) -> Result<Option<ubernetes_storage::KeyValue>, ubernetes_storage::StorageError> {
        self.inner.get(key).await
    }
    async fn list(
        &self,
        prefix: &str,
        opts: ubernetes_storage::ListOptions,
    ) -> Result<ubernetes_storage::ListResult, ubernetes_storage::StorageError> {
        self.inner.list(prefix, opts).await
    }
    async fn create(
        &self,
        key: &str,
        value: bytes::Bytes,
    ) -> Result<ubernetes_storage::KeyValue, ubernetes_storage::StorageError> {
        self.inner.create(key, value).await
    }
    async fn update(
        &self,
        key: &str,
        value: bytes::Bytes,
        expected: u64,
    ) -> Result<ubernetes_storage::KeyValue, ubernetes_storage::StorageError> {
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<ubernetes_storage::KeyValue, ubernetes_storage::StorageError> {
        self.inner.delete(key, expected).await
    }
    async fn watch(
        &self,
        _prefix: &str,
        _from: u64,
    ) -> Result<ubernetes_storage::WatchStream, ubernetes_storage::StorageError> {
        Ok(Box::pin(futures::stream::pending()))
    }
    async fn watch_progress(
        &self,
        _prefix: &str,
        _from: u64,
    ) -> Result<ubernetes_storage::ProgressWatchStream, ubernetes_storage::StorageError> {
        Ok(Box::pin(futures::stream::pending()))
    }
    async fn current_revision(&self) -> Result<u64, ubernetes_storage::StorageError> {
        self.inner.current_revision().await
    }
    async fn consistent_read_revision(
        &self,
    ) -> Result<Option<u64>, ubernetes_storage::StorageError> {
        self.inner.current_revision().await.map(Some)
    }
    fn serves_progress_requests(&self) -> bool {
        false
    }
    async fn compact(&self, revision: u64) -> Result<(), ubernetes_storage::StorageError> {
        self.inner.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<u64, ubernetes_storage::StorageError> {
        self.inner.compacted_revision().await
    }
}

/// Another server's write, which this server's watch cache has not seen, is
/// read anyway when the engine cannot report watch progress: a get and a
/// list that must be current go to the store (kube-apiserver's fallback for
/// an old etcd), while a list at any resourceVersion is served by the cache.
#[tokio::test]
async fn current_reads_go_to_the_store_when_its_watches_cannot_report_progress() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sled = Arc::new(SledStorage::open(dir.path()).expect("open sled"));
    let storage: Arc<dyn Storage> = Arc::new(SharedWithoutProgress {
        inner: sled.clone(),
    });
    let registry = Registry::new(
        storage,
        ubernetes_registry::kinds::builtin(),
        RegistryOptions::default(),
    )
    .await
    .expect("registry");
    let store = registry.get("", "v1", "configmaps").expect("configmaps");
    // "Another server" writes straight to the engine.
    let mut obj = cm("elsewhere");
    obj["metadata"]["namespace"] = json!("default");
    obj["metadata"]["uid"] = json!("7d3c8a4e-0000-4000-8000-000000000001");
    let written = sled
        .create(
            &store.key(Some("default"), "elsewhere"),
            bytes::Bytes::from(serde_json::to_vec(&obj).expect("json")),
        )
        .await
        .expect("raw write");

    let got = store
        .get_value(Some("default"), "elsewhere")
        .await
        .unwrap_or_else(|e| panic!("get: {}", e.message));
    assert_eq!(got["data"]["a"], "1");
    assert_eq!(
        got["metadata"]["resourceVersion"],
        written.mod_revision.to_string()
    );
    let names = |list: &ubernetes_registry::store::ListResult| -> Vec<String> {
        list.items
            .iter()
            .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
            .filter_map(|v| v["metadata"]["name"].as_str().map(String::from))
            .collect()
    };
    let latest = store
        .list(Some("default"), None, 0, None, ReadAt::Latest)
        .await
        .unwrap_or_else(|e| panic!("list: {}", e.message));
    assert_eq!(names(&latest), ["elsewhere"]);
    assert_eq!(latest.resource_version, written.mod_revision);
    // resourceVersion=0 ("any"): the cache, which has not seen it.
    let any = store
        .list(Some("default"), None, 0, None, ReadAt::Any)
        .await
        .unwrap_or_else(|e| panic!("list: {}", e.message));
    assert!(names(&any).is_empty(), "{:?}", names(&any));
}
