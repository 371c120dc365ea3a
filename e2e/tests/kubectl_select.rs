//! kubectl 1.37 selecting and labelling: `label`/`annotate` (add, overwrite,
//! remove), label selectors with every operator, field selectors (generic
//! and per-kind, unknown field refused), `-A`, and chunked lists
//! (`--chunk-size`) that must return every object.

mod kubectl_support;

use anyhow::Result;
use ubernetes_e2e::Server;

use kubectl_support::{header, json, rows};

/// The sorted, non-empty lines of `out`, without the `kube-root-ca.crt`
/// ConfigMap the server publishes in every namespace (as
/// kube-controller-manager does): these tests select among their own.
fn lines(out: &str) -> Vec<String> {
    kubectl_support::lines(out)
        .into_iter()
        .filter(|l| !l.contains("kube-root-ca.crt"))
        .collect()
}

/// `c1..c6` in namespace `sel`, labelled:
/// c1 tier=front env=prod · c2 tier=front · c3 tier=front env=dev ·
/// c4 tier=back · c5 tier=back env=prod · c6 (no labels).
fn labelled() -> Result<Server> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "sel"])?;
    for i in 1..=6 {
        let name = format!("c{i}");
        server.kubectl_ok(&[
            "create",
            "configmap",
            &name,
            "-n",
            "sel",
            &format!("--from-literal=k=v{i}"),
        ])?;
    }
    server.kubectl_ok(&[
        "label",
        "configmap",
        "c1",
        "c2",
        "c3",
        "-n",
        "sel",
        "tier=front",
    ])?;
    server.kubectl_ok(&["label", "configmap", "c4", "c5", "-n", "sel", "tier=back"])?;
    server.kubectl_ok(&["label", "configmap", "c1", "c5", "-n", "sel", "env=prod"])?;
    server.kubectl_ok(&["label", "configmap", "c3", "-n", "sel", "env=dev"])?;
    Ok(server)
}

/// Names selected by `-l <selector>` in namespace `sel`.
fn select(server: &Server, selector: &str) -> Result<Vec<String>> {
    let out = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "-l",
        selector,
        "-o",
        "name",
    ])?;
    Ok(lines(&out)
        .into_iter()
        .map(|l| l.trim_start_matches("configmap/").to_string())
        .collect())
}

#[test]
fn label_selectors_support_every_operator() -> Result<()> {
    let server = labelled()?;
    assert_eq!(select(&server, "tier=front")?, ["c1", "c2", "c3"]);
    assert_eq!(select(&server, "tier==back")?, ["c4", "c5"]);
    // != also selects objects without the key.
    assert_eq!(select(&server, "tier!=front")?, ["c4", "c5", "c6"]);
    assert_eq!(select(&server, "env in (prod,dev)")?, ["c1", "c3", "c5"]);
    assert_eq!(
        select(&server, "env notin (prod)")?,
        ["c2", "c3", "c4", "c6"]
    );
    assert_eq!(select(&server, "env")?, ["c1", "c3", "c5"]);
    assert_eq!(select(&server, "!env")?, ["c2", "c4", "c6"]);
    // Requirements are ANDed.
    assert_eq!(select(&server, "tier=front,!env")?, ["c2"]);
    assert_eq!(
        select(&server, "tier in (front,back),env=prod")?,
        ["c1", "c5"]
    );
    assert!(select(&server, "tier=nowhere")?.is_empty());
    // A malformed selector is the server's 400 (kubectl passes it through).
    let err = server.kubectl_err(&["get", "configmaps", "-n", "sel", "-l", "tier in front"])?;
    assert!(
        err.contains("BadRequest") || err.contains("unable to parse requirement"),
        "{err}"
    );
    Ok(())
}

#[test]
fn label_and_annotate_add_overwrite_and_remove_keys() -> Result<()> {
    let server = labelled()?;

    // Changing an existing label needs --overwrite.
    let err = server.kubectl_err(&["label", "configmap", "c1", "-n", "sel", "tier=back"])?;
    assert!(
        err.contains("already has a value (front), and --overwrite is false"),
        "{err}"
    );
    let out = server.kubectl_ok(&[
        "label",
        "configmap",
        "c1",
        "-n",
        "sel",
        "tier=back",
        "--overwrite",
    ])?;
    assert_eq!(out.trim(), "configmap/c1 labeled");
    let c1 = json(&server, &["get", "configmap", "c1", "-n", "sel"])?;
    assert_eq!(c1["metadata"]["labels"]["tier"], "back");

    // `key-` removes.
    server.kubectl_ok(&["label", "configmap", "c1", "-n", "sel", "env-"])?;
    let c1 = json(&server, &["get", "configmap", "c1", "-n", "sel"])?;
    assert!(c1["metadata"]["labels"].get("env").is_none(), "{c1}");
    assert_eq!(select(&server, "!env")?, ["c1", "c2", "c4", "c6"]);

    // An invalid label value (kubectl checks its own arguments, so send it
    // in a patch) is the server's validation error.
    let err = server.kubectl_err(&[
        "patch",
        "configmap",
        "c2",
        "-n",
        "sel",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"bad":"-x-"}}}"#,
    ])?;
    assert!(
        err.contains("metadata.labels: Invalid value: \"-x-\""),
        "{err}"
    );

    // Annotations: add (with --all over a selector), read back, remove.
    let out = server.kubectl_ok(&[
        "annotate",
        "configmaps",
        "-n",
        "sel",
        "-l",
        "tier=front",
        "owner=team-a",
    ])?;
    assert_eq!(
        lines(&out),
        ["configmap/c2 annotated", "configmap/c3 annotated"]
    );
    let jp = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "--field-selector",
        "metadata.name!=kube-root-ca.crt",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.owner};{end}",
    ])?;
    assert_eq!(jp, "c1=;c2=team-a;c3=team-a;c4=;c5=;c6=;");
    server.kubectl_ok(&[
        "annotate",
        "configmap",
        "c2",
        "-n",
        "sel",
        "owner=team-b",
        "--overwrite",
    ])?;
    server.kubectl_ok(&["annotate", "configmap", "c3", "-n", "sel", "owner-"])?;
    let jp = server.kubectl_ok(&[
        "get",
        "configmaps",
        "c2",
        "c3",
        "-n",
        "sel",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.owner};{end}",
    ])?;
    assert_eq!(jp, "c2=team-b;c3=;");

    // Labels on a cluster-scoped object.
    server.kubectl_ok(&["label", "namespace", "sel", "purpose=e2e"])?;
    let ns = server.kubectl_ok(&["get", "namespaces", "-l", "purpose=e2e", "-o", "name"])?;
    assert_eq!(ns.trim(), "namespace/sel");
    Ok(())
}

#[test]
fn field_selectors_filter_by_generic_and_per_kind_fields() -> Result<()> {
    let server = labelled()?;
    server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "opaque1",
        "-n",
        "sel",
        "--from-literal=a=b",
    ])?;
    server.kubectl_ok(&[
        "create",
        "secret",
        "docker-registry",
        "pull1",
        "-n",
        "sel",
        "--docker-server=r.example.com",
        "--docker-username=u",
        "--docker-password=p",
    ])?;

    let by_name = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "--field-selector",
        "metadata.name=c3",
        "-o",
        "name",
    ])?;
    assert_eq!(by_name.trim(), "configmap/c3");
    let not_name = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "--field-selector",
        "metadata.name!=c3",
        "-o",
        "name",
    ])?;
    assert_eq!(lines(&not_name).len(), 5, "{not_name}");
    let by_ns = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-A",
        "--field-selector",
        "metadata.namespace=sel",
        "-o",
        "name",
    ])?;
    assert_eq!(lines(&by_ns).len(), 6, "{by_ns}");
    // Field and label selectors together.
    let both = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "-l",
        "tier=front",
        "--field-selector",
        "metadata.name!=c1",
        "-o",
        "name",
    ])?;
    assert_eq!(lines(&both), ["configmap/c2", "configmap/c3"]);

    // Secrets by type.
    let opaque = server.kubectl_ok(&[
        "get",
        "secrets",
        "-n",
        "sel",
        "--field-selector",
        "type=Opaque",
        "-o",
        "name",
    ])?;
    assert_eq!(lines(&opaque), ["secret/opaque1"]);
    let docker = server.kubectl_ok(&[
        "get",
        "secrets",
        "-n",
        "sel",
        "--field-selector",
        "type=kubernetes.io/dockerconfigjson",
        "-o",
        "name",
    ])?;
    assert_eq!(lines(&docker), ["secret/pull1"]);

    // Namespaces by phase.
    let active = server.kubectl_ok(&[
        "get",
        "namespaces",
        "--field-selector",
        "status.phase=Active",
        "-o",
        "name",
    ])?;
    for ns in [
        "namespace/default",
        "namespace/kube-system",
        "namespace/sel",
    ] {
        assert!(
            lines(&active).iter().any(|l| l == ns),
            "{ns} missing from {active}"
        );
    }
    let terminating = server.kubectl_ok(&[
        "get",
        "namespaces",
        "--field-selector",
        "status.phase=Terminating",
        "-o",
        "name",
    ])?;
    assert!(terminating.trim().is_empty(), "{terminating}");

    // An unknown field is a 400 naming the field.
    let err = server.kubectl_err(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "--field-selector",
        "foo=bar",
    ])?;
    assert!(err.contains("(BadRequest)"), "{err}");
    assert!(
        err.contains("\"foo\" is not a known field selector"),
        "{err}"
    );
    let err = server.kubectl_err(&[
        "get",
        "secrets",
        "-n",
        "sel",
        "--field-selector",
        "spec.type=x",
    ])?;
    assert!(
        err.contains("field label not supported: spec.type"),
        "{err}"
    );
    Ok(())
}

#[test]
fn all_namespaces_lists_across_namespaces_with_a_namespace_column() -> Result<()> {
    let server = labelled()?;
    server.kubectl_ok(&["create", "namespace", "other"])?;
    server.kubectl_ok(&["create", "configmap", "elsewhere", "-n", "other"])?;
    server.kubectl_ok(&[
        "label",
        "configmap",
        "elsewhere",
        "-n",
        "other",
        "tier=front",
    ])?;

    let all = server.kubectl_ok(&["get", "configmaps", "-A", "-l", "tier=front"])?;
    assert_eq!(header(&all), "NAMESPACE NAME DATA AGE", "{all}");
    let pairs: Vec<String> = rows(&all)
        .iter()
        .map(|r| r.split(' ').take(2).collect::<Vec<_>>().join("/"))
        .collect();
    assert_eq!(
        pairs,
        ["other/elsewhere", "sel/c1", "sel/c2", "sel/c3"],
        "{all}"
    );

    let by_json = json(
        &server,
        &["get", "configmaps", "--all-namespaces", "-l", "tier"],
    )?;
    let n = by_json["items"].as_array().map(Vec::len);
    assert_eq!(n, Some(6), "{by_json}");

    // -A also works for cluster-wide listing of services (default/kubernetes).
    let svc = server.kubectl_ok(&["get", "services", "-A", "-o", "name"])?;
    assert!(
        lines(&svc).iter().any(|l| l == "service/kubernetes"),
        "{svc}"
    );
    Ok(())
}

#[test]
fn chunked_lists_return_every_object() -> Result<()> {
    let server = labelled()?;
    for i in 7..=11 {
        server.kubectl_ok(&["create", "configmap", &format!("c{i}"), "-n", "sel"])?;
    }
    let want: Vec<String> = {
        let mut v: Vec<String> = (1..=11).map(|i| format!("configmap/c{i}")).collect();
        v.sort();
        v
    };

    // -v=6 shows each page request: limit=2, then continue tokens.
    let out = server.kubectl(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "--chunk-size=2",
        "-o",
        "name",
        "-v=6",
    ])?;
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(lines(&stdout), want, "{stdout}");
    let pages = stderr.lines().filter(|l| l.contains("limit=2")).count();
    assert_eq!(
        pages, 6,
        "11 objects in pages of 2 take 6 requests:\n{stderr}"
    );
    assert_eq!(
        stderr.lines().filter(|l| l.contains("continue=")).count(),
        5,
        "{stderr}"
    );

    // The table printer over pages, with a label selector (filtering before paging).
    let table = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "sel",
        "--chunk-size=2",
        "-l",
        "!env",
    ])?;
    assert_eq!(header(&table), "NAME DATA AGE");
    let names: Vec<String> = rows(&table)
        .iter()
        .map(|r| r.split(' ').next().unwrap_or_default().to_string())
        .filter(|name| name != "kube-root-ca.crt")
        .collect();
    let mut want_rows: Vec<String> = ["c2", "c4", "c6", "c7", "c8", "c9", "c10", "c11"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    want_rows.sort();
    let mut names = names;
    names.sort();
    assert_eq!(names, want_rows, "{table}");

    // Cluster-scoped, across all namespaces, with json output.
    let all = json(&server, &["get", "configmaps", "-A", "--chunk-size=3"])?;
    let ours = all["items"].as_array().map(|items| {
        items
            .iter()
            .filter(|cm| cm["metadata"]["name"] != "kube-root-ca.crt")
            .count()
    });
    assert_eq!(ours, Some(11), "{all}");
    Ok(())
}
