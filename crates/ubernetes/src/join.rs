//! `ubernetes join` and `ubernetes unjoin` (SPEC §3.2): add a member cluster
//! to the federation with credentials of its own, and take it out again.
//!
//! `join NAME --cluster-context CTX` works against any Kubernetes API:
//! 1. in the member (`--kubeconfig`, context CTX): namespace
//!    `federation-system`, ServiceAccount `ubernetes-NAME`, the ClusterRole
//!    [`MEMBER_ROLE`] (every verb on every resource and non-resource URL —
//!    the federation must create, update and delete any federated kind, so
//!    this **equals cluster-admin in effect**, as kubefed's join grants), a
//!    ClusterRoleBinding `ubernetes:federation-member:NAME` to the account, and
//!    a long-lived token Secret `ubernetes-NAME-token` (type
//!    `kubernetes.io/service-account-token`) whose token the member's token
//!    controller fills in;
//! 2. a kubeconfig with that token, the member's server URL and CA (the CA
//!    of the member context, else the Secret's `ca.crt`), checked to work;
//! 3. in the federation (`--federation-kubeconfig`, `--federation-context`,
//!    default `$KUBECONFIG` or `~/.kube/config` and context `federation`):
//!    the Secret `federation-system/NAME` (key `kubeconfig`) and the Cluster
//!    `NAME` (`serverAddressByClientCIDRs` `0.0.0.0/0` → the member URL,
//!    `secretRef` NAME).
//!
//! Every object is written with server-side apply (field manager
//! [`FIELD_MANAGER`], forced), so running join again is harmless; each step
//! prints a progress line (`created service account federation-system/ubernetes-NAME in CTX`).
//!
//! `unjoin NAME` deletes the Cluster, then in the member (reached with
//! `--cluster-context`, else with the credentials the federation's Secret
//! holds, read as the federation reads them: inline credentials only,
//! see `ubernetes_federation::member_kubeconfig`) — with `--remove-propagated` — every object labelled
//! `federation.kubernetes.io/managed=true` of every listable resource except
//! events, then the account, its token Secret and binding (and the ClusterRole
//! when no other binding uses it), and last the federation's Secret. With
//! only the stored credentials the binding cannot be deleted after the
//! account is gone: unjoin says so and how to remove it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{Discovery, Scope, verbs};
use kube::{Client, Config, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use ubernetes_api::Cluster;

/// The namespace of the member's account and of the federation's Secrets.
pub use ubernetes_api::FEDERATION_NAMESPACE as NAMESPACE;
/// The ClusterRole bound to every joined member's account.
pub const MEMBER_ROLE: &str = "ubernetes:federation-member";
/// The field manager of join's server-side applies.
pub const FIELD_MANAGER: &str = "ubernetes-join";
/// The label the federation puts on what it propagated.
pub const MANAGED_LABEL: &str = "federation.kubernetes.io/managed";
/// Objects of the federation's control plane, never propagated.
const CONTROL_PLANE_ANNOTATION: &str = "federation.kubernetes.io/federation-control-plane";
/// How long the member's token controller gets to fill the token in, and
/// the member to accept it.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the federation is.
#[derive(Debug, Clone, clap::Args)]
pub struct FederationArgs {
    /// Kubeconfig of the federation (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long = "federation-kubeconfig", value_name = "FILE")]
    pub federation_kubeconfig: Option<PathBuf>,
    /// Context of the federation in that kubeconfig.
    #[arg(
        long = "federation-context",
        value_name = "CONTEXT",
        default_value = "federation"
    )]
    pub federation_context: String,
}

/// `ubernetes join`.
#[derive(Debug, Clone, clap::Args)]
pub struct JoinArgs {
    /// The member's name in the federation (the Cluster and its Secret).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Context of the member cluster in --kubeconfig (not with --pull).
    #[arg(
        long = "cluster-context",
        value_name = "CONTEXT",
        required_unless_present = "pull",
        conflicts_with = "pull"
    )]
    pub cluster_context: Option<String>,
    /// Pull mode: the federation cannot reach the member; its agent
    /// (`ubernetes agent`) opens a tunnel to the federation instead. Creates
    /// the Cluster with spec.syncMode Pull (no address, no Secret) and an
    /// identity for the agent that may open only this cluster's tunnel and
    /// renew only its Lease, and writes the agent's kubeconfig to
    /// --agent-kubeconfig-out. Nothing is written in the member.
    #[arg(long = "pull", requires = "agent_kubeconfig_out")]
    pub pull: bool,
    /// With --pull: where to write the agent's kubeconfig for the
    /// federation (mode 0600).
    #[arg(long = "agent-kubeconfig-out", value_name = "FILE", requires = "pull")]
    pub agent_kubeconfig_out: Option<PathBuf>,
    /// Kubeconfig with the member's context (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Server address the federation reaches the member at (default: the
    /// server of the member context).
    #[arg(long = "server-address", value_name = "URL")]
    pub server_address: Option<String>,
    #[command(flatten)]
    pub federation: FederationArgs,
}

/// `ubernetes unjoin`.
#[derive(Debug, Clone, clap::Args)]
pub struct UnjoinArgs {
    /// The member's name in the federation.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Context of the member in --kubeconfig (default: the credentials stored
    /// in the federation's Secret federation-system/NAME).
    #[arg(long = "cluster-context", value_name = "CONTEXT")]
    pub cluster_context: Option<String>,
    /// Kubeconfig with the member's context (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Also delete, in the member, every object the federation propagated
    /// there (labelled federation.kubernetes.io/managed=true).
    #[arg(long = "remove-propagated")]
    pub remove_propagated: bool,
    #[command(flatten)]
    pub federation: FederationArgs,
}

/// The names join uses for member `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinNames {
    /// ServiceAccount in [`NAMESPACE`] of the member.
    pub service_account: String,
    /// Token Secret in [`NAMESPACE`] of the member.
    pub token_secret: String,
    /// ClusterRoleBinding in the member.
    pub binding: String,
    /// Secret in [`NAMESPACE`] of the federation, and the Cluster.
    pub cluster: String,
}

impl JoinNames {
    pub fn new(name: &str) -> Self {
        Self {
            service_account: format!("ubernetes-{name}"),
            token_secret: format!("ubernetes-{name}-token"),
            binding: format!("{MEMBER_ROLE}:{name}"),
            cluster: name.to_string(),
        }
    }
}

// ----------------------------------------------------------------- clients

/// A loaded kubeconfig context.
pub(crate) struct Target {
    pub(crate) client: Client,
    pub(crate) config: Config,
    /// The context's name (for messages).
    pub(crate) context: String,
    /// Where objects are, in progress lines: the member's context name, or
    /// "the federation".
    pub(crate) place: String,
    /// The context's cluster entry (CA, insecure flag).
    pub(crate) cluster: Option<kube::config::Cluster>,
}

fn read_kubeconfig(path: Option<&PathBuf>, flag: &str) -> anyhow::Result<(Kubeconfig, String)> {
    match path {
        Some(p) => Kubeconfig::read_from(p)
            .map(|k| (k, p.display().to_string()))
            .with_context(|| format!("cannot read the kubeconfig {} ({flag})", p.display())),
        None => Kubeconfig::read()
            .map(|k| (k, "$KUBECONFIG or ~/.kube/config".to_string()))
            .with_context(|| {
                format!("cannot read $KUBECONFIG or ~/.kube/config: pass {flag} FILE")
            }),
    }
}

async fn connect(
    kubeconfig: Kubeconfig,
    source: &str,
    context: &str,
    flag: &str,
) -> anyhow::Result<Target> {
    let Some(ctx) = kubeconfig.contexts.iter().find(|c| c.name == context) else {
        let known: Vec<&str> = kubeconfig
            .contexts
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        bail!(
            "context {context:?} not found in {source} (it has: {}): pass {flag} with one of them",
            known.join(", ")
        );
    };
    let cluster_name = ctx
        .context
        .as_ref()
        .map(|c| c.cluster.clone())
        .unwrap_or_default();
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.clone());
    let config = Config::from_custom_kubeconfig(
        kubeconfig,
        &KubeConfigOptions {
            context: Some(context.to_string()),
            ..Default::default()
        },
    )
    .await
    .with_context(|| format!("cannot use context {context:?} of {source}"))?;
    let client = Client::try_from(config.clone())
        .with_context(|| format!("cannot build a client for context {context:?} of {source}"))?;
    Ok(Target {
        client,
        config,
        context: context.to_string(),
        place: context.to_string(),
        cluster,
    })
}

async fn federation(args: &FederationArgs) -> anyhow::Result<Target> {
    let (kc, source) = read_kubeconfig(
        args.federation_kubeconfig.as_ref(),
        "--federation-kubeconfig",
    )?;
    let mut target = connect(
        kc,
        &source,
        &args.federation_context,
        "--federation-context",
    )
    .await?;
    target.place = "the federation".to_string();
    Ok(target)
}

fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

// ------------------------------------------------------------------- apply

/// How an apply changed an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Created,
    Updated,
    Unchanged,
}

impl Outcome {
    fn verb(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// The [`NAMESPACE`] namespace and the ServiceAccount `names.service_account`
/// in it, applied in `target`: the identity both joins start from (in the
/// member for a push join, in the federation for a pull join's agent).
pub(crate) async fn namespace_and_account(
    names: &JoinNames,
    target: &Target,
) -> anyhow::Result<ServiceAccount> {
    let namespaces: Api<Namespace> = Api::all(target.client.clone());
    apply(
        &namespaces,
        NAMESPACE,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        &format!("namespace {NAMESPACE}"),
        target,
    )
    .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(target.client.clone(), NAMESPACE);
    apply(
        &accounts,
        &names.service_account,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": names.service_account, "namespace": NAMESPACE,
                            "labels": {"app.kubernetes.io/managed-by": "ubernetes"}}}),
        &format!("service account {NAMESPACE}/{}", names.service_account),
        target,
    )
    .await
}

/// Server-side apply `obj` (forced, [`FIELD_MANAGER`]) and print what happened.
pub(crate) async fn apply<K>(
    api: &Api<K>,
    name: &str,
    obj: Value,
    what: &str,
    target: &Target,
) -> anyhow::Result<K>
where
    K: Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let fix = |e: kube::Error| {
        let hint = match status_code(&e) {
            Some(401) => format!(
                ": the credentials of context {} are not accepted",
                target.context
            ),
            Some(403) => format!(
                ": the user of context {} may not write it; use a context with cluster-admin rights",
                target.context
            ),
            _ => String::new(),
        };
        anyhow!("cannot apply {what} in {}{hint}: {e}", target.place)
    };
    let before = api.get_opt(name).await.map_err(fix)?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let after = api
        .patch(name, &params, &Patch::Apply(&obj))
        .await
        .map_err(fix)?;
    let outcome = match &before {
        None => Outcome::Created,
        Some(b) if b.meta().resource_version == after.meta().resource_version => Outcome::Unchanged,
        Some(_) => Outcome::Updated,
    };
    println!("{} {what} in {}", outcome.verb(), target.place);
    Ok(after)
}

// -------------------------------------------------------------------- join

/// The member's ClusterRole: everything (cluster-admin in effect).
fn member_role() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": MEMBER_ROLE, "labels": {"app.kubernetes.io/managed-by": "ubernetes"},
                     "annotations": {"ubernetes.io/description":
                        "Rights of the federation in a member cluster: every verb on every resource, as cluster-admin (the federation writes and deletes any federated kind)."}},
        "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}
        ]
    })
}

/// The kubeconfig the federation uses to reach the member.
pub fn member_kubeconfig(
    name: &str,
    server: &str,
    ca_pem: Option<&[u8]>,
    insecure: bool,
    token: &str,
) -> anyhow::Result<String> {
    let mut cluster = serde_json::Map::new();
    cluster.insert("server".into(), json!(server));
    if let Some(ca) = ca_pem {
        cluster.insert(
            "certificate-authority-data".into(),
            json!(STANDARD.encode(ca)),
        );
    } else if insecure {
        cluster.insert("insecure-skip-tls-verify".into(), json!(true));
    }
    let user = format!("ubernetes-{name}");
    let doc = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    });
    serde_saphyr::to_string(&doc).context("cannot write the member kubeconfig as YAML")
}

/// The CA the member context trusts (inline or from its file).
pub(crate) fn context_ca(target: &Target) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(cluster) = &target.cluster else {
        return Ok(None);
    };
    if let Some(data) = cluster
        .certificate_authority_data
        .as_deref()
        .filter(|d| !d.is_empty())
    {
        return STANDARD.decode(data.trim()).map(Some).with_context(|| {
            format!(
                "certificate-authority-data of context {} is not base64",
                target.context
            )
        });
    }
    if let Some(path) = cluster
        .certificate_authority
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        return std::fs::read(path).map(Some).with_context(|| {
            format!(
                "cannot read certificate-authority {path} of context {}",
                target.context
            )
        });
    }
    Ok(None)
}

pub(crate) fn secret_data(secret: &Secret, key: &str) -> Option<Vec<u8>> {
    secret
        .data
        .as_ref()?
        .get(key)
        .map(|b| b.0.clone())
        .filter(|b| !b.is_empty())
}

/// The long-lived token of `account` (in [`NAMESPACE`] of `target`): its
/// token Secret `names.token_secret` applied, then waited for until the
/// token controller filled it in; the Secret and the token.
pub(crate) async fn account_token(
    account: &ServiceAccount,
    names: &JoinNames,
    target: &Target,
) -> anyhow::Result<(Secret, String)> {
    let secrets: Api<Secret> = Api::namespaced(target.client.clone(), NAMESPACE);
    let mut annotations = BTreeMap::new();
    annotations.insert(
        "kubernetes.io/service-account.name",
        names.service_account.clone(),
    );
    if let Some(uid) = account.uid() {
        annotations.insert("kubernetes.io/service-account.uid", uid);
    }
    apply(
        &secrets,
        &names.token_secret,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
               "metadata": {"name": names.token_secret, "namespace": NAMESPACE,
                            "annotations": annotations,
                            "labels": {"app.kubernetes.io/managed-by": "ubernetes"}}}),
        &format!(
            "service account token secret {NAMESPACE}/{}",
            names.token_secret
        ),
        target,
    )
    .await?;
    let secret = wait_for_token(&secrets, names, target).await?;
    let token = secret_data(&secret, "token")
        .and_then(|t| String::from_utf8(t).ok())
        .ok_or_else(|| {
            anyhow!(
                "the token of secret {NAMESPACE}/{} in {} is not text",
                names.token_secret,
                target.context
            )
        })?;
    Ok((secret, token))
}

/// Wait (on a watch) until the token Secret has its token.
async fn wait_for_token(
    secrets: &Api<Secret>,
    names: &JoinNames,
    member: &Target,
) -> anyhow::Result<Secret> {
    let filled = |s: Option<&Secret>| s.is_some_and(|s| secret_data(s, "token").is_some());
    let wait = kube::runtime::wait::await_condition(secrets.clone(), &names.token_secret, filled);
    match tokio::time::timeout(TOKEN_TIMEOUT, wait).await {
        Ok(Ok(Some(secret))) => Ok(secret),
        Ok(Ok(None)) => bail!(
            "secret {NAMESPACE}/{} was deleted in {} before its token was filled in: \
             the member deletes token secrets whose service account {NAMESPACE}/{} is missing; run join again",
            names.token_secret,
            member.context,
            names.service_account
        ),
        Ok(Err(e)) => bail!(
            "cannot watch secret {NAMESPACE}/{} in {}: {e}",
            names.token_secret,
            member.context
        ),
        Err(_) => bail!(
            "the token of secret {NAMESPACE}/{} in {} was not filled in within {}s: \
             is the member's service-account token controller running (kube-controller-manager \
             with --service-account-private-key-file)?",
            names.token_secret,
            member.context,
            TOKEN_TIMEOUT.as_secs()
        ),
    }
}

/// Check that the kubeconfig reaches the member and may list namespaces
/// (retrying while the member's authentication and RBAC catch up).
async fn check_kubeconfig(text: &str, member: &Target) -> anyhow::Result<()> {
    let kc = Kubeconfig::from_yaml(text).context("the member kubeconfig does not parse")?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .context("the member kubeconfig is unusable")?;
    let client = Client::try_from(config).context("the member kubeconfig builds no client")?;
    let api: Api<Namespace> = Api::all(client);
    let deadline = tokio::time::Instant::now() + TOKEN_TIMEOUT;
    loop {
        match api.list(&ListParams::default().limit(1)).await {
            Ok(_) => return Ok(()),
            Err(e) if tokio::time::Instant::now() >= deadline => bail!(
                "the service account's token is not accepted by {}: {e}",
                member.context
            ),
            Err(e) if matches!(status_code(&e), Some(401 | 403)) => {
                // Authentication and RBAC caches of the member lag its writes.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => bail!(
                "cannot reach {} with the service account's token: {e}",
                member.context
            ),
        }
    }
}

/// `ubernetes join`.
pub async fn join(args: JoinArgs) -> anyhow::Result<()> {
    let names = JoinNames::new(&args.name);
    let (Some(cluster_context), false) = (&args.cluster_context, args.pull) else {
        let fed = federation(&args.federation).await?;
        let out = args
            .agent_kubeconfig_out
            .as_deref()
            .ok_or_else(|| anyhow!("--pull needs --agent-kubeconfig-out FILE"))?;
        return crate::pull_join::join_pull(&args.name, &fed, out).await;
    };
    let (kc, source) = read_kubeconfig(args.kubeconfig.as_ref(), "--kubeconfig")?;
    let member = connect(kc, &source, cluster_context, "--cluster-context").await?;
    let fed = federation(&args.federation).await?;
    let client = member.client.clone();

    // 1. In the member.
    let account = namespace_and_account(&names, &member).await?;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    apply(
        &roles,
        MEMBER_ROLE,
        member_role(),
        &format!("cluster role {MEMBER_ROLE}"),
        &member,
    )
    .await?;
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    apply(
        &bindings,
        &names.binding,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": names.binding, "labels": {"app.kubernetes.io/managed-by": "ubernetes"}},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MEMBER_ROLE},
               "subjects": [{"kind": "ServiceAccount", "name": names.service_account, "namespace": NAMESPACE}]}),
        &format!("cluster role binding {}", names.binding),
        &member,
    )
    .await?;
    let (secret, token) = account_token(&account, &names, &member).await?;
    println!(
        "token of service account {NAMESPACE}/{} is ready in {}",
        names.service_account, member.context
    );

    // 2. The kubeconfig the federation will use.
    let server = args
        .server_address
        .clone()
        .unwrap_or_else(|| member.config.cluster_url.to_string())
        .trim_end_matches('/')
        .to_string();
    let ca = match context_ca(&member)? {
        Some(ca) => Some(ca),
        None => secret_data(&secret, "ca.crt"),
    };
    let insecure = member
        .cluster
        .as_ref()
        .and_then(|c| c.insecure_skip_tls_verify)
        == Some(true);
    if ca.is_none() && !insecure && server.starts_with("https://") {
        println!(
            "warning: neither context {} nor secret {NAMESPACE}/{} carries a CA; the federation will use its system roots for {server}",
            member.context, names.token_secret
        );
    }
    let kubeconfig = member_kubeconfig(&args.name, &server, ca.as_deref(), insecure, &token)?;
    check_kubeconfig(&kubeconfig, &member).await?;
    println!("checked the service account's kubeconfig against {server}");

    // 3. In the federation.
    let fed_namespaces: Api<Namespace> = Api::all(fed.client.clone());
    apply(
        &fed_namespaces,
        NAMESPACE,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        &format!("namespace {NAMESPACE}"),
        &fed,
    )
    .await?;
    let fed_secrets: Api<Secret> = Api::namespaced(fed.client.clone(), NAMESPACE);
    apply(
        &fed_secrets,
        &names.cluster,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": names.cluster, "namespace": NAMESPACE,
                            "annotations": {CONTROL_PLANE_ANNOTATION: "true"},
                            "labels": {"app.kubernetes.io/managed-by": "ubernetes"}},
               "data": {"kubeconfig": STANDARD.encode(kubeconfig.as_bytes())}}),
        &format!("secret {NAMESPACE}/{}", names.cluster),
        &fed,
    )
    .await?;
    let clusters: Api<Cluster> = Api::all(fed.client.clone());
    apply(
        &clusters,
        &names.cluster,
        json!({"apiVersion": "federation/v1beta1", "kind": "Cluster",
               "metadata": {"name": names.cluster},
               "spec": {"serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
                        "secretRef": {"name": names.cluster}}}),
        &format!("cluster {}", names.cluster),
        &fed,
    )
    .await?;
    println!("cluster {} joined the federation", names.cluster);
    Ok(())
}

// ------------------------------------------------------------------ unjoin

/// Delete `name`; 404 is fine. Prints a progress line; returns whether it existed.
pub(crate) async fn delete<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    target: &Target,
) -> anyhow::Result<bool>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {
            println!("deleted {what} in {}", target.place);
            Ok(true)
        }
        Err(e) if status_code(&e) == Some(404) => {
            println!("{what} not found in {}", target.place);
            Ok(false)
        }
        Err(e) => Err(anyhow!("cannot delete {what} in {}: {e}", target.place)),
    }
}

/// Whether `resource` of `group` is one kube's events (never propagated).
fn is_events(group: &str, resource: &str) -> bool {
    resource == "events" && (group.is_empty() || group == "events.k8s.io")
}

/// Delete every object labelled [`MANAGED_LABEL`]`=true` of every listable
/// and deletable resource except events: namespaced ones first, then
/// cluster-scoped ones (namespaces last of all).
async fn remove_propagated(member: &Target) -> anyhow::Result<()> {
    let discovery = Discovery::new(member.client.clone())
        .run()
        .await
        .with_context(|| format!("cannot read the API discovery of {}", member.context))?;
    let mut resources = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            if is_events(&ar.group, &ar.plural)
                || !caps.supports_operation(verbs::LIST)
                || !caps.supports_operation(verbs::DELETE)
            {
                continue;
            }
            resources.push((ar, caps.scope));
        }
    }
    // Namespaced first; among cluster-scoped, namespaces last.
    resources.sort_by_key(|(ar, scope)| match scope {
        Scope::Namespaced => 0,
        Scope::Cluster if ar.group.is_empty() && ar.plural == "namespaces" => 2,
        Scope::Cluster => 1,
    });
    let selector = format!("{MANAGED_LABEL}=true");
    for (ar, scope) in resources {
        let all: Api<DynamicObject> = Api::all_with(member.client.clone(), &ar);
        let list = all
            .list(&ListParams::default().labels(&selector))
            .await
            .with_context(|| format!("cannot list {} in {}", ar.plural, member.context))?;
        let mut deleted = 0usize;
        for obj in list.items {
            let name = obj.name_any();
            let api: Api<DynamicObject> = match (&scope, obj.namespace()) {
                (Scope::Namespaced, Some(ns)) => {
                    Api::namespaced_with(member.client.clone(), &ns, &ar)
                }
                _ => Api::all_with(member.client.clone(), &ar),
            };
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => deleted += 1,
                Err(e) if status_code(&e) == Some(404) => {}
                Err(e) => bail!(
                    "cannot delete {} {name} in {}: {e}",
                    ar.plural,
                    member.context
                ),
            }
        }
        if deleted > 0 {
            let kind = if ar.group.is_empty() {
                ar.plural.clone()
            } else {
                format!("{}.{}", ar.plural, ar.group)
            };
            println!(
                "deleted {deleted} {kind} labelled {selector} in {}",
                member.context
            );
        }
    }
    Ok(())
}

/// Remove what join created in the member: the binding, the token
/// Secret, the account, and the ClusterRole when no other binding uses it.
///
/// With the account's own credentials (`own_credentials`) every deletion
/// ends them (the binding carries the rights, the account and its Secret
/// the token), so the deletions are sent together, authorized before any of
/// them takes effect; what is refused is reported with how to remove it.
async fn remove_join_objects(
    member: &Target,
    names: &JoinNames,
    own_credentials: bool,
) -> anyhow::Result<()> {
    let client = member.client.clone();
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
    let others = bindings
        .list(&ListParams::default())
        .await
        .with_context(|| format!("cannot list cluster role bindings in {}", member.context))?;
    let role_in_use = others.items.iter().any(|b| {
        b.role_ref.kind == "ClusterRole"
            && b.role_ref.name == MEMBER_ROLE
            && b.name_any() != names.binding
    });
    let binding = format!("cluster role binding {}", names.binding);
    let token = format!(
        "service account token secret {NAMESPACE}/{}",
        names.token_secret
    );
    let account = format!("service account {NAMESPACE}/{}", names.service_account);
    let role = format!("cluster role {MEMBER_ROLE}");
    let delete_role = async {
        if role_in_use {
            println!(
                "{role} is still bound for other joins in {}",
                member.context
            );
            Ok(false)
        } else {
            delete(&roles, MEMBER_ROLE, &role, member).await
        }
    };
    if !own_credentials {
        delete(&bindings, &names.binding, &binding, member).await?;
        delete(&secrets, &names.token_secret, &token, member).await?;
        delete(&accounts, &names.service_account, &account, member).await?;
        delete_role.await?;
        return Ok(());
    }
    let (b, t, a, r) = tokio::join!(
        delete(&bindings, &names.binding, &binding, member),
        delete(&secrets, &names.token_secret, &token, member),
        delete(&accounts, &names.service_account, &account, member),
        delete_role,
    );
    let mut left = Vec::new();
    for (result, what, kubectl) in [
        (b, &binding, format!("clusterrolebinding {}", names.binding)),
        (
            t,
            &token,
            format!("-n {NAMESPACE} secret {}", names.token_secret),
        ),
        (
            a,
            &account,
            format!("-n {NAMESPACE} serviceaccount {}", names.service_account),
        ),
        (r, &role, format!("clusterrole {MEMBER_ROLE}")),
    ] {
        if let Err(e) = result {
            println!("{what} is left in {}: {e:#}", member.context);
            left.push(kubectl);
        }
    }
    if !left.is_empty() {
        bail!(
            "the federation's credentials ended before everything was removed from {}: \
             remove the rest with a member context (`ubernetes unjoin {} --cluster-context CTX`, \
             or `kubectl --context CTX delete {}`)",
            member.context,
            names.cluster,
            left.join("`, `kubectl --context CTX delete ")
        );
    }
    Ok(())
}

/// `ubernetes unjoin`.
pub async fn unjoin(args: UnjoinArgs) -> anyhow::Result<()> {
    let names = JoinNames::new(&args.name);
    let fed = federation(&args.federation).await?;
    let fed_secrets: Api<Secret> = Api::namespaced(fed.client.clone(), NAMESPACE);
    let stored = fed_secrets.get_opt(&names.cluster).await.with_context(|| {
        format!(
            "cannot read secret {NAMESPACE}/{} in {}",
            names.cluster, fed.context
        )
    })?;
    let clusters: Api<Cluster> = Api::all(fed.client.clone());
    let pull = clusters
        .get_opt(&names.cluster)
        .await
        .ok()
        .flatten()
        .is_some_and(|c| c.spec.is_pull());
    // The Cluster goes first: propagation to the member stops.
    delete(
        &clusters,
        &names.cluster,
        &format!("cluster {}", names.cluster),
        &fed,
    )
    .await?;
    if pull {
        // A pull member: the federation holds no credentials for it; what
        // join made is the agent's identity in the federation.
        crate::pull_join::remove_agent(&names.cluster, &fed).await?;
        if let (Some(ctx), true) = (&args.cluster_context, args.remove_propagated) {
            let (kc, source) = read_kubeconfig(args.kubeconfig.as_ref(), "--kubeconfig")?;
            remove_propagated(&connect(kc, &source, ctx, "--cluster-context").await?).await?;
        }
        println!(
            "cluster {} unjoined; stop its agent in the member",
            names.cluster
        );
        return Ok(());
    }

    let (member, own_credentials) = match &args.cluster_context {
        Some(ctx) => {
            let (kc, source) = read_kubeconfig(args.kubeconfig.as_ref(), "--kubeconfig")?;
            (
                Some(connect(kc, &source, ctx, "--cluster-context").await?),
                false,
            )
        }
        None => {
            match stored.as_ref().and_then(|s| secret_data(s, "kubeconfig")) {
                Some(bytes) => {
                    let text = String::from_utf8(bytes)
                    .map_err(|_| anyhow!("secret {NAMESPACE}/{} holds no text kubeconfig: pass --cluster-context", names.cluster))?;
                    // Read as the federation reads it: inline credentials
                    // only, nothing run, no file read (issue 28).
                    let stored =
                        ubernetes_federation::member_kubeconfig::parse(&text, &names.cluster)
                            .map_err(|e| anyhow!("{e}; or pass --cluster-context"))?;
                    let config = stored.config(None);
                    let client = stored
                        .client(config.clone())
                        .map_err(|e| anyhow!("{e}; or pass --cluster-context"))?;
                    (
                        Some(Target {
                            client,
                            config,
                            context: names.cluster.clone(),
                            place: names.cluster.clone(),
                            cluster: None,
                        }),
                        true,
                    )
                }
                None => (None, false),
            }
        }
    };
    match &member {
        Some(member) => {
            let cleanup = async {
                if args.remove_propagated {
                    remove_propagated(member).await?;
                }
                remove_join_objects(member, &names, own_credentials).await
            };
            if let Err(e) = cleanup.await {
                return Err(e.context(format!(
                    "cluster {} is out of the federation, but its member objects are not all removed; \
                     the secret {NAMESPACE}/{} is kept: run unjoin again when the member is reachable \
                     (or with --cluster-context), or forget the member with \
                     `kubectl --context {} -n {NAMESPACE} delete secret {}`",
                    names.cluster, names.cluster, fed.context, names.cluster
                )));
            }
        }
        None => println!(
            "no credentials for the member (no secret {NAMESPACE}/{} in {} and no --cluster-context): \
             its service account {NAMESPACE}/{} and binding {} are left; pass --cluster-context to remove them",
            names.cluster, fed.context, names.service_account, names.binding
        ),
    }
    delete(
        &fed_secrets,
        &names.cluster,
        &format!("secret {NAMESPACE}/{}", names.cluster),
        &fed,
    )
    .await?;
    println!("cluster {} unjoined", names.cluster);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_names_follow_the_cluster_name() {
        let n = JoinNames::new("m1");
        assert_eq!(n.service_account, "ubernetes-m1");
        assert_eq!(n.token_secret, "ubernetes-m1-token");
        assert_eq!(n.binding, "ubernetes:federation-member:m1");
        assert_eq!(n.cluster, "m1");
    }

    #[test]
    fn the_member_kubeconfig_carries_the_token_server_and_ca() {
        let text = member_kubeconfig("m1", "https://10.0.0.1:6443", Some(b"PEM"), false, "tok")
            .expect("yaml");
        let kc = Kubeconfig::from_yaml(&text).expect("parses as a kubeconfig");
        assert_eq!(kc.current_context.as_deref(), Some("m1"));
        let cluster = kc.clusters[0].cluster.as_ref().expect("cluster");
        assert_eq!(cluster.server.as_deref(), Some("https://10.0.0.1:6443"));
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("UEVN"));
        assert_eq!(cluster.insecure_skip_tls_verify, None);
        let user = kc.auth_infos[0].auth_info.as_ref().expect("user");
        assert!(user.token.is_some());
        assert!(user.client_certificate_data.is_none() && user.client_key_data.is_none());
        assert!(text.contains("tok"));
    }

    #[test]
    fn without_a_ca_an_insecure_member_stays_insecure() {
        let text = member_kubeconfig("m1", "https://h:1", None, true, "t").expect("yaml");
        let kc = Kubeconfig::from_yaml(&text).expect("parses");
        let cluster = kc.clusters[0].cluster.as_ref().expect("cluster");
        assert_eq!(cluster.insecure_skip_tls_verify, Some(true));
        assert!(cluster.certificate_authority_data.is_none());
    }

    #[test]
    fn the_member_role_grants_everything_like_cluster_admin() {
        let role: ClusterRole = serde_json::from_value(member_role()).expect("a ClusterRole");
        let rules = role.rules.expect("rules");
        assert_eq!(rules[0].verbs, vec!["*"]);
        assert_eq!(rules[0].resources, Some(vec!["*".to_string()]));
        assert_eq!(rules[0].api_groups, Some(vec!["*".to_string()]));
        assert_eq!(rules[1].non_resource_urls, Some(vec!["*".to_string()]));
    }

    #[test]
    fn events_are_never_removed_as_propagated() {
        assert!(is_events("", "events"));
        assert!(is_events("events.k8s.io", "events"));
        assert!(!is_events("", "configmaps"));
        assert!(!is_events("example.com", "events"));
    }

    #[tokio::test]
    async fn a_missing_context_is_named_with_the_flag_to_fix_it() {
        let kc = Kubeconfig::from_yaml(
            "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts:\n- name: a\n  context: {cluster: a, user: a}\n",
        )
        .expect("kubeconfig");
        let err = connect(kc, "test.yaml", "missing", "--cluster-context")
            .await
            .err()
            .expect("an error");
        let msg = err.to_string();
        assert!(msg.contains("\"missing\" not found in test.yaml"), "{msg}");
        assert!(msg.contains("it has: a"), "{msg}");
        assert!(msg.contains("--cluster-context"), "{msg}");
    }
}
