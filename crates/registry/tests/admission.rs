//! The registry-wide admission chain over a real sled engine and the real
//! built-in kinds: which writes reach the plugins, in which phase, with
//! which attributes, and that a mutation is validated and stored while a
//! refusal stops the write.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::user::UserInfo;
use ubernetes_registry::admission::{Admission, Attributes};
use ubernetes_registry::store::{DeleteOptions, WriteOptions};
use ubernetes_registry::{Registry, RegistryOptions};
use ubernetes_storage::Storage;
use ubernetes_storage::sled_engine::SledStorage;

/// One call a plugin saw.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    phase: &'static str,
    operation: &'static str,
    subresource: Option<String>,
    name: String,
    user: Option<String>,
    dry_run: bool,
    has_old: bool,
    options_kind: Option<String>,
}

/// Records every call; mutates ConfigMaps by adding the label
/// `admitted=yes`; refuses objects labelled `deny=yes`; mutates with
/// `data.bad` an invalid key when asked to (to prove re-validation).
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<Call>>,
}

impl Recorder {
    fn record(&self, phase: &'static str, attrs: &Attributes<'_>) {
        self.calls.lock().push(Call {
            phase,
            operation: attrs.operation.as_str(),
            subresource: attrs.subresource.map(str::to_string),
            name: attrs.name.to_string(),
            user: attrs.user.map(|u| u.name.clone()),
            dry_run: attrs.dry_run,
            has_old: attrs.old.is_some(),
            options_kind: attrs
                .options
                .and_then(|o| o.get("kind"))
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }

    fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock())
    }
}

#[async_trait::async_trait]
impl Admission for Recorder {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        if attrs.info.resource != "configmaps" {
            return Ok(Vec::new());
        }
        self.record("mutate", attrs);
        if attrs.operation.as_str() != "DELETE" {
            obj["metadata"]["labels"]["admitted"] = json!("yes");
            if obj.pointer("/metadata/labels/break") == Some(&json!("yes")) {
                obj["data"] = json!({"not a valid key!": "x"});
            }
            if obj.pointer("/metadata/labels/break-type") == Some(&json!("yes")) {
                obj["data"] = json!({"n": 5});
            }
        }
        Ok(vec!["mutated by the recorder".into()])
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        if attrs.info.resource != "configmaps" {
            return Ok(Vec::new());
        }
        self.record("validate", attrs);
        let target = if attrs.operation.as_str() == "DELETE" {
            attrs.old.unwrap_or(obj)
        } else {
            obj
        };
        if target.pointer("/metadata/labels/deny") == Some(&json!("yes")) {
            return Err(ApiError::forbidden(
                "",
                "configmaps",
                attrs.name,
                "the recorder says no",
            ));
        }
        Ok(Vec::new())
    }
}

struct Env {
    registry: Arc<Registry>,
    recorder: Arc<Recorder>,
    _dir: tempfile::TempDir,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open sled"));
    let registry = Registry::new(
        storage,
        ubernetes_registry::kinds::builtin(),
        RegistryOptions::default(),
    )
    .await
    .expect("registry");
    registry
        .namespaces()
        .expect("namespaces served")
        .create(
            None,
            None,
            json!({"metadata": {"name": "default"}}),
            &WriteOptions::default(),
        )
        .await
        .expect("namespace");
    // Installed after the registry exists, as the apiserver installs webhooks.
    let recorder = Arc::new(Recorder::default());
    registry.add_admission(recorder.clone());
    Env {
        registry,
        recorder,
        _dir: dir,
    }
}

fn alice() -> WriteOptions {
    WriteOptions {
        user: Some(UserInfo::new("alice", &["devs"])),
        field_manager: Some("test".into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn create_update_patch_status_and_delete_go_through_both_phases() {
    let env = env().await;
    let cms = env
        .registry
        .get("", "v1", "configmaps")
        .expect("configmaps");
    let namespaces = env.registry.namespaces();
    let created = cms
        .create(
            namespaces.as_deref(),
            Some("default"),
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
            &alice(),
        )
        .await
        .expect("create");
    // The mutation is stored and its warning returned.
    assert_eq!(created.object["metadata"]["labels"]["admitted"], "yes");
    assert_eq!(created.warnings, vec!["mutated by the recorder"]);
    let stored = cms.get_value(Some("default"), "a").await.expect("get");
    assert_eq!(stored["metadata"]["labels"]["admitted"], "yes");
    let calls = env.recorder.take();
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.phase, c.operation))
            .collect::<Vec<_>>(),
        vec![("mutate", "CREATE"), ("validate", "CREATE")]
    );
    assert_eq!(calls[0].user.as_deref(), Some("alice"));
    assert_eq!(calls[0].options_kind.as_deref(), Some("CreateOptions"));
    assert!(!calls[0].has_old);

    // Update: old object present, UpdateOptions.
    let mut next = stored.clone();
    next["data"]["k"] = json!("w");
    cms.update(Some("default"), "a", next, None, &alice())
        .await
        .expect("update");
    let calls = env.recorder.take();
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.phase, c.operation, c.has_old))
            .collect::<Vec<_>>(),
        vec![("mutate", "UPDATE", true), ("validate", "UPDATE", true)]
    );
    assert_eq!(calls[0].options_kind.as_deref(), Some("UpdateOptions"));

    // A patch that sets the deny label is refused; nothing is written.
    let err = cms
        .patch(Some("default"), "a", None, &alice(), |cur| {
            let mut v = cur.clone();
            v["metadata"]["labels"]["deny"] = json!("yes");
            Ok(v)
        })
        .await
        .expect_err("denied");
    assert_eq!(err.code, 403);
    assert!(
        err.message.contains("the recorder says no"),
        "{}",
        err.message
    );
    let stored = cms.get_value(Some("default"), "a").await.expect("get");
    assert!(stored.pointer("/metadata/labels/deny").is_none());
    assert_eq!(
        env.recorder.take()[0].options_kind.as_deref(),
        Some("PatchOptions")
    );

    // A mutation that makes the object invalid is caught by the kind's
    // validation run again after mutating admission. A ConfigMap's rules
    // read the JSON (its one typed decode is normalize's), so a change that
    // breaks the kind's types is caught by decoding the mutated object.
    for (label, says) in [
        ("break", "a valid config key"),
        ("break-type", "cannot unmarshal number"),
    ] {
        let err = cms
            .patch(Some("default"), "a", None, &alice(), |cur| {
                let mut v = cur.clone();
                v["metadata"]["labels"][label] = json!("yes");
                Ok(v)
            })
            .await
            .expect_err("invalid after mutation");
        assert_eq!(err.code, 422, "{}", err.message);
        assert!(err.message.contains(says), "{}", err.message);
    }
    // On create as on update.
    let err = cms
        .create(
            namespaces.as_deref(),
            Some("default"),
            json!({"metadata": {"name": "typed", "labels": {"break-type": "yes"}}}),
            &alice(),
        )
        .await
        .expect_err("mistyped after mutation");
    assert_eq!(err.code, 422, "{}", err.message);
    assert!(
        err.message.contains("cannot unmarshal number"),
        "{}",
        err.message
    );
    env.recorder.take();

    // Dry run passes through with dry_run set and writes nothing.
    let mut dry = alice();
    dry.dry_run = true;
    let res = cms
        .patch(Some("default"), "a", None, &dry, |cur| {
            let mut v = cur.clone();
            v["data"]["dry"] = json!("1");
            Ok(v)
        })
        .await
        .expect("dry run");
    assert_eq!(res.object["data"]["dry"], "1");
    assert!(env.recorder.take().iter().all(|c| c.dry_run));
    let stored = cms.get_value(Some("default"), "a").await.expect("get");
    assert!(stored.pointer("/data/dry").is_none());

    // Delete: both phases with the stored object as old, DeleteOptions;
    // a refused delete leaves the object.
    cms.create(
        namespaces.as_deref(),
        Some("default"),
        json!({"metadata": {"name": "b", "labels": {"deny": "no"}}}),
        &alice(),
    )
    .await
    .expect("create b");
    env.recorder.take();
    let del = DeleteOptions {
        user: Some(UserInfo::new("bob", &[])),
        ..Default::default()
    };
    cms.delete(Some("default"), "b", &del)
        .await
        .expect("delete");
    let calls = env.recorder.take();
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.phase, c.operation, c.has_old))
            .collect::<Vec<_>>(),
        vec![("mutate", "DELETE", true), ("validate", "DELETE", true)]
    );
    assert_eq!(calls[1].user.as_deref(), Some("bob"));
    assert_eq!(calls[1].options_kind.as_deref(), Some("DeleteOptions"));
}

#[tokio::test]
async fn refused_delete_keeps_the_object_and_subresources_are_named() {
    let env = env().await;
    let cms = env
        .registry
        .get("", "v1", "configmaps")
        .expect("configmaps");
    let namespaces = env.registry.namespaces();
    cms.create(
        namespaces.as_deref(),
        Some("default"),
        json!({"metadata": {"name": "keep", "labels": {"deny": "yes"}}}),
        &WriteOptions::default(),
    )
    .await
    .expect_err("the create itself is refused");
    // Created with the label off, then labelled through a plugin-free path
    // (system_update is not admitted), then the delete is refused.
    cms.create(
        namespaces.as_deref(),
        Some("default"),
        json!({"metadata": {"name": "keep"}}),
        &WriteOptions::default(),
    )
    .await
    .expect("create");
    cms.system_update(Some("default"), "keep", |mut cur| {
        cur["metadata"]["labels"]["deny"] = json!("yes");
        Ok(Some(cur))
    })
    .await
    .expect("system update");
    env.recorder.take();
    let err = cms
        .delete(Some("default"), "keep", &DeleteOptions::default())
        .await
        .expect_err("delete refused");
    assert_eq!(err.code, 403);
    assert!(cms.get_value(Some("default"), "keep").await.is_ok());
    // The server's own writes carry no user.
    assert!(env.recorder.take().iter().all(|c| c.user.is_none()));
    // system_update reached no plugin.
    cms.system_update(Some("default"), "keep", |mut cur| {
        cur["metadata"]["labels"]["deny"] = json!("no");
        Ok(Some(cur))
    })
    .await
    .expect("system update");
    assert!(env.recorder.take().is_empty());

    // A status write of a kind with a status subresource names it.
    let deployments = env
        .registry
        .get("apps", "v1", "deployments")
        .expect("deployments");
    // The recorder only looks at configmaps: a second plugin records the
    // validating calls on deployments.
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;
    struct Any(Seen);
    #[async_trait::async_trait]
    impl Admission for Any {
        async fn validate(
            &self,
            attrs: &Attributes<'_>,
            _obj: &Value,
        ) -> Result<Vec<String>, ApiError> {
            if attrs.info.resource == "deployments" {
                self.0.lock().push((
                    attrs.operation.as_str().to_string(),
                    attrs.subresource.map(str::to_string),
                ));
            }
            Ok(Vec::new())
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    env.registry.add_admission(Arc::new(Any(seen.clone())));
    let dep = json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    });
    deployments
        .create(namespaces.as_deref(), Some("default"), dep, &alice())
        .await
        .expect("create deployment");
    deployments
        .patch(Some("default"), "web", Some("status"), &alice(), |cur| {
            let mut v = cur.clone();
            v["status"] = json!({"replicas": 1});
            Ok(v)
        })
        .await
        .expect("status");
    deployments
        .patch(Some("default"), "web", Some("scale"), &alice(), |cur| {
            let mut v = cur.clone();
            v["spec"]["replicas"] = json!(3);
            Ok(v)
        })
        .await
        .expect("scale");
    // An update whose first attempt started from a watch cache that had
    // not seen the write before it is tried again from the store, and each
    // attempt is admitted (as kube's GuaranteedUpdate runs validation in
    // every try): repeats of one call are one operation.
    let mut calls = seen.lock().clone();
    calls.dedup();
    assert_eq!(
        calls,
        vec![
            ("CREATE".to_string(), None),
            ("UPDATE".to_string(), Some("status".to_string())),
            ("UPDATE".to_string(), Some("scale".to_string())),
        ]
    );
}
