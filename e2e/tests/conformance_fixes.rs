//! What the upstream API-machinery conformance specs rely on, each checked
//! with the real `kube` client against the real binary:
//!
//! - every namespace holds the `kube-root-ca.crt` ConfigMap (the CA in the
//!   admin kubeconfig, kube's description annotation), within a second of the
//!   namespace's creation, recreated after a delete and put back after an edit
//!   (kube-controller-manager's root-CA publisher).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use ubernetes_e2e::Server;

const ROOT_CA: &str = "kube-root-ca.crt";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The CA the admin kubeconfig trusts for the server (PEM).
fn kubeconfig_ca(server: &Server) -> Result<String> {
    let kc = kube::config::Kubeconfig::read_from(server.kubeconfig())?;
    let data = kc
        .clusters
        .iter()
        .find_map(|c| c.cluster.as_ref()?.certificate_authority_data.clone())
        .context("no certificate-authority-data in the kubeconfig")?;
    let bytes: k8s_openapi::ByteString = serde_json::from_value(json!(data))?;
    Ok(String::from_utf8(bytes.0)?)
}

/// Poll `f` every 50 ms until it yields a value, up to `within`.
async fn within<T, F, Fut>(within: Duration, what: &str, mut f: F) -> Result<(T, Duration)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await? {
            return Ok((v, start.elapsed()));
        }
        if start.elapsed() > within {
            bail!("{what}: not within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn root_ca_of(cms: &Api<ConfigMap>, ca: &str) -> Result<Option<ConfigMap>> {
    Ok(cms.get_opt(ROOT_CA).await?.filter(|cm| {
        cm.data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .map(String::as_str)
            == Some(ca)
    }))
}

#[tokio::test]
async fn every_namespace_gets_kube_root_ca_crt_and_keeps_it() -> Result<()> {
    let server = Server::start()?;
    let client = server.client().await?;
    let ca = kubeconfig_ca(&server)?;
    assert!(ca.contains("BEGIN CERTIFICATE"), "{ca}");

    // The bootstrap namespaces have it.
    for ns in ["default", "kube-system", "kube-public"] {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        within(Duration::from_secs(5), ns, || root_ca_of(&cms, &ca)).await?;
    }

    // A new namespace has it within a second.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "fresh"}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "fresh");
    let (cm, took) = within(
        Duration::from_secs(1),
        "kube-root-ca.crt in a new namespace",
        || root_ca_of(&cms, &ca),
    )
    .await?;
    eprintln!("kube-root-ca.crt appeared after {took:?}");
    let annotations = cm.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("kubernetes.io/description")
            .map(String::as_str),
        Some(DESCRIPTION)
    );
    assert_eq!(cm.data.as_ref().map(|d| d.len()), Some(1), "{cm:?}");

    // Deleted: it comes back (a new object).
    let old_uid = cm.metadata.uid.clone();
    cms.delete(ROOT_CA, &DeleteParams::default()).await?;
    let (back, _) = within(
        Duration::from_secs(2),
        "kube-root-ca.crt recreated",
        || async {
            Ok(root_ca_of(&cms, &ca)
                .await?
                .filter(|c| c.metadata.uid != old_uid))
        },
    )
    .await?;
    assert!(back.metadata.annotations.is_some());

    // Edited: the data is put back and the extra key dropped, the annotation
    // restored; a label of the user's is kept.
    cms.patch(
        ROOT_CA,
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"labels": {"mine": "yes"},
                         "annotations": {"kubernetes.io/description": null}},
            "data": {"ca.crt": "not a CA", "extra": "x"}
        })),
    )
    .await?;
    let (fixed, _) = within(
        Duration::from_secs(2),
        "kube-root-ca.crt corrected",
        || async {
            Ok(root_ca_of(&cms, &ca).await?.filter(|c| {
                c.data.as_ref().map(|d| d.len()) == Some(1)
                    && c.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("kubernetes.io/description"))
                        .is_some()
            }))
        },
    )
    .await?;
    assert_eq!(
        fixed
            .metadata
            .labels
            .unwrap_or_default()
            .get("mine")
            .map(String::as_str),
        Some("yes")
    );
    Ok(())
}
