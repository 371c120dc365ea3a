//! # ubernetes-fieldmanager
//!
//! Server-side apply and managed-fields tracking, as kube-apiserver does them
//! (`sigs.k8s.io/structured-merge-diff` plus `k8s.io/apimachinery/pkg/util/managedfields`).
//! A pure library over `serde_json::Value`s: no I/O, no storage.
//!
//! Read in this order:
//!
//! - [`path`]: one step into an object (`f:name`, `k:{…}`, `v:…`, `i:…`) and
//!   how paths print in conflict messages (`.spec.containers[name="c"].image`).
//! - [`set`]: [`FieldSet`], a set of paths with set algebra and the exact
//!   `FieldsV1` JSON of `metadata.managedFields[].fieldsV1`.
//! - [`schema`]: [`Schema`], struct / map / list (atomic, set, map keyed by
//!   fields) / scalar, over the built-in OpenAPI definitions or a CRD schema.
//! - [`typed`]: value walks guided by a schema: the fields a value sets,
//!   merge, compare, removal, validation of an applied configuration.
//! - [`managed`]: `metadata.managedFields` decoded per manager and written
//!   back in kube's order.
//! - [`apply`](mod@apply): [`apply()`] and [`update()`], the entry points.
//! - [`last_applied`]: the `kubectl.kubernetes.io/last-applied-configuration`
//!   interplay.
//!
//! ## Semantics
//!
//! **Apply** ([`apply()`]): the applied configuration is merged into the live
//! object (granular structs and maps key by key, map-lists by key, sets by
//! value, atomic lists, atomic maps and scalars replaced). Its field set
//! becomes the manager's `Apply` entry. Fields the manager applied last time
//! and no longer applies are removed from the object unless another manager
//! owns them. Every field whose value changes and which another manager owns
//! is a conflict (409, one `FieldManagerConflict` cause per field) unless
//! `force`, in which case that manager loses it. Applying the same
//! configuration again changes nothing, not even the entry's time. Applying
//! to an object that has no managed fields first records its current content
//! as owned by an `Update` entry of `before-first-apply`.
//!
//! **Update** ([`update()`]): on create, update and non-apply patch, the
//! fields that were added or changed become owned by the manager's `Update`
//! entry (per apiVersion and subresource, stamped with the request time);
//! other managers lose the fields that changed or were removed; managers
//! left with nothing are dropped; past ten `Update` entries the oldest are
//! folded into `ancient-changes`. `apiVersion`, `kind` and server-set
//! metadata (`name`, `uid`, `resourceVersion`, …) are never owned. An object
//! that exists without managed fields is not tracked by updates (kube's
//! skip-non-applied manager with its default track-on-create probability 1).
//!
//! **last-applied-configuration** ([`last_applied`]), only for the manager
//! `kubectl` (as kube, so other managers opt out):
//!
//! 1. When the apply conflicts and the live object carries the annotation
//!    (it was client-side applied), conflicts on fields that the annotation
//!    sets to the value they still have are forgiven: the apply is redone
//!    with force. Any other conflict fails the apply, listing only those.
//! 2. After a successful apply, if the resulting object carries the
//!    annotation, it is replaced by the applied configuration (without the
//!    annotation itself), encoded like Go's `json.Encoder` (sorted keys,
//!    HTML-escaped, trailing newline); if that would push the annotations
//!    past 256 KiB the annotation is dropped instead.
//!
//! So `kubectl apply` (client-side) followed by `kubectl apply
//! --server-side` of the same configuration succeeds, and the annotation
//! stays in step for a later client-side apply.
//!
//! **Creates** compare against the kind's Go zero value
//! ([`Schema::zero_object`]: `metadata`, `spec`, `status`, templates and
//! strategies present as empty objects, required fields as `null`), so a
//! created Deployment owns `f:spec` children but not `f:spec` itself, exactly
//! as kube records it; a custom resource's zero value is `{}`.
//!
//! **Errors** ([`ApplyError`] → [`ubernetes_apimachinery::ApiError`]):
//! conflicts are 409 `Conflict` with kube's message
//! (`Apply failed with 1 conflict: conflict with "mgr" using v1: .data.a`)
//! and one `FieldManagerConflict` cause per field; a wrong `apiVersion` or
//! `metadata.managedFields` in the configuration is 400; a configuration that
//! does not fit the schema (`field not declared in schema`, a map-list item
//! without its key, duplicate items) is a 500 without a reason, prefixed
//! `failed to create typed patch object (ns/name; group/version, Kind=K)`, as
//! kube-apiserver answers it.
//!
//! ## Wiring (for the registry)
//!
//! - apply-patch: `apply(live.as_ref(), &applied, force, &ctx)`, `live` `None`
//!   to create; then default, validate and store the result as for any write.
//!   Unknown fields should be dropped first when `fieldValidation` is not
//!   `Strict`, or they fail as `field not declared in schema`.
//! - create / update / other patches: `update(old, &new, &ctx)` on the object
//!   about to be stored (`old` `None` on create); it returns `new` with its
//!   `metadata.managedFields` recomputed.
//! - [`Context::ignored`]: the strategy's reset fields for the endpoint (e.g.
//!   `status` on the main resource, everything but `status` on `/status`).
//!
//! Not done here (the caller's): defaulting and validation of the result,
//! conversion between versions (one apiVersion per kind is assumed),
//! `dryRun`, storage.
#![forbid(unsafe_code)]

pub mod apply;
pub mod last_applied;
pub mod managed;
pub mod path;
pub mod schema;
pub mod set;
pub mod typed;

pub use apply::{ApplyError, Conflict, Context, apply, update, update_owned};
pub use managed::{Managed, ManagedEntry, ManagerId, Operation};
pub use path::{Path, PathElement};
pub use schema::{ListType, Schema, Shape};
pub use set::FieldSet;
