//! kube-apiserver's defaulting of the types embedded in many kinds
//! (`pkg/apis/core/v1/defaults.go` and the generated defaulters): pod specs
//! and templates, containers, probes, volumes, persistent volume claims.

use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, Volume,
};
use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, EnvVar};

/// The tag of an image reference as `parsers.ParseImageName` finds it:
/// `latest` when neither tag nor digest is given.
pub fn image_tag(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, tag)) => tag.to_string(),
        None if digest => String::new(),
        None => "latest".to_string(),
    }
}

/// `SetDefaults_Container` plus ports and probes.
pub fn container(c: &mut Container) {
    if c.image_pull_policy.as_deref().unwrap_or("").is_empty() {
        let tag = image_tag(c.image.as_deref().unwrap_or(""));
        c.image_pull_policy = Some(
            if tag == "latest" {
                "Always"
            } else {
                "IfNotPresent"
            }
            .into(),
        );
    }
    if c.termination_message_path
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        c.termination_message_path = Some("/dev/termination-log".into());
    }
    if c.termination_message_policy
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        c.termination_message_policy = Some("File".into());
    }
    // A non-pointer struct in Go: kube-apiserver always shows `resources: {}`.
    c.resources.get_or_insert_with(Default::default);
    for p in c.ports.iter_mut().flatten() {
        if p.protocol.as_deref().unwrap_or("").is_empty() {
            p.protocol = Some("TCP".into());
        }
    }
    for probe in [
        &mut c.liveness_probe,
        &mut c.readiness_probe,
        &mut c.startup_probe,
    ]
    .into_iter()
    .flatten()
    {
        self::probe(probe);
    }
    if let Some(l) = &mut c.lifecycle {
        for h in [&mut l.post_start, &mut l.pre_stop].into_iter().flatten() {
            if let Some(g) = &mut h.http_get {
                http_get(&mut g.path, &mut g.scheme);
            }
        }
    }
    for e in c.env.iter_mut().flatten() {
        env_var(e);
    }
}

fn env_var(e: &mut EnvVar) {
    if let Some(f) = e.value_from.as_mut().and_then(|v| v.field_ref.as_mut())
        && f.api_version.as_deref().unwrap_or("").is_empty()
    {
        f.api_version = Some("v1".into());
    }
}

fn http_get(path: &mut Option<String>, scheme: &mut Option<String>) {
    if path.as_deref().unwrap_or("").is_empty() {
        *path = Some("/".into());
    }
    if scheme.as_deref().unwrap_or("").is_empty() {
        *scheme = Some("HTTP".into());
    }
}

/// `SetDefaults_Probe` and its handlers.
pub fn probe(p: &mut Probe) {
    for (field, dflt) in [
        (&mut p.timeout_seconds, 1),
        (&mut p.period_seconds, 10),
        (&mut p.success_threshold, 1),
        (&mut p.failure_threshold, 3),
    ] {
        if field.unwrap_or(0) == 0 {
            *field = Some(dflt);
        }
    }
    if let Some(g) = &mut p.http_get {
        http_get(&mut g.path, &mut g.scheme);
    }
    if let Some(g) = &mut p.grpc {
        g.service.get_or_insert_with(String::new);
    }
}

/// `SetDefaults_Volume` and the volume sources' modes.
pub fn volume(v: &mut Volume) {
    let any = {
        let json = serde_json::to_value(&*v).unwrap_or_default();
        json.as_object()
            .is_some_and(|m| m.keys().any(|k| k != "name"))
    };
    if !any {
        v.empty_dir = Some(EmptyDirVolumeSource::default());
    }
    if let Some(s) = &mut v.secret {
        s.default_mode.get_or_insert(420);
    }
    if let Some(s) = &mut v.config_map {
        s.default_mode.get_or_insert(420);
    }
    if let Some(s) = &mut v.downward_api {
        s.default_mode.get_or_insert(420);
        for i in s.items.iter_mut().flatten() {
            if let Some(f) = &mut i.field_ref
                && f.api_version.as_deref().unwrap_or("").is_empty()
            {
                f.api_version = Some("v1".into());
            }
        }
    }
    if let Some(s) = &mut v.projected {
        s.default_mode.get_or_insert(420);
        for src in s.sources.iter_mut().flatten() {
            if let Some(t) = &mut src.service_account_token {
                t.expiration_seconds.get_or_insert(3600);
            }
            if let Some(d) = &mut src.downward_api {
                for i in d.items.iter_mut().flatten() {
                    if let Some(f) = &mut i.field_ref
                        && f.api_version.as_deref().unwrap_or("").is_empty()
                    {
                        f.api_version = Some("v1".into());
                    }
                }
            }
        }
    }
    if let Some(s) = &mut v.host_path {
        s.type_.get_or_insert_with(String::new);
    }
    if let Some(s) = &mut v.iscsi
        && s.iscsi_interface.as_deref().unwrap_or("").is_empty()
    {
        s.iscsi_interface = Some("default".into());
    }
    if let Some(s) = &mut v.rbd {
        s.pool.get_or_insert_with(|| "rbd".into());
        s.user.get_or_insert_with(|| "admin".into());
        s.keyring.get_or_insert_with(|| "/etc/ceph/keyring".into());
    }
    if let Some(s) = &mut v.azure_disk {
        s.caching_mode.get_or_insert_with(|| "ReadWrite".into());
        s.fs_type.get_or_insert_with(|| "ext4".into());
        s.read_only.get_or_insert(false);
        s.kind.get_or_insert_with(|| "Shared".into());
    }
    if let Some(s) = &mut v.scale_io {
        s.storage_mode
            .get_or_insert_with(|| "ThinProvisioned".into());
        s.fs_type.get_or_insert_with(|| "xfs".into());
    }
    if let Some(e) = &mut v.ephemeral
        && let Some(t) = &mut e.volume_claim_template
    {
        pvc_spec(&mut t.spec);
    }
}

/// `SetDefaults_PodSpec` (for every pod spec, templates included) plus the
/// defaults of its containers and volumes, and the `serviceAccount` /
/// `serviceAccountName` conversion kube-apiserver does.
pub fn pod_spec(s: &mut PodSpec) {
    if s.dns_policy.as_deref().unwrap_or("").is_empty() {
        s.dns_policy = Some("ClusterFirst".into());
    }
    if s.restart_policy.as_deref().unwrap_or("").is_empty() {
        s.restart_policy = Some("Always".into());
    }
    s.security_context
        .get_or_insert_with(PodSecurityContext::default);
    s.termination_grace_period_seconds.get_or_insert(30);
    if s.scheduler_name.as_deref().unwrap_or("").is_empty() {
        s.scheduler_name = Some("default-scheduler".into());
    }
    // Conversion: the deprecated `serviceAccount` mirrors `serviceAccountName`.
    let sa_name = s.service_account_name.as_deref().unwrap_or("");
    if sa_name.is_empty()
        && let Some(sa) = s.service_account.as_deref().filter(|x| !x.is_empty())
    {
        s.service_account_name = Some(sa.to_string());
    }
    if let Some(n) = s.service_account_name.as_deref().filter(|x| !x.is_empty()) {
        s.service_account = Some(n.to_string());
    }
    for c in s.containers.iter_mut() {
        container(c);
    }
    for c in s.init_containers.iter_mut().flatten() {
        container(c);
    }
    for v in s.volumes.iter_mut().flatten() {
        volume(v);
    }
}

/// A pod template inside a controller: the pod spec's defaults.
pub fn pod_template(t: &mut PodTemplateSpec) {
    pod_spec(t.spec.get_or_insert_with(PodSpec::default));
}

/// `SetDefaults_PersistentVolumeClaimSpec`.
pub fn pvc_spec(s: &mut PersistentVolumeClaimSpec) {
    s.volume_mode.get_or_insert_with(|| "Filesystem".into());
}

/// `SetDefaults_PersistentVolumeClaim` (also for StatefulSet claim templates).
pub fn pvc(p: &mut PersistentVolumeClaim) {
    pvc_spec(p.spec.get_or_insert_with(Default::default));
    let status = p.status.get_or_insert_with(Default::default);
    if status.phase.as_deref().unwrap_or("").is_empty() {
        status.phase = Some("Pending".into());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn untagged_and_latest_images_pull_always() {
        assert_eq!(image_tag("nginx"), "latest");
        assert_eq!(image_tag("nginx:latest"), "latest");
        assert_eq!(image_tag("registry:5000/nginx"), "latest");
        assert_eq!(image_tag("registry:5000/nginx:1.25"), "1.25");
        assert_eq!(image_tag("nginx@sha256:abc"), "");
    }

    #[test]
    fn tagged_container_defaults_to_if_not_present() {
        let mut c = Container {
            name: "a".into(),
            image: Some("nginx:1.25".into()),
            ..Default::default()
        };
        container(&mut c);
        assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(
            c.termination_message_path.as_deref(),
            Some("/dev/termination-log")
        );
        assert_eq!(c.termination_message_policy.as_deref(), Some("File"));
    }

    #[test]
    fn a_volume_without_source_becomes_an_empty_dir() {
        let mut v = Volume {
            name: "scratch".into(),
            ..Default::default()
        };
        volume(&mut v);
        assert!(v.empty_dir.is_some());
    }
}
