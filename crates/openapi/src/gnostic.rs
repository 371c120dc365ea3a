//! gnostic's `openapi.v2.Document` protobuf (`openapiv2/OpenAPIv2.proto` of
//! `github.com/google/gnostic-models`), the encoding kubectl asks `/openapi/v2`
//! for (`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`)
//! and parses with `openapi_v2.ParseDocument` / kube-openapi's `proto` package.
//!
//! Hand-written `prost` messages: no published crate carries gnostic's types,
//! and generating them would need `protoc` at build time. Only the subset we
//! emit is declared; field numbers and oneof layouts are the proto file's, so
//! gnostic decodes what we encode (unknown fields are skipped by protobuf).
//! Values gnostic keeps as YAML (`Any.yaml`: vendor extensions, defaults,
//! enums) are written as JSON, which is YAML.

use prost::Message;
use serde_json::Value;

/// `openapi.v2.Document`.
#[derive(Clone, PartialEq, Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(string, tag = "3")]
    pub host: String,
    #[prost(string, tag = "4")]
    pub base_path: String,
    #[prost(string, repeated, tag = "5")]
    pub schemes: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "16")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Info`.
#[derive(Clone, PartialEq, Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, tag = "3")]
    pub description: String,
}

/// `openapi.v2.Paths`.
#[derive(Clone, PartialEq, Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

/// `openapi.v2.NamedPathItem`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

/// `openapi.v2.PathItem`.
#[derive(Clone, PartialEq, Message)]
pub struct PathItem {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    pub options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Operation`.
#[derive(Clone, PartialEq, Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "2")]
    pub summary: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.ParametersItem`.
#[derive(Clone, PartialEq, Message)]
pub struct ParametersItem {
    #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
    pub oneof: Option<parameters_item::Oneof>,
}

/// Oneofs of [`ParametersItem`].
pub mod parameters_item {
    /// `ParametersItem.oneof`.
    // Mirrors the proto oneof; built once per cached document, so the
    // size difference between variants costs nothing that matters.
    #[allow(clippy::large_enum_variant)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Parameter(super::Parameter),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

/// `openapi.v2.JsonReference`.
#[derive(Clone, PartialEq, Message)]
pub struct JsonReference {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub description: String,
}

/// `openapi.v2.Parameter`.
#[derive(Clone, PartialEq, Message)]
pub struct Parameter {
    #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
    pub oneof: Option<parameter::Oneof>,
}

/// Oneofs of [`Parameter`].
pub mod parameter {
    /// `Parameter.oneof`.
    // Mirrors the proto oneof; built once per cached document, so the
    // size difference between variants costs nothing that matters.
    #[allow(clippy::large_enum_variant)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        BodyParameter(super::BodyParameter),
        #[prost(message, tag = "2")]
        NonBodyParameter(super::NonBodyParameter),
    }
}

/// `openapi.v2.BodyParameter`.
#[derive(Clone, PartialEq, Message)]
pub struct BodyParameter {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NonBodyParameter`.
#[derive(Clone, PartialEq, Message)]
pub struct NonBodyParameter {
    #[prost(oneof = "non_body_parameter::Oneof", tags = "3, 4")]
    pub oneof: Option<non_body_parameter::Oneof>,
}

/// Oneofs of [`NonBodyParameter`] (header and form-data parameters are never emitted).
pub mod non_body_parameter {
    /// `NonBodyParameter.oneof`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "3")]
        QueryParameterSubSchema(super::QueryParameterSubSchema),
        #[prost(message, tag = "4")]
        PathParameterSubSchema(super::PathParameterSubSchema),
    }
}

/// `openapi.v2.QueryParameterSubSchema` (the fields we emit).
#[derive(Clone, PartialEq, Message)]
pub struct QueryParameterSubSchema {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
}

/// `openapi.v2.PathParameterSubSchema` (the fields we emit).
#[derive(Clone, PartialEq, Message)]
pub struct PathParameterSubSchema {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "5")]
    pub r#type: String,
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
}

/// `openapi.v2.Responses`.
#[derive(Clone, PartialEq, Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NamedResponseValue`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

/// `openapi.v2.ResponseValue`.
#[derive(Clone, PartialEq, Message)]
pub struct ResponseValue {
    #[prost(oneof = "response_value::Oneof", tags = "1, 2")]
    pub oneof: Option<response_value::Oneof>,
}

/// Oneofs of [`ResponseValue`].
pub mod response_value {
    /// `ResponseValue.oneof`.
    // Mirrors the proto oneof; built once per cached document, so the
    // size difference between variants costs nothing that matters.
    #[allow(clippy::large_enum_variant)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Response(super::Response),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

/// `openapi.v2.Response`.
#[derive(Clone, PartialEq, Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.SchemaItem` (file schemas are never emitted).
#[derive(Clone, PartialEq, Message)]
pub struct SchemaItem {
    #[prost(oneof = "schema_item::Oneof", tags = "1")]
    pub oneof: Option<schema_item::Oneof>,
}

/// Oneofs of [`SchemaItem`].
pub mod schema_item {
    /// `SchemaItem.oneof`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(super::Schema),
    }
}

/// `openapi.v2.Definitions`.
#[derive(Clone, PartialEq, Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.NamedSchema`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

/// `openapi.v2.Schema` (the fields kube-apiserver's schemas use).
#[derive(Clone, PartialEq, Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.AdditionalPropertiesItem`.
#[derive(Clone, PartialEq, Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    pub oneof: Option<additional_properties_item::Oneof>,
}

/// Oneofs of [`AdditionalPropertiesItem`].
pub mod additional_properties_item {
    /// `AdditionalPropertiesItem.oneof`.
    // Mirrors the proto oneof; built once per cached document, so the
    // size difference between variants costs nothing that matters.
    #[allow(clippy::large_enum_variant)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(super::Schema),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

/// `openapi.v2.TypeItem`.
#[derive(Clone, PartialEq, Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `openapi.v2.ItemsItem`.
#[derive(Clone, PartialEq, Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

/// `openapi.v2.Properties`.
#[derive(Clone, PartialEq, Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.NamedAny`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

/// `openapi.v2.Any`: a value kept as YAML text.
#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

/// `openapi.v2.SecurityRequirement`.
#[derive(Clone, PartialEq, Message)]
pub struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

/// `openapi.v2.NamedStringArray`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedStringArray {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<StringArray>,
}

/// `openapi.v2.StringArray`.
#[derive(Clone, PartialEq, Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `openapi.v2.SecurityDefinitions`.
#[derive(Clone, PartialEq, Message)]
pub struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

/// `openapi.v2.NamedSecurityDefinitionsItem`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<SecurityDefinitionsItem>,
}

/// `openapi.v2.SecurityDefinitionsItem` (only API keys are emitted).
#[derive(Clone, PartialEq, Message)]
pub struct SecurityDefinitionsItem {
    #[prost(oneof = "security_definitions_item::Oneof", tags = "2")]
    pub oneof: Option<security_definitions_item::Oneof>,
}

/// Oneofs of [`SecurityDefinitionsItem`].
pub mod security_definitions_item {
    /// `SecurityDefinitionsItem.oneof`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "2")]
        ApiKeySecurity(super::ApiKeySecurity),
    }
}

/// `openapi.v2.ApiKeySecurity`.
#[derive(Clone, PartialEq, Message)]
pub struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub description: String,
}

// ---- conversion from a swagger 2.0 JSON document ----

fn s(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn any(v: &Value) -> Any {
    Any {
        yaml: serde_json::to_string(v).unwrap_or_default(),
    }
}

fn extensions(v: &Value) -> Vec<NamedAny> {
    v.as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| k.starts_with("x-"))
                .map(|(k, v)| NamedAny {
                    name: k.clone(),
                    value: Some(any(v)),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A swagger 2.0 schema as gnostic's `Schema`.
pub fn schema(v: &Value) -> Schema {
    let num = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or_default();
    let int = |k: &str| v.get(k).and_then(Value::as_i64).unwrap_or_default();
    Schema {
        r#ref: s(v, "$ref"),
        format: s(v, "format"),
        title: s(v, "title"),
        description: s(v, "description"),
        default: v.get("default").map(any),
        maximum: num("maximum"),
        minimum: num("minimum"),
        max_length: int("maxLength"),
        min_length: int("minLength"),
        pattern: s(v, "pattern"),
        max_items: int("maxItems"),
        min_items: int("minItems"),
        unique_items: v
            .get("uniqueItems")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        required: strings(v, "required"),
        r#enum: v
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties: v.get("additionalProperties").map(|ap| {
            Box::new(AdditionalPropertiesItem {
                oneof: Some(match ap {
                    Value::Bool(b) => additional_properties_item::Oneof::Boolean(*b),
                    other => additional_properties_item::Oneof::Schema(schema(other)),
                }),
            })
        }),
        r#type: match v.get("type") {
            Some(Value::String(t)) => Some(TypeItem {
                value: vec![t.clone()],
            }),
            Some(Value::Array(ts)) => Some(TypeItem {
                value: ts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            }),
            _ => None,
        },
        items: v.get("items").map(|i| ItemsItem {
            schema: match i {
                Value::Array(list) => list.iter().map(schema).collect(),
                one => vec![schema(one)],
            },
        }),
        all_of: v
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: v
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| Properties {
                additional_properties: p
                    .iter()
                    .map(|(name, sub)| NamedSchema {
                        name: name.clone(),
                        value: Some(schema(sub)),
                    })
                    .collect(),
            }),
        read_only: v.get("readOnly").and_then(Value::as_bool).unwrap_or(false),
        example: v.get("example").map(any),
        vendor_extension: extensions(v),
    }
}

fn parameter(p: &Value) -> ParametersItem {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        return ParametersItem {
            oneof: Some(parameters_item::Oneof::JsonReference(JsonReference {
                r#ref: r.to_string(),
                description: String::new(),
            })),
        };
    }
    let required = p.get("required").and_then(Value::as_bool).unwrap_or(false);
    let unique_items = p
        .get("uniqueItems")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let inner = match p.get("in").and_then(Value::as_str) {
        Some("body") => parameter::Oneof::BodyParameter(BodyParameter {
            description: s(p, "description"),
            name: s(p, "name"),
            r#in: "body".into(),
            required,
            schema: p.get("schema").map(schema),
            vendor_extension: extensions(p),
        }),
        Some("path") => parameter::Oneof::NonBodyParameter(NonBodyParameter {
            oneof: Some(non_body_parameter::Oneof::PathParameterSubSchema(
                PathParameterSubSchema {
                    required,
                    r#in: "path".into(),
                    description: s(p, "description"),
                    name: s(p, "name"),
                    r#type: s(p, "type"),
                    unique_items,
                },
            )),
        }),
        _ => parameter::Oneof::NonBodyParameter(NonBodyParameter {
            oneof: Some(non_body_parameter::Oneof::QueryParameterSubSchema(
                QueryParameterSubSchema {
                    required,
                    r#in: "query".into(),
                    description: s(p, "description"),
                    name: s(p, "name"),
                    r#type: s(p, "type"),
                    unique_items,
                },
            )),
        }),
    };
    ParametersItem {
        oneof: Some(parameters_item::Oneof::Parameter(Parameter {
            oneof: Some(inner),
        })),
    }
}

fn parameters(v: &Value) -> Vec<ParametersItem> {
    v.get("parameters")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(parameter).collect())
        .unwrap_or_default()
}

fn operation(op: &Value) -> Operation {
    Operation {
        tags: strings(op, "tags"),
        summary: s(op, "summary"),
        description: s(op, "description"),
        operation_id: s(op, "operationId"),
        produces: strings(op, "produces"),
        consumes: strings(op, "consumes"),
        parameters: parameters(op),
        responses: op
            .get("responses")
            .and_then(Value::as_object)
            .map(|r| Responses {
                response_code: r
                    .iter()
                    .map(|(code, resp)| NamedResponseValue {
                        name: code.clone(),
                        value: Some(ResponseValue {
                            oneof: Some(response_value::Oneof::Response(Response {
                                description: s(resp, "description"),
                                schema: resp.get("schema").map(|sc| SchemaItem {
                                    oneof: Some(schema_item::Oneof::Schema(schema(sc))),
                                }),
                                vendor_extension: extensions(resp),
                            })),
                        }),
                    })
                    .collect(),
                vendor_extension: Vec::new(),
            }),
        schemes: strings(op, "schemes"),
        deprecated: op
            .get("deprecated")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        vendor_extension: extensions(op),
    }
}

/// A swagger 2.0 JSON document as gnostic's `Document`.
pub fn document(v: &Value) -> Document {
    let info = v.get("info");
    Document {
        swagger: s(v, "swagger"),
        info: info.map(|i| Info {
            title: s(i, "title"),
            version: s(i, "version"),
            description: s(i, "description"),
        }),
        host: s(v, "host"),
        base_path: s(v, "basePath"),
        schemes: strings(v, "schemes"),
        consumes: strings(v, "consumes"),
        produces: strings(v, "produces"),
        paths: v.get("paths").and_then(Value::as_object).map(|p| Paths {
            vendor_extension: Vec::new(),
            path: p
                .iter()
                .map(|(name, item)| NamedPathItem {
                    name: name.clone(),
                    value: Some(PathItem {
                        r#ref: s(item, "$ref"),
                        get: item.get("get").map(operation),
                        put: item.get("put").map(operation),
                        post: item.get("post").map(operation),
                        delete: item.get("delete").map(operation),
                        options: item.get("options").map(operation),
                        head: item.get("head").map(operation),
                        patch: item.get("patch").map(operation),
                        parameters: parameters(item),
                        vendor_extension: extensions(item),
                    }),
                })
                .collect(),
        }),
        definitions: v
            .get("definitions")
            .and_then(Value::as_object)
            .map(|d| Definitions {
                additional_properties: d
                    .iter()
                    .map(|(name, sc)| NamedSchema {
                        name: name.clone(),
                        value: Some(schema(sc)),
                    })
                    .collect(),
            }),
        security: v
            .get("security")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_object)
                    .map(|req| SecurityRequirement {
                        additional_properties: req
                            .iter()
                            .map(|(name, scopes)| NamedStringArray {
                                name: name.clone(),
                                value: Some(StringArray {
                                    value: scopes
                                        .as_array()
                                        .map(|a| {
                                            a.iter()
                                                .filter_map(Value::as_str)
                                                .map(str::to_string)
                                                .collect()
                                        })
                                        .unwrap_or_default(),
                                }),
                            })
                            .collect(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        security_definitions: v
            .get("securityDefinitions")
            .and_then(Value::as_object)
            .map(|defs| SecurityDefinitions {
                additional_properties: defs
                    .iter()
                    .filter(|(_, d)| d.get("type").and_then(Value::as_str) == Some("apiKey"))
                    .map(|(name, d)| NamedSecurityDefinitionsItem {
                        name: name.clone(),
                        value: Some(SecurityDefinitionsItem {
                            oneof: Some(security_definitions_item::Oneof::ApiKeySecurity(
                                ApiKeySecurity {
                                    r#type: "apiKey".into(),
                                    name: s(d, "name"),
                                    r#in: s(d, "in"),
                                    description: s(d, "description"),
                                },
                            )),
                        }),
                    })
                    .collect(),
            }),
        vendor_extension: extensions(v),
    }
}

/// Encode a swagger 2.0 JSON document as gnostic protobuf.
pub fn encode(v: &Value) -> Vec<u8> {
    document(v).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn document_round_trips_through_protobuf() {
        let swagger = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.37.0"},
            "paths": {"/api/v1/namespaces/{namespace}/pods/{name}": {
                "parameters": [{"name": "name", "in": "path", "required": true, "type": "string", "uniqueItems": true, "description": "name of the Pod"}],
                "patch": {
                    "operationId": "patchCoreV1NamespacedPod",
                    "consumes": ["application/strategic-merge-patch+json"],
                    "parameters": [
                        {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                        {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true}
                    ],
                    "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}}},
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": "", "kind": "Pod", "version": "v1"}
                }
            }},
            "definitions": {"io.k8s.api.core.v1.PodSpec": {
                "type": "object",
                "required": ["containers"],
                "properties": {"containers": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"},
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
                    "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}}}
            }}
        });
        let bytes = encode(&swagger);
        let decoded = Document::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(decoded, document(&swagger));
        assert_eq!(decoded.swagger, "2.0");
        let defs = decoded.definitions.expect("definitions");
        let spec = defs.additional_properties[0]
            .value
            .as_ref()
            .expect("schema");
        let containers = &spec
            .properties
            .as_ref()
            .expect("props")
            .additional_properties[0];
        assert_eq!(containers.name, "containers");
        let c = containers.value.as_ref().expect("containers schema");
        assert_eq!(
            c.items.as_ref().expect("items").schema[0].r#ref,
            "#/definitions/io.k8s.api.core.v1.Container"
        );
        let ext: Vec<_> = c
            .vendor_extension
            .iter()
            .map(|e| (e.name.as_str(), e.value.as_ref().map(|v| v.yaml.as_str())))
            .collect();
        assert!(ext.contains(&("x-kubernetes-patch-strategy", Some("\"merge\""))));
        let path = &decoded.paths.expect("paths").path[0];
        let patch = path
            .value
            .as_ref()
            .and_then(|p| p.patch.as_ref())
            .expect("patch op");
        assert_eq!(patch.operation_id, "patchCoreV1NamespacedPod");
        assert_eq!(patch.parameters.len(), 2);
    }

    #[test]
    fn first_bytes_are_the_swagger_version_field() {
        // field 1, wire type 2 (length-delimited), length 3, "2.0": what
        // gnostic's generated Go code writes first too.
        let bytes = encode(&json!({"swagger": "2.0"}));
        assert_eq!(&bytes[..5], &[0x0a, 0x03, b'2', b'.', b'0']);
    }
}
