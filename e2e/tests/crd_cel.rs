//! CEL validation rules (`x-kubernetes-validations`) end to end with
//! kubectl against a real server: custom resources accepted and rejected
//! with kube-apiserver's messages (`message`, `messageExpression`,
//! `reason`, the default `failed rule: ...`, values shown for scalars), a
//! transition rule with `oldSelf` on update, a rule on the status
//! subresource, the runtime cost limit of the conformance spec, and CRDs
//! whose rules don't compile (or cost too much) refused.

use anyhow::Result;
use ubernetes_e2e::Server;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.cel.example.com
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.replicas"
              message: "replicas must be at least minReplicas"
            - rule: "self.replicas <= 10"
              messageExpression: "'replicas ' + string(self.replicas) + ' is more than 10'"
              reason: FieldValueForbidden
            properties:
              replicas: {type: integer}
              minReplicas: {type: integer}
              version:
                type: integer
                x-kubernetes-validations:
                - rule: "self >= oldSelf"
                  message: "version may not decrease"
              quota:
                type: string
                x-kubernetes-validations:
                - rule: "isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))"
              largeArray:
                type: array
                maxItems: 725
                items: {type: integer}
                x-kubernetes-validations:
                - rule: "self.all(x, self.all(y, y == x))"
          status:
            type: object
            properties:
              health:
                type: string
                x-kubernetes-validations:
                - rule: "self in ['ok', 'unhealthy']"
"#;

fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: cel.example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: default\nspec: {spec}\n"
    )
}

fn create_err(server: &Server, name: &str, spec: &str) -> Result<String> {
    let out = server.kubectl_stdin(&["create", "-f", "-"], &widget(name, spec))?;
    assert!(!out.status.success(), "{name} was accepted");
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn cel_rules_accept_and_reject_custom_resources_with_kubes_messages() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], CRD)?;
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/widgets.cel.example.com",
    ])?;

    // Accepted.
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &widget(
            "good",
            "{replicas: 3, minReplicas: 1, version: 2, quota: 500Mi, largeArray: [2, 2]}",
        ),
    )?;

    // `message`, and `messageExpression` with reason FieldValueForbidden.
    let err = create_err(&server, "bad", "{replicas: 12, minReplicas: 20}")?;
    assert!(err.contains("The Widget \"bad\" is invalid"), "{err}");
    assert!(
        err.contains("spec: Invalid value: replicas must be at least minReplicas"),
        "{err}"
    );
    assert!(
        err.contains("spec: Forbidden: replicas 12 is more than 10"),
        "{err}"
    );

    // The default message; a scalar's value is shown.
    let err = create_err(
        &server,
        "quota",
        "{replicas: 1, minReplicas: 1, quota: 2Gi}",
    )?;
    assert!(
        err.contains(
            "spec.quota: Invalid value: \"2Gi\": failed rule: isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))"
        ),
        "{err}"
    );

    // A transition rule: not run on create, run on update against the old value.
    let patch = |v: i64| {
        server.kubectl(&[
            "patch",
            "widget",
            "good",
            "--type=merge",
            "-p",
            &format!("{{\"spec\":{{\"version\":{v}}}}}"),
        ])
    };
    let out = patch(1)?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.version: Invalid value: 1: version may not decrease"),
        "{err}"
    );
    assert!(patch(3)?.status.success());

    // Rules apply to status updates too.
    let status = |h: &str| {
        server.kubectl(&[
            "patch",
            "widget",
            "good",
            "--subresource=status",
            "--type=merge",
            "-p",
            &format!("{{\"status\":{{\"health\":\"{h}\"}}}}"),
        ])
    };
    let out = status("bad")?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "status.health: Invalid value: \"bad\": failed rule: self in ['ok', 'unhealthy']"
        ),
        "{err}"
    );
    assert!(status("ok")?.status.success());

    // The conformance spec's runtime cost limit: 725 elements compared pairwise.
    let many = vec!["20"; 725].join(", ");
    let err = create_err(
        &server,
        "costly",
        &format!("{{replicas: 1, minReplicas: 1, largeArray: [{many}]}}"),
    )?;
    assert!(
        err.contains("spec.largeArray: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.all(y, y == x))"),
        "{err}"
    );
    Ok(())
}

fn crd_with_rule(name: &str, spec_schema: &str) -> String {
    format!(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {name}s.cel.example.com
spec:
  group: cel.example.com
  scope: Namespaced
  names: {{plural: {name}s, singular: {name}, kind: K{name}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {spec_schema}
"#
    )
}

#[test]
fn crds_with_rules_that_do_not_compile_or_cost_too_much_are_refused() -> Result<()> {
    let server = Server::start()?;
    let refused = |crd: String| -> Result<String> {
        let out = server.kubectl_stdin(&["create", "-f", "-"], &crd)?;
        assert!(!out.status.success(), "accepted: {crd}");
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    };

    let err = refused(crd_with_rule(
        "undefined",
        r#"{type: object, x-kubernetes-validations: [{rule: "self.z == 100"}], properties: {x: {type: integer}}}"#,
    ))?;
    assert!(
        err.contains("The CustomResourceDefinition \"undefineds.cel.example.com\" is invalid"),
        "{err}"
    );
    assert!(
        err.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.z == 100\""),
        "{err}"
    );
    assert!(
        err.contains("compilation failed: ERROR: <input>:1:5: undefined field 'z'"),
        "{err}"
    );

    let err = refused(crd_with_rule(
        "syntax",
        r#"{type: object, x-kubernetes-validations: [{rule: "self = 42"}]}"#,
    ))?;
    assert!(
        err.contains(
            "compilation failed: ERROR: <input>:1:6: Syntax error: token recognition error at: '= '"
        ),
        "{err}"
    );

    let err = refused(crd_with_rule(
        "expensive",
        r#"{type: object, properties: {x: {type: array, items: {type: array, items: {type: string}, x-kubernetes-validations: [{rule: "self.all(s, s == 'string constant')"}]}}}}"#,
    ))?;
    assert!(
        err.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"),
        "{err}"
    );

    let err = refused(crd_with_rule(
        "notbool",
        r#"{type: object, x-kubernetes-validations: [{rule: "self.x + 1", messageExpression: "1"}], properties: {x: {type: integer}}}"#,
    ))?;
    assert!(
        err.contains("cel expression must evaluate to a bool"),
        "{err}"
    );
    assert!(
        err.contains("messageExpression must evaluate to a string"),
        "{err}"
    );

    // None of them was stored.
    let crds = server.kubectl_ok(&["get", "crd", "-o", "name"])?;
    assert!(!crds.contains("cel.example.com"), "{crds}");
    Ok(())
}
