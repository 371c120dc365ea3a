//! CustomResourceDefinitions end to end with kubectl 1.37: a CronTab CRD
//! (short name, printer columns, status + scale subresources, a schema with
//! required/enum/pattern/default) becomes Established and served
//! (discovery, tables, validation, strict unknown fields, pruning,
//! defaults, explain, patches, scale), survives a restart, and deleting it
//! deletes its objects.

mod kubectl_support;

use std::time::Duration;

use anyhow::{Context, Result};
use ubernetes_e2e::{Server, eventually};

use kubectl_support::{header, json, rows};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.labelSelector
    additionalPrinterColumns:
    - name: Spec
      type: string
      description: The cron spec defining the interval a CronJob is run
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The desired schedule of the CronTab.
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
              policy:
                type: string
                enum: [Allow, Forbid, Replace]
                default: Allow
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              replicas:
                type: integer
              labelSelector:
                type: string
"#;

const CRONTAB: &str = r#"
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-new-cron-object
  namespace: default
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  extra:
    anything: goes
"#;

fn established(server: &Server) -> Result<()> {
    server.kubectl_stdin_ok(&["apply", "-f", "-"], CRD)?;
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/crontabs.stable.example.com",
    ])?;
    Ok(())
}

#[test]
fn a_crontab_crd_is_served_validated_printed_and_cleaned_up() -> Result<()> {
    let mut server = Server::start()?;
    established(&server)?;
    let crd = json(&server, &["get", "crd", "crontabs.stable.example.com"])?;
    assert!(
        crd["metadata"]["finalizers"].as_array().is_some_and(|f| f
            .iter()
            .any(|x| x == "customresourcecleanup.apiextensions.k8s.io")),
        "{crd}"
    );
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");

    let resources = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_ok(&["api-resources"])?;
        Ok(out
            .lines()
            .any(|l| l.starts_with("crontabs"))
            .then_some(out))
    })?;
    let line = resources
        .lines()
        .find(|l| l.starts_with("crontabs"))
        .context("crontabs line")?;
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words,
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    );

    server.kubectl_stdin_ok(&["apply", "-f", "-"], CRONTAB)?;
    // Re-applying an existing custom object: kubectl uses a merge patch
    // (no strategic-merge metadata for custom kinds, as kube-apiserver).
    let changed = CRONTAB.replace("my-awesome-cron-image", "my-better-cron-image");
    let out = server.kubectl_stdin_ok(&["apply", "-f", "-"], &changed)?;
    assert!(out.contains("configured"), "{out}");
    let again = server.kubectl_stdin_ok(&["apply", "-f", "-"], &changed)?;
    assert!(again.contains("unchanged"), "{again}");
    // Server-side apply on a custom resource, against the CRD's schema.
    let ssa = changed.replace("my-better-cron-image", "my-ssa-cron-image");
    let out = server.kubectl_stdin_ok(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &ssa,
    )?;
    assert!(out.contains("serverside-applied"), "{out}");
    let image = server.kubectl_ok(&[
        "get",
        "ct",
        "my-new-cron-object",
        "-o",
        "jsonpath={.spec.image}",
    ])?;
    assert_eq!(image, "my-ssa-cron-image");
    // Strict by default: the schema's unknown fields are refused.
    let unknown = CRONTAB
        .replace("my-new-cron-object", "pruned")
        .replace("  image: my-awesome", "  foo: bar\n  image: my-awesome");
    let out = server.kubectl_stdin(&["apply", "-f", "-"], &unknown)?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown field \"spec.foo\""), "{err}");
    // --validate=warn: accepted with a warning, pruned.
    let warned = unknown.replace("name: pruned", "name: warned");
    let out = server.kubectl_stdin(&["apply", "--validate=warn", "-f", "-"], &warned)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Warning: unknown field \"spec.foo\""), "{err}");
    let ct = json(&server, &["get", "ct", "warned"])?;
    assert!(ct["spec"].get("foo").is_none(), "{ct}");
    server.kubectl_ok(&["delete", "ct", "warned"])?;
    // --validate=false: pruned silently.
    server.kubectl_stdin_ok(&["apply", "--validate=false", "-f", "-"], &unknown)?;
    let ct = json(&server, &["get", "ct", "pruned"])?;
    assert!(ct["spec"].get("foo").is_none(), "{ct}");
    // Preserved unknown fields stay; defaults are filled in.
    assert_eq!(ct["spec"]["extra"]["anything"], "goes");
    assert_eq!(ct["spec"]["replicas"], 1);
    assert_eq!(ct["spec"]["policy"], "Allow");

    // Printer columns.
    let table = server.kubectl_ok(&["get", "ct"])?;
    let h: Vec<String> = header(&table)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(h, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    let r = rows(&table);
    assert_eq!(r.len(), 2, "{table}");
    assert!(
        r[0].starts_with("my-new-cron-object * * * * */5 1 "),
        "{table}"
    );

    // Schema validation messages.
    let bad = CRONTAB
        .replace("my-new-cron-object", "bad")
        .replace("\"* * * * */5\"", "\"not a cron\"")
        + "  replicas: 11\n  policy: Sometimes\n";
    let out = server.kubectl_stdin(&["apply", "-f", "-"], &bad)?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The CronTab \"bad\" is invalid"), "{err}");
    assert!(
        err.contains("spec.cronSpec: Invalid value: \"not a cron\""),
        "{err}"
    );
    assert!(
        err.contains("spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"),
        "{err}"
    );
    assert!(
        err.contains("spec.policy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\""),
        "{err}"
    );
    let missing = CRONTAB
        .replace("my-new-cron-object", "bad")
        .replace("  cronSpec: \"* * * * */5\"\n", "");
    let out = server.kubectl_stdin(&["apply", "-f", "-"], &missing)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("spec.cronSpec: Required value"), "{err}");

    // explain reads the published schema.
    let explain = server.kubectl_ok(&["explain", "crontab.spec"])?;
    assert!(explain.contains("KIND:       CronTab"), "{explain}");
    assert!(explain.contains("cronSpec"), "{explain}");
    assert!(
        explain.contains("The desired schedule of the CronTab."),
        "{explain}"
    );

    // Patches: strategic merge is not supported for custom resources.
    let err = server.kubectl_err(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=strategic",
        "-p",
        r#"{"spec":{"image":"x"}}"#,
    ])?;
    assert!(
        err.contains(
            "application/strategic-merge-patch+json is not supported by stable.example.com/v1, Kind=CronTab: the body of the request was in an unknown format"
        ),
        "{err}"
    );
    server.kubectl_ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"spec":{"image":"patched"}}"#,
    ])?;
    let ct = json(&server, &["get", "ct", "my-new-cron-object"])?;
    assert_eq!(ct["spec"]["image"], "patched");

    // The scale subresource.
    server.kubectl_ok(&["scale", "ct", "my-new-cron-object", "--replicas=3"])?;
    let ct = json(&server, &["get", "ct", "my-new-cron-object"])?;
    assert_eq!(ct["spec"]["replicas"], 3);

    // A restart keeps serving the CRD's objects.
    server.restart()?;
    let ct = json(&server, &["get", "ct", "my-new-cron-object"])?;
    assert_eq!(ct["spec"]["replicas"], 3);
    let table = server.kubectl_ok(&["get", "ct"])?;
    assert!(header(&table).contains("SPEC"), "{table}");

    // Deleting the CRD deletes its objects, then the CRD.
    server.kubectl_ok(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--timeout=30s",
    ])?;
    eventually(Duration::from_secs(20), || {
        // A fresh discovery cache, as a new kubectl session would have.
        let cache = tempfile::tempdir()?;
        let cache_dir = format!("--cache-dir={}", cache.path().display());
        let out = server.kubectl(&[&cache_dir, "get", "ct"])?;
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        Ok((!out.status.success()
            && err.contains("the server doesn't have a resource type \"ct\""))
        .then_some(()))
    })?;
    let err = server.kubectl_err(&["get", "crd", "crontabs.stable.example.com"])?;
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );

    // A CRD of the same name comes back empty.
    established(&server)?;
    let out = eventually(Duration::from_secs(10), || {
        let out = server.kubectl(&["get", "ct", "-A"])?;
        Ok(out.status.success().then_some(out))
    })?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("No resources found"), "{err}");
    Ok(())
}

const TWO_VERSIONS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.multi.example.com
spec:
  group: multi.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  conversion: {strategy: None}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
"#;

/// A CRD served in two versions with `None` conversion: one object, seen
/// through either version with that version's apiVersion; a change made
/// through one version is seen through the other.
#[test]
fn every_served_version_of_a_crd_serves_the_same_objects() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], TWO_VERSIONS)?;
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.multi.example.com",
        "--timeout=30s",
    ])?;
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: multi.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {size: 1}\n",
    )?;
    let v2: serde_json::Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/multi.example.com/v2/namespaces/default/widgets/w1",
    ])?)?;
    assert_eq!(v2["apiVersion"], "multi.example.com/v2");
    assert_eq!(v2["spec"]["size"], 1);
    // A merge patch through v2 is seen through v1.
    server.kubectl_ok(&[
        "patch",
        "widgets.v2.multi.example.com",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":2}}"#,
    ])?;
    let v1: serde_json::Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/multi.example.com/v1/namespaces/default/widgets/w1",
    ])?)?;
    assert_eq!(v1["apiVersion"], "multi.example.com/v1");
    assert_eq!(v1["spec"]["size"], 2);
    // Both versions list the one object.
    for v in ["v1", "v2"] {
        let list: serde_json::Value = serde_json::from_str(&server.kubectl_ok(&[
            "get",
            "--raw",
            &format!("/apis/multi.example.com/{v}/namespaces/default/widgets"),
        ])?)?;
        assert_eq!(
            list["items"].as_array().map(Vec::len),
            Some(1),
            "{v}: {list}"
        );
        assert_eq!(
            list["items"][0]["apiVersion"],
            format!("multi.example.com/{v}")
        );
    }
    Ok(())
}
