//! The REST operations each served resource gets, as kube-apiserver's
//! OpenAPI documents list them (`k8s.io/apiserver/pkg/endpoints/installer.go`):
//! per resource the collection path (list, create, deletecollection), the
//! item path (read, replace, patch, delete), the all-namespaces list for
//! namespaced resources, and one path per subresource. Operation ids,
//! descriptions, `x-kubernetes-action` and parameters follow upstream.
//!
//! This is a neutral model; [`crate::v3`] and [`crate::v2`] render it.

use ubernetes_apimachinery::resource::ResourceInfo;

use crate::definitions::{Gvk, Snapshot};

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    Path,
    Query,
}

/// The JSON type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Boolean,
    Integer,
}

impl ParamType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Boolean => "boolean",
            Self::Integer => "integer",
        }
    }
}

/// One parameter of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub location: In,
    pub description: String,
    pub required: bool,
    pub ty: ParamType,
}

/// A request body: the definition it carries and the content types accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub definition: String,
    pub content_types: Vec<&'static str>,
}

/// One response of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub code: u16,
    pub description: &'static str,
    pub definition: Option<String>,
}

/// One operation (HTTP method on a path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// Lowercase HTTP method.
    pub method: &'static str,
    pub operation_id: String,
    pub description: String,
    pub tag: String,
    /// `x-kubernetes-action`: list, post, deletecollection, get, put, patch, delete.
    pub action: &'static str,
    pub gvk: Gvk,
    pub params: Vec<Param>,
    pub body: Option<Body>,
    pub responses: Vec<Response>,
    /// Content types the responses come in.
    pub produces: Vec<&'static str>,
}

/// One path with its operations and the parameters shared by all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathItem {
    pub path: String,
    pub params: Vec<Param>,
    pub operations: Vec<Operation>,
}

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const JSON_WATCH: &str = "application/json;stream=watch";
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The content types of a PATCH body.
pub const PATCH_CONTENT_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

/// The `fieldValidation` parameter's description, word for word.
pub const FIELD_VALIDATION_DESCRIPTION: &str = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.";

fn query(name: &'static str, ty: ParamType, description: &str) -> Param {
    Param {
        name,
        location: In::Query,
        description: description.to_string(),
        required: false,
        ty,
    }
}

fn path_param(name: &'static str, description: String) -> Param {
    Param {
        name,
        location: In::Path,
        description,
        required: true,
        ty: ParamType::String,
    }
}

fn pretty() -> Param {
    query(
        "pretty",
        ParamType::String,
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
    )
}

fn namespace() -> Param {
    path_param(
        "namespace",
        "object name and auth scope, such as for teams and projects".to_string(),
    )
}

fn dry_run() -> Param {
    query(
        "dryRun",
        ParamType::String,
        "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
    )
}

fn field_manager(patch: bool) -> Param {
    let description = if patch {
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch)."
    } else {
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."
    };
    query("fieldManager", ParamType::String, description)
}

fn field_validation() -> Param {
    query(
        "fieldValidation",
        ParamType::String,
        FIELD_VALIDATION_DESCRIPTION,
    )
}

fn force() -> Param {
    query(
        "force",
        ParamType::Boolean,
        "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
    )
}

fn write_params() -> Vec<Param> {
    vec![dry_run(), field_manager(false), field_validation()]
}

fn label_selector() -> Param {
    query(
        "labelSelector",
        ParamType::String,
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    )
}

fn field_selector() -> Param {
    query(
        "fieldSelector",
        ParamType::String,
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    )
}

fn resource_version() -> Param {
    query(
        "resourceVersion",
        ParamType::String,
        "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    )
}

fn resource_version_match() -> Param {
    query(
        "resourceVersionMatch",
        ParamType::String,
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    )
}

fn timeout_seconds() -> Param {
    query(
        "timeoutSeconds",
        ParamType::Integer,
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.",
    )
}

fn limit() -> Param {
    query(
        "limit",
        ParamType::Integer,
        "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.",
    )
}

fn continue_() -> Param {
    query(
        "continue",
        ParamType::String,
        "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.",
    )
}

fn send_initial_events() -> Param {
    query(
        "sendInitialEvents",
        ParamType::Boolean,
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise.",
    )
}

fn list_params() -> Vec<Param> {
    vec![
        query(
            "allowWatchBookmarks",
            ParamType::Boolean,
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.",
        ),
        continue_(),
        field_selector(),
        label_selector(),
        limit(),
        resource_version(),
        resource_version_match(),
        send_initial_events(),
        timeout_seconds(),
        query(
            "watch",
            ParamType::Boolean,
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
        ),
    ]
}

fn delete_params() -> Vec<Param> {
    vec![
        dry_run(),
        query(
            "gracePeriodSeconds",
            ParamType::Integer,
            "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.",
        ),
        query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            ParamType::Boolean,
            "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it",
        ),
        query(
            "orphanDependents",
            ParamType::Boolean,
            "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.",
        ),
        query(
            "propagationPolicy",
            ParamType::String,
            "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
        ),
    ]
}

fn deletecollection_params() -> Vec<Param> {
    let mut params = vec![continue_()];
    params.extend(delete_params());
    params.extend([
        field_selector(),
        label_selector(),
        limit(),
        resource_version(),
        resource_version_match(),
        send_initial_events(),
        timeout_seconds(),
    ]);
    params.sort_by_key(|p| p.name);
    params
}

/// `apps` → `Apps`, `rbac.authorization.k8s.io` → `RbacAuthorization`, core → `Core`.
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".to_string();
    }
    group
        .trim_end_matches(".k8s.io")
        .split(['.', '-'])
        .map(capitalize)
        .collect()
}

/// The operation tag: `apps_v1`, `rbacAuthorization_v1`, `core_v1`.
fn tag(group: &str, version: &str) -> String {
    let camel = group_camel(group);
    let mut chars = camel.chars();
    let lower: String = match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("{lower}_{version}")
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The URL prefix of a group version: `/api/v1`, `/apis/apps/v1`.
pub fn gv_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// Whether responses of this resource come in protobuf too (built-in kinds do;
/// custom resources and our own kinds do not).
fn protobuf(definition: &str) -> bool {
    definition.starts_with("io.k8s.")
}

fn produces(definition: &str, list: bool) -> Vec<&'static str> {
    let mut out = vec![JSON, YAML];
    if protobuf(definition) {
        out.push(PROTOBUF);
    }
    if list {
        out.push(JSON_WATCH);
        if protobuf(definition) {
            out.push(PROTOBUF_WATCH);
        }
    }
    out
}

fn ok(definition: &str) -> Response {
    Response {
        code: 200,
        description: "OK",
        definition: Some(definition.to_string()),
    }
}

fn created(definition: &str) -> Response {
    Response {
        code: 201,
        description: "Created",
        definition: Some(definition.to_string()),
    }
}

fn accepted(definition: &str) -> Response {
    Response {
        code: 202,
        description: "Accepted",
        definition: Some(definition.to_string()),
    }
}

fn unauthorized() -> Response {
    Response {
        code: 401,
        description: "Unauthorized",
        definition: None,
    }
}

/// What one operation is about: kind, definition, naming.
struct Target<'a> {
    group: &'a str,
    version: &'a str,
    gvk: Gvk,
    definition: String,
    /// `Deployment`, `DeploymentStatus`, `DeploymentScale`: the id suffix.
    id_kind: String,
    /// `Namespaced` or empty.
    scope: &'static str,
    /// e.g. `status of ` for subresource descriptions.
    of: String,
    /// The parent kind, for descriptions.
    kind: String,
}

impl Target<'_> {
    fn id(&self, verb: &str) -> String {
        format!(
            "{verb}{}{}{}{}",
            group_camel(self.group),
            capitalize(self.version),
            self.scope,
            self.id_kind
        )
    }

    fn op(
        &self,
        method: &'static str,
        verb: &str,
        action: &'static str,
        description: String,
    ) -> Operation {
        Operation {
            method,
            operation_id: self.id(verb),
            description,
            tag: tag(self.group, self.version),
            action,
            gvk: self.gvk.clone(),
            params: Vec::new(),
            body: None,
            responses: Vec::new(),
            produces: produces(&self.definition, false),
        }
    }

    fn read(&self) -> Operation {
        let mut op = self.op(
            "get",
            "read",
            "get",
            format!("read {}the specified {}", self.of, self.kind),
        );
        op.responses = vec![ok(&self.definition), unauthorized()];
        op
    }

    fn replace(&self) -> Operation {
        let mut op = self.op(
            "put",
            "replace",
            "put",
            format!("replace {}the specified {}", self.of, self.kind),
        );
        op.params = write_params();
        op.body = Some(Body {
            definition: self.definition.clone(),
            content_types: vec!["*/*"],
        });
        op.responses = vec![
            ok(&self.definition),
            created(&self.definition),
            unauthorized(),
        ];
        op
    }

    fn patch(&self) -> Operation {
        let mut op = self.op(
            "patch",
            "patch",
            "patch",
            format!("partially update {}the specified {}", self.of, self.kind),
        );
        op.params = vec![dry_run(), field_manager(true), field_validation(), force()];
        // Custom resources have no strategic-merge metadata: kube-apiserver
        // does not offer that patch type for them, and kubectl (which picks
        // its patch type from this list) must not try it.
        let builtin =
            self.definition.starts_with("io.k8s.") || self.definition.starts_with("io.ubernetes.");
        op.body = Some(Body {
            definition: PATCH.to_string(),
            content_types: PATCH_CONTENT_TYPES
                .iter()
                .copied()
                .filter(|ct| builtin || *ct != "application/strategic-merge-patch+json")
                .collect(),
        });
        op.responses = vec![
            ok(&self.definition),
            created(&self.definition),
            unauthorized(),
        ];
        op
    }

    fn create(&self, description: String) -> Operation {
        let mut op = self.op("post", "create", "post", description);
        op.params = write_params();
        op.body = Some(Body {
            definition: self.definition.clone(),
            content_types: vec!["*/*"],
        });
        op.responses = vec![
            ok(&self.definition),
            created(&self.definition),
            accepted(&self.definition),
            unauthorized(),
        ];
        op
    }
}

/// Every path of the resources of one group version, sorted by path.
pub fn group_version_paths(
    snapshot: &Snapshot,
    resources: &[ResourceInfo],
    group: &str,
    version: &str,
) -> Vec<PathItem> {
    let mut out = Vec::new();
    for r in resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        resource_paths(snapshot, r, &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn has(r: &ResourceInfo, verb: &str) -> bool {
    r.verbs.iter().any(|v| v == verb)
}

fn resource_paths(snapshot: &Snapshot, r: &ResourceInfo, out: &mut Vec<PathItem>) {
    let prefix = gv_prefix(&r.group, &r.version);
    let gvk = Gvk::new(&r.group, &r.version, &r.kind);
    let list_definition = format!("{}List", r.definition);
    let scope = if r.namespaced { "Namespaced" } else { "" };
    let collection = if r.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", r.resource)
    } else {
        format!("{prefix}/{}", r.resource)
    };
    let item = format!("{collection}/{{name}}");
    let scope_params = || -> Vec<Param> {
        let mut p = Vec::new();
        if r.namespaced {
            p.push(namespace());
        }
        p
    };
    let main = Target {
        group: &r.group,
        version: &r.version,
        gvk: gvk.clone(),
        definition: r.definition.clone(),
        id_kind: r.kind.clone(),
        scope,
        of: String::new(),
        kind: r.kind.clone(),
    };

    // The collection.
    let mut ops = Vec::new();
    if has(r, "list") && snapshot.get(&list_definition).is_some() {
        let mut op = main.op(
            "get",
            "list",
            "list",
            format!("list or watch objects of kind {}", r.kind),
        );
        op.params = list_params();
        op.responses = vec![ok(&list_definition), unauthorized()];
        op.produces = produces(&r.definition, true);
        ops.push(op);
    }
    if has(r, "create") {
        let article = if r.kind.starts_with(['A', 'E', 'I', 'O', 'U']) {
            "an"
        } else {
            "a"
        };
        ops.push(main.create(format!("create {article} {}", r.kind)));
    }
    if has(r, "deletecollection") {
        let mut op = main.op(
            "delete",
            "delete",
            "deletecollection",
            format!("delete collection of {}", r.kind),
        );
        op.operation_id = format!(
            "delete{}{}Collection{}{}",
            group_camel(&r.group),
            capitalize(&r.version),
            scope,
            r.kind
        );
        op.params = deletecollection_params();
        op.body = Some(Body {
            definition: DELETE_OPTIONS.to_string(),
            content_types: vec!["*/*"],
        });
        op.responses = vec![ok(STATUS), unauthorized()];
        ops.push(op);
    }
    if !ops.is_empty() {
        let mut params = scope_params();
        params.push(pretty());
        out.push(PathItem {
            path: collection.clone(),
            params,
            operations: ops,
        });
    }

    // The item.
    let mut ops = Vec::new();
    if has(r, "get") {
        ops.push(main.read());
    }
    if has(r, "update") {
        ops.push(main.replace());
    }
    if has(r, "patch") {
        ops.push(main.patch());
    }
    if has(r, "delete") {
        let mut op = main.op(
            "delete",
            "delete",
            "delete",
            format!("delete {}", article_kind(&r.kind)),
        );
        op.params = delete_params();
        op.body = Some(Body {
            definition: DELETE_OPTIONS.to_string(),
            content_types: vec!["*/*"],
        });
        op.responses = vec![ok(STATUS), accepted(STATUS), unauthorized()];
        ops.push(op);
    }
    if !ops.is_empty() {
        out.push(PathItem {
            path: item.clone(),
            params: item_params(r, &r.kind, scope_params()),
            operations: ops,
        });
    }

    // Across namespaces.
    if r.namespaced && has(r, "list") && snapshot.get(&list_definition).is_some() {
        let mut op = main.op(
            "get",
            "list",
            "list",
            format!("list or watch objects of kind {}", r.kind),
        );
        op.operation_id = format!(
            "list{}{}{}ForAllNamespaces",
            group_camel(&r.group),
            capitalize(&r.version),
            r.kind
        );
        op.params = list_params();
        op.responses = vec![ok(&list_definition), unauthorized()];
        op.produces = produces(&r.definition, true);
        out.push(PathItem {
            path: format!("{prefix}/{}", r.resource),
            params: vec![pretty()],
            operations: vec![op],
        });
    }

    // Subresources.
    for sub in &r.subresources {
        let sub_gvk = Gvk::new(&sub.group, &sub.version, &sub.kind);
        let definition = if sub_gvk == gvk {
            r.definition.clone()
        } else {
            match snapshot.definition_for(&sub_gvk) {
                Some(d) => d.to_string(),
                None => continue,
            }
        };
        let target = Target {
            group: &r.group,
            version: &r.version,
            gvk: sub_gvk,
            definition,
            id_kind: format!("{}{}", r.kind, capitalize(&sub.name)),
            scope,
            of: format!("{} of ", sub.name),
            kind: r.kind.clone(),
        };
        let verbs = |v: &str| sub.verbs.iter().any(|x| x == v);
        let mut ops = Vec::new();
        if verbs("get") {
            ops.push(target.read());
        }
        if verbs("create") {
            ops.push(target.create(format!("create {} of {}", sub.name, article_kind(&r.kind))));
        }
        if verbs("update") {
            ops.push(target.replace());
        }
        if verbs("patch") {
            ops.push(target.patch());
        }
        if !ops.is_empty() {
            out.push(PathItem {
                path: format!("{item}/{}", sub.name),
                params: item_params(r, &sub.kind, scope_params()),
                operations: ops,
            });
        }
    }
}

fn article_kind(kind: &str) -> String {
    let article = if kind.starts_with(['A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}

fn item_params(r: &ResourceInfo, kind: &str, mut scope: Vec<Param>) -> Vec<Param> {
    let _ = r;
    let mut params = vec![path_param("name", format!("name of the {kind}"))];
    params.append(&mut scope);
    params.push(pretty());
    params
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::definitions::definitions;
    use ubernetes_apimachinery::resource::SubresourceInfo;

    pub(crate) fn deployments() -> ResourceInfo {
        ResourceInfo {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            singular: "deployment".into(),
            kind: "Deployment".into(),
            namespaced: true,
            verbs: ResourceInfo::standard_verbs(),
            short_names: vec!["deploy".into()],
            categories: vec!["all".into()],
            subresources: vec![
                SubresourceInfo {
                    name: "status".into(),
                    kind: "Deployment".into(),
                    group: "apps".into(),
                    version: "v1".into(),
                    verbs: vec!["get".into(), "patch".into(), "update".into()],
                },
                SubresourceInfo {
                    name: "scale".into(),
                    kind: "Scale".into(),
                    group: "autoscaling".into(),
                    version: "v1".into(),
                    verbs: vec!["get".into(), "patch".into(), "update".into()],
                },
            ],
            definition: "io.k8s.api.apps.v1.Deployment".into(),
        }
    }

    #[test]
    fn operation_ids_follow_upstream_naming() {
        let snap = definitions().snapshot();
        let paths = group_version_paths(&snap, &[deployments()], "apps", "v1");
        let ids: Vec<_> = paths
            .iter()
            .flat_map(|p| p.operations.iter().map(|o| o.operation_id.clone()))
            .collect();
        for id in [
            "listAppsV1NamespacedDeployment",
            "createAppsV1NamespacedDeployment",
            "deleteAppsV1CollectionNamespacedDeployment",
            "readAppsV1NamespacedDeployment",
            "replaceAppsV1NamespacedDeployment",
            "patchAppsV1NamespacedDeployment",
            "deleteAppsV1NamespacedDeployment",
            "listAppsV1DeploymentForAllNamespaces",
            "readAppsV1NamespacedDeploymentStatus",
            "patchAppsV1NamespacedDeploymentScale",
        ] {
            assert!(ids.iter().any(|i| i == id), "missing {id} in {ids:?}");
        }
    }

    #[test]
    fn scale_operations_carry_the_autoscaling_scale_gvk() {
        let snap = definitions().snapshot();
        let paths = group_version_paths(&snap, &[deployments()], "apps", "v1");
        let scale = paths
            .iter()
            .find(|p| p.path == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale")
            .expect("scale path");
        assert!(
            scale
                .operations
                .iter()
                .all(|o| o.gvk == Gvk::new("autoscaling", "v1", "Scale"))
        );
    }

    #[test]
    fn group_names_become_camel_case_and_tags() {
        assert_eq!(
            group_camel("rbac.authorization.k8s.io"),
            "RbacAuthorization"
        );
        assert_eq!(group_camel(""), "Core");
        assert_eq!(tag("networking.k8s.io", "v1"), "networking_v1");
        assert_eq!(tag("", "v1"), "core_v1");
    }
}
