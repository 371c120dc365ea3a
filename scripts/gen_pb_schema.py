#!/usr/bin/env python3
"""Generate the compact protobuf schema table used by crates/apiserver/src/protobuf.rs.

Reads the prost-generated Kubernetes messages of the k8s-pb crate (field tags,
wire types, message types) and the JSON field names of the k8s-openapi crate
(both from the local cargo registry), walks the closure of the root kinds, and
prints one line per message:

    <short.Name> [!list] <jsonName>=<tag>:<type> ...

types: s string, b bool, i32, i64, u32, u64, f64, f32, y bytes, @<msg> message,
*<type> repeated, {<k>,<v>} map. `!list` marks list-wrapper messages
(`repeated items = 1`) that JSON renders as a bare array.
"""
import glob
import os
import re
import sys

REG = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/"))[0]
PB = glob.glob(REG + "k8s-pb-0.*/src")[-1]
OA = glob.glob(REG + "k8s-openapi-0.29*/src/v1_37")[0]

ROOTS = [
    ("v1", k) for k in [
        "Namespace", "ConfigMap", "Secret", "Service", "Endpoints", "ServiceAccount", "Event",
        "LimitRange", "ResourceQuota", "PersistentVolumeClaim", "PersistentVolume", "PodTemplate",
        "ReplicationController", "Pod", "Node", "Binding",
    ]
] + [
    ("apps/v1", k) for k in ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision"]
] + [
    ("batch/v1", "Job"), ("batch/v1", "CronJob"),
    ("autoscaling/v1", "HorizontalPodAutoscaler"), ("autoscaling/v1", "Scale"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "Ingress"), ("networking.k8s.io/v1", "IngressClass"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("policy/v1", "PodDisruptionBudget"), ("policy/v1", "Eviction"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("coordination.k8s.io/v1", "Lease"),
    ("events.k8s.io/v1", "Event"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("authentication.k8s.io/v1", "TokenReview"),
    ("authentication.k8s.io/v1", "TokenRequest"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apiregistration.k8s.io/v1", "APIService"),
    ("v1", "ComponentStatus"),
    ("resource.k8s.io/v1", "DeviceClass"), ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"), ("resource.k8s.io/v1", "ResourceSlice"),
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration"),
    ("networking.k8s.io/v1", "IPAddress"), ("networking.k8s.io/v1", "ServiceCIDR"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("node.k8s.io/v1", "RuntimeClass"),
] + [
    ("storage.k8s.io/v1", k) for k in [
        "StorageClass", "CSIDriver", "CSINode", "CSIStorageCapacity", "VolumeAttachment",
        "VolumeAttributesClass",
    ]
] + [
    # MutatingAdmissionPolicy(Binding) v1 is newer than k8s-pb's v1 messages:
    # served as JSON only.
    ("admissionregistration.k8s.io/v1", k) for k in [
        "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    ]
]
EXTRA_ROOTS = [
    "meta.v1.DeleteOptions", "meta.v1.Status", "meta.v1.WatchEvent",
    "meta.v1.PartialObjectMetadata", "meta.v1.PartialObjectMetadataList",
]
# meta.k8s.io kinds responses may carry (Status is served as v1 under every group).
EXTRA_KINDS = [
    ("v1", "Status", "meta.v1.Status"),
    ("meta.k8s.io/v1", "PartialObjectMetadata", "meta.v1.PartialObjectMetadata"),
    ("meta.k8s.io/v1", "PartialObjectMetadataList", "meta.v1.PartialObjectMetadataList"),
]
# Subresource kinds k8s-pb has no Resource impl for.
MANUAL = [
    ("autoscaling/v1", "Scale", "autoscaling.v1.Scale"),
    ("policy/v1", "Eviction", "policy.v1.Eviction"),
    ("authentication.k8s.io/v1", "TokenRequest", "authentication.v1.TokenRequest"),
]
SPECIAL = {
    "meta.v1.Time", "meta.v1.MicroTime", "meta.v1.Duration", "meta.v1.FieldsV1",
    "resource.Quantity", "intstr.IntOrString", "runtime.RawExtension",
    # apiextensions' JSON-valued wrappers (their JSON is not their fields).
    "apiextensions.v1.Json", "apiextensions.v1.JsonSchemaPropsOrArray",
    "apiextensions.v1.JsonSchemaPropsOrBool", "apiextensions.v1.JsonSchemaPropsOrStringArray",
}
# Walked although special: their fields name other messages of the closure.
SPECIAL_WALK = {
    "apiextensions.v1.JsonSchemaPropsOrArray", "apiextensions.v1.JsonSchemaPropsOrBool",
    "apiextensions.v1.JsonSchemaPropsOrStringArray",
}


# federation/v1beta1, which k8s-pb does not have: the messages of Federation
# v1's apis/federation/v1beta1/generated.proto (kubernetes-retired/federation),
# plus ClusterStatus.kubernetesVersion (an Ubernetes field, JSON
# `kubernetesVersion`) under the next free number, 7, which Federation v1's
# generated clients skip as an unknown field.
FEDERATION_KINDS = [
    ("federation/v1beta1", "Cluster", "federation.v1beta1.Cluster"),
    ("federation/v1beta1", "ClusterList", "federation.v1beta1.ClusterList"),
]
FEDERATION_MESSAGES = """\
federation.v1beta1.Cluster metadata=1:@meta.v1.ObjectMeta spec=2:@federation.v1beta1.ClusterSpec status=3:@federation.v1beta1.ClusterStatus
federation.v1beta1.ClusterCondition type=1:s status=2:s lastProbeTime=3:@meta.v1.Time lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s
federation.v1beta1.ClusterList metadata=1:@meta.v1.ListMeta items=2:*@federation.v1beta1.Cluster
federation.v1beta1.ClusterSpec serverAddressByClientCIDRs=1:*@federation.v1beta1.ServerAddressByClientCIDR secretRef=2:@core.v1.LocalObjectReference
federation.v1beta1.ClusterStatus conditions=1:*@federation.v1beta1.ClusterCondition zones=5:*s region=6:s kubernetesVersion=7:s
federation.v1beta1.ServerAddressByClientCIDR clientCIDR=1:s serverAddress=2:s"""


def short(modpath, name):
    p = modpath
    if p[:1] == ["api"]:
        return f"{p[1]}.{p[2]}.{name}"
    if p[:3] == ["apimachinery", "pkg", "apis"]:
        return f"{p[3]}.{p[4]}.{name}"
    if p[:3] == ["apimachinery", "pkg", "api"]:
        return f"{p[3]}.{name}"
    if p[:3] == ["apimachinery", "pkg", "util"]:
        return f"{p[3]}.{name}"
    if p[:2] == ["apimachinery", "pkg"]:
        return f"{p[2]}.{name}"
    if p[:3] in (["apiextensions_apiserver", "pkg", "apis"], ["kube_aggregator", "pkg", "apis"]):
        return f"{p[3]}.{p[4]}.{name}"
    return ".".join(p + [name])


def resolve(modpath, rust_type):
    t = rust_type.replace(" ", "").replace("\n", "")
    t = re.sub(r"^::prost::alloc::boxed::Box<(.*)>$", r"\1", t)
    parts = t.split("::")
    cur = list(modpath)
    while parts and parts[0] == "super":
        cur.pop()
        parts.pop(0)
    if parts and parts[0] == "crate":
        cur = []
        parts.pop(0)
    return short(cur + parts[:-1], parts[-1])


# ---- parse k8s-pb -----------------------------------------------------------
messages = {}  # short -> list of (rust_field, tag, type_string)
resources = {}  # (apiVersion, kind) -> short
ATTR_RE = re.compile(r"#\[prost\(([^\]]*)\)\]\s*pub ([a-z0-9_#]+):", re.S)
for path in glob.glob(PB + "/**/mod.rs", recursive=True):
    rel = os.path.relpath(os.path.dirname(path), PB).split(os.sep)
    src = open(path).read()
    # `pub struct X {}` (an empty message) or a body closed on its own line.
    for m in re.finditer(r"pub struct (\w+) \{(?:\}|(.*?)\n\})", src, re.S):
        name, body = m.group(1), (m.group(2) or "") + "\n"
        fields = []
        for f in ATTR_RE.finditer(body):
            attr, fname = f.group(1), f.group(2)
            depth, j = 0, f.end()
            while True:
                c = body[j]
                if c == "<":
                    depth += 1
                elif c == ">":
                    depth -= 1
                elif c == "," and depth == 0:
                    break
                j += 1
            ftype = body[f.end():j]
            tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
            kind = attr.split(",")[0].strip()
            repeated = "repeated" in attr
            ftype_clean = re.sub(r"\s+", "", ftype).rstrip(",")
            ftype_clean = re.sub(r",>", ">", ftype_clean)
            if kind.startswith("btree_map"):
                k, v = re.search(r'btree_map = "(\w+), (\w+)"', attr).groups()
                if v == "message":
                    inner = re.search(r"BTreeMap<::prost::alloc::string::String,(.*)>$", ftype_clean).group(1)
                    v = "@" + resolve(rel, inner)
                else:
                    v = {"string": "s", "bytes": "y"}[v]
                ty = "{" + {"string": "s"}[k] + "," + v + "}"
            elif kind == "message":
                inner = re.sub(r"^::core::option::Option<(.*)>$", r"\1", ftype_clean)
                inner = re.sub(r"^::prost::alloc::vec::Vec<(.*)>$", r"\1", inner)
                ty = "@" + resolve(rel, inner)
            else:
                base = kind.split(" ")[0]
                ty = {"string": "s", "bool": "b", "int32": "i32", "int64": "i64", "uint32": "u32",
                      "uint64": "u64", "double": "f64", "float": "f32", "bytes": "y"}[base]
            if repeated:
                ty = "*" + ty
            fields.append((fname.replace("r#", ""), tag, ty))
        messages[short(rel, name)] = fields
    for m in re.finditer(r'impl crate::Resource for (\w+) \{\s*const API_VERSION: &\'static str = "([^"]*)";.*?const KIND: &\'static str = "([^"]*)";', src, re.S):
        resources[(m.group(2), m.group(3))] = short(rel, m.group(1))

# ---- JSON names from k8s-openapi ------------------------------------------
def norm(name):
    """A field name without case, `_`, `-` or `$` (`x_kubernetes_list_type`
    and `x-kubernetes-list-type`, `ref` and `$ref` are the same field)."""
    return re.sub(r"[_\-$]", "", name).lower()


json_names = {}  # short -> {normalized: json}
global_names = {}
for path in glob.glob(OA + "/**/*.rs", recursive=True):
    rel = os.path.relpath(os.path.dirname(path), OA).split(os.sep)
    src = open(path).read()
    sm = re.search(r"pub struct (\w+)", src)
    if not sm:
        continue
    names = {}
    for m in re.finditer(r'"([A-Za-z0-9$_\-]+)" => Field::Key_', src):
        j = m.group(1)
        names[norm(j)] = j
        global_names.setdefault(norm(j), j)
    json_names[short(rel, sm.group(1)).lower()] = names


def camel(snake):
    parts = snake.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


FALLBACKS = []


def json_name(msg, rust):
    key = norm(rust)
    n = json_names.get(msg.lower(), {}).get(key)
    if n:
        return n
    FALLBACKS.append((msg, rust))
    n = global_names.get(key)
    if n:
        return n
    return camel(rust)


# ---- closure ----------------------------------------------------------------
roots = []
for av, k in ROOTS:
    if (av, k) not in resources:
        print(f"missing root {av} {k}", file=sys.stderr)
        continue
    roots.append(resources[(av, k)])
for av, k, m in MANUAL:
    resources[(av, k)] = m
    roots.append(m)
roots += EXTRA_ROOTS
# Messages the hand-written federation ones refer to.
roots += ["core.v1.LocalObjectReference", "meta.v1.ListMeta", "meta.v1.ObjectMeta"]
# `<Kind>List` messages (ListMeta + repeated items) of every root kind.
LISTS = []
for av, k in ROOTS:
    m = resources.get((av, k))
    if m and m + "List" in messages:
        LISTS.append((av, k + "List", m + "List"))
        roots.append(m + "List")
seen = []
stack = list(roots)
while stack:
    m = stack.pop()
    if m in seen:
        continue
    seen.append(m)
    if m in SPECIAL and m not in SPECIAL_WALK:
        continue
    if m not in messages:
        print(f"unknown message {m}", file=sys.stderr)
        continue
    for _, _, ty in messages[m]:
        for ref in re.findall(r"@([\w.]+)", ty):
            stack.append(ref)

def inlined(msg, parent_keys):
    """Whether every JSON field of `msg` is one of the parent's: Go embeds it
    inline, and so on down (`NamedRuleWithOperations` inlines
    `RuleWithOperations`, which inlines `Rule`)."""
    fields = messages.get(msg, [])
    if not fields:
        return False
    for rust, _, ty in fields:
        if norm(rust) in parent_keys:
            continue
        if ty.startswith("@") and inlined(ty[1:], parent_keys):
            continue
        return False
    return True


out = []
for av, k in ROOTS:
    if (av, k) in resources:
        out.append(f"={av} {k} {resources[(av, k)]}")
for av, k, m in LISTS + EXTRA_KINDS + FEDERATION_KINDS:
    out.append(f"={av} {k} {m}")
for m in sorted(seen):
    if (m in SPECIAL and m not in SPECIAL_WALK) or m not in messages:
        continue
    fields = messages[m]
    is_list = (len(fields) == 1 and fields[0][0] == "items" and fields[0][1] == 1
               and fields[0][2].startswith("*") and m.lower() not in json_names)
    parts = [m] + (["!list"] if is_list else [])
    for rust, tag, ty in sorted(fields, key=lambda f: f[1]):
        parent = json_names.get(m.lower())
        key = norm(rust)
        if ty.startswith("@") and parent is not None and key not in parent:
            if inlined(ty[1:], parent):
                # Go embeds this struct inline: JSON flattens its fields.
                parts.append(f"{rust}={tag}:^{ty}")
                continue
        parts.append(f"{json_name(m, rust)}={tag}:{ty}")
    out.append(" ".join(parts))
out += FEDERATION_MESSAGES.splitlines()
print("\n".join(out))
for f in FALLBACKS:
    print("fallback name", f, file=sys.stderr)
