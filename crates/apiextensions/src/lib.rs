//! # ubernetes-apiextensions
//!
//! CustomResourceDefinitions, as kube's `apiextensions-apiserver`:
//!
//! - [`crd`]: the [`Strategy`](ubernetes_registry::Strategy) of the
//!   `apiextensions.k8s.io/v1` `customresourcedefinitions` resource itself
//!   (decode, kube's defaults, kube's validation with its messages).
//! - [`status`]: what kube's controllers derive from a CRD: the served
//!   [`ResourceInfo`](ubernetes_apimachinery::ResourceInfo)s and the
//!   `NamesAccepted` / `Established` conditions.
//! - [`schema`]: structural schemas (`openAPIV3Schema` checked as kube's
//!   `apiserver/schema` does), with [`values`] (value validation),
//!   [`prune`] (unknown-field pruning) and [`defaults`] (structural
//!   defaulting) over them.
//! - [`rules`]: `x-kubernetes-validations` (CEL rules) compiled, checked
//!   on CRD writes and evaluated on custom resource writes.
//! - [`custom`]: the strategy of one served version of a custom resource.
//! - [`printer`]: `additionalPrinterColumns` and their Table cells.
//! - [`openapi`]: the schema kube publishes for a custom kind.
//! - [`controller`]: the in-server controller that serves CRDs (status,
//!   stores, OpenAPI, cleanup on deletion).
//!
//! Everything but [`controller`] is pure (JSON in, JSON or causes out);
//! the controller wires CRDs into a running [`Registry`](ubernetes_registry::Registry).
#![forbid(unsafe_code)]

pub mod controller;
pub mod crd;
pub mod custom;
pub mod defaults;
pub mod openapi;
pub mod printer;
pub mod prune;
pub mod rules;
pub mod schema;
pub mod status;
pub mod values;

pub use crd::{crd_info, crd_strategy};
pub use custom::{CustomResource, custom_resource_strategy};
pub use openapi::{openapi_schema, publish, unpublish};
pub use printer::{column_definitions, printer_columns, table_cells, table_cells_at};
pub use schema::Structural;
pub use status::{accepted_status, accepted_status_at, resource_infos};
