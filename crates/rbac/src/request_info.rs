//! What a request asks to do, from its method, path and query
//! (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`), and the
//! [`Attributes`] the authorizer decides on (`authorizer.AttributesRecord`).
//!
//! Resource paths are `/api/<v>/...` and `/apis/<group>/<v>/...`; everything
//! else (`/healthz`, `/version`, `/apis`, `/apis/<group>`, `/api`) is a
//! non-resource request whose verb is the lower-cased HTTP method.

use crate::user::UserInfo;

/// API prefixes that carry resources (`--api-prefixes` of kube-apiserver).
const API_PREFIXES: [&str; 2] = ["api", "apis"];
/// Prefixes without a group segment.
const GROUPLESS_API_PREFIXES: [&str; 1] = ["api"];
/// Path segments that name a verb (`/api/v1/watch/pods`, `/api/v1/proxy/...`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// Special verbs whose paths have no subresource.
const SPECIAL_VERBS_NO_SUBRESOURCES: [&str; 1] = ["proxy"];
/// Subresources of a namespace, told apart from namespaced resources.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// What a request asks to do (`request.RequestInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// Whether the request is for an API resource or subresource.
    pub is_resource_request: bool,
    /// The URL path (percent-decoded, as Go's `URL.Path`).
    pub path: String,
    /// The kube verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete`, `deletecollection`, `proxy`); for a non-resource request the
    /// lower-cased HTTP method.
    pub verb: String,
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The path parts from the resource on (`resource/name/subresource/...`).
    pub parts: Vec<String>,
}

/// Why a path could not be parsed (`unable to determine kind and namespace
/// from url, ...`), with the info as far as it was known.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unable to determine kind and namespace from url, {url}")]
pub struct RequestInfoError {
    pub url: String,
    pub partial: Box<RequestInfo>,
}

impl RequestInfo {
    /// Parse a request as kube-apiserver's `RequestInfoFactory` does.
    /// `path` is the raw URL path (percent-encoded is fine), `query` the raw
    /// query string without `?` (empty if none). On error the partially filled
    /// info comes back with it, as in kube.
    pub fn parse(method: &str, path: &str, query: &str) -> Result<RequestInfo, RequestInfoError> {
        let path = percent_encoding::percent_decode_str(path)
            .decode_utf8_lossy()
            .into_owned();
        let mut info = RequestInfo {
            is_resource_request: false,
            verb: method.to_ascii_lowercase(),
            path,
            ..RequestInfo::default()
        };
        let path = info.path.clone();
        let trimmed = path.trim_matches('/');
        let all_parts: Vec<&str> = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').collect()
        };
        if all_parts.len() < 3 || !API_PREFIXES.contains(&all_parts[0]) {
            return Ok(info);
        }
        info.api_prefix = all_parts[0].to_string();
        let mut parts = &all_parts[1..];
        if !GROUPLESS_API_PREFIXES.contains(&info.api_prefix.as_str()) {
            if parts.len() < 3 {
                return Ok(info);
            }
            info.api_group = parts[0].to_string();
            parts = &parts[1..];
        }
        info.is_resource_request = true;
        info.api_version = parts[0].to_string();
        parts = &parts[1..];

        if SPECIAL_VERBS.contains(&parts[0]) {
            if parts.len() < 2 {
                let url = if query.is_empty() {
                    path.clone()
                } else {
                    format!("{path}?{query}")
                };
                return Err(RequestInfoError {
                    url,
                    partial: Box::new(info),
                });
            }
            info.verb = parts[0].to_string();
            parts = &parts[1..];
        } else {
            info.verb = match method.to_ascii_uppercase().as_str() {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_string();
        }

        if parts[0] == "namespaces" && parts.len() > 1 {
            info.namespace = parts[1].to_string();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                parts = &parts[2..];
            }
        }
        info.parts = parts.iter().map(|p| p.to_string()).collect();

        if info.parts.len() >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.contains(&info.verb.as_str()) {
            info.subresource = info.parts[2].clone();
        }
        if info.parts.len() >= 2 {
            info.name = info.parts[1].clone();
        }
        if !info.parts.is_empty() {
            info.resource = info.parts[0].clone();
        }

        if info.name.is_empty() && info.verb == "get" {
            let (watch, field_selector) = list_options(query);
            info.verb = if watch { "watch" } else { "list" }.to_string();
            if let Some(selector) = field_selector
                && let Ok(selector) =
                    ubernetes_apimachinery::fields::FieldSelector::parse(&selector)
                && let Some(name) = selector.requires_exact_match("metadata.name")
                && is_valid_path_segment_name(name)
            {
                info.name = name.to_string();
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        Ok(info)
    }

    /// Like [`RequestInfo::parse`], keeping the partial info on error (kube
    /// authorizes with what it knows, then fails the request elsewhere).
    pub fn parse_lenient(method: &str, path: &str, query: &str) -> RequestInfo {
        match Self::parse(method, path, query) {
            Ok(info) => info,
            Err(err) => *err.partial,
        }
    }
}

/// `watch` and `fieldSelector` from a list query, decoded as
/// `metainternalversion.ListOptions` would be: the first value counts; a
/// `watch` that is not `0` or `false` (any case) is true, even an empty one
/// (`Convert_Slice_string_To_bool`).
fn list_options(query: &str) -> (bool, Option<String>) {
    let mut watch = None;
    let mut field_selector = None;
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "watch" if watch.is_none() => {
                watch = Some(!(v == "0" || v.eq_ignore_ascii_case("false")));
            }
            "fieldSelector" if field_selector.is_none() => field_selector = Some(v.into_owned()),
            _ => {}
        }
    }
    (watch.unwrap_or(false), field_selector)
}

/// `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`.
fn is_valid_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// What the authorizer decides on (`authorizer.AttributesRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    pub namespace: String,
    pub api_group: String,
    /// `*` when unknown (reviews without a version).
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// For non-resource requests: the URL path.
    pub path: String,
    pub resource_request: bool,
}

impl Attributes {
    /// The attributes of a parsed request made by `user`
    /// (`filters.GetAuthorizerAttributes`).
    pub fn from_request(user: &UserInfo, info: &RequestInfo) -> Attributes {
        let mut attrs = Attributes {
            user: user.clone(),
            verb: info.verb.clone(),
            path: info.path.clone(),
            resource_request: info.is_resource_request,
            ..Attributes::default()
        };
        if info.is_resource_request {
            attrs.api_group = info.api_group.clone();
            attrs.api_version = info.api_version.clone();
            attrs.resource = info.resource.clone();
            attrs.subresource = info.subresource.clone();
            attrs.namespace = info.namespace.clone();
            attrs.name = info.name.clone();
        }
        attrs
    }

    /// A resource request (builder for tests and internal checks).
    pub fn resource(
        user: &UserInfo,
        verb: &str,
        api_group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Attributes {
        let (resource, subresource) = match resource.split_once('/') {
            Some((r, s)) => (r.to_string(), s.to_string()),
            None => (resource.to_string(), String::new()),
        };
        Attributes {
            user: user.clone(),
            verb: verb.to_string(),
            namespace: namespace.to_string(),
            api_group: api_group.to_string(),
            api_version: "*".to_string(),
            resource,
            subresource,
            name: name.to_string(),
            path: String::new(),
            resource_request: true,
        }
    }

    /// A non-resource request (`get` on `/healthz`).
    pub fn non_resource(user: &UserInfo, verb: &str, path: &str) -> Attributes {
        Attributes {
            user: user.clone(),
            verb: verb.to_string(),
            path: path.to_string(),
            ..Attributes::default()
        }
    }

    /// Whether this is a read (`get`, `list`, `watch`), as `IsReadOnly`.
    pub fn is_read_only(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list" | "watch")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(method: &str, url: &str) -> RequestInfo {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        match RequestInfo::parse(method, path, query) {
            Ok(info) => info,
            Err(e) => panic!("{e}"),
        }
    }

    type Summary<'a> = (
        bool,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
    );

    fn summary(i: &RequestInfo) -> Summary<'_> {
        (
            i.is_resource_request,
            i.verb.as_str(),
            i.api_group.as_str(),
            i.api_version.as_str(),
            i.namespace.as_str(),
            i.resource.as_str(),
            i.subresource.as_str(),
            i.name.as_str(),
        )
    }

    #[test]
    fn resource_paths_parse_as_kube_does() {
        let cases: Vec<(&str, &str, Summary<'_>)> = vec![
            (
                "GET",
                "/api/v1/namespaces",
                (true, "list", "", "v1", "", "namespaces", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/other",
                (true, "get", "", "v1", "other", "namespaces", "", "other"),
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods",
                (true, "list", "", "v1", "other", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo",
                (true, "get", "", "v1", "other", "pods", "", "foo"),
            ),
            (
                "HEAD",
                "/api/v1/namespaces/other/pods/foo",
                (true, "get", "", "v1", "other", "pods", "", "foo"),
            ),
            (
                "GET",
                "/api/v1/pods",
                (true, "list", "", "v1", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/log",
                (true, "get", "", "v1", "other", "pods", "log", "foo"),
            ),
            (
                "POST",
                "/api/v1/namespaces/other/pods",
                (true, "create", "", "v1", "other", "pods", "", ""),
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/pods/foo",
                (true, "update", "", "v1", "other", "pods", "", "foo"),
            ),
            (
                "PATCH",
                "/api/v1/namespaces/other/pods/foo",
                (true, "patch", "", "v1", "other", "pods", "", "foo"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods/foo",
                (true, "delete", "", "v1", "other", "pods", "", "foo"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods",
                (true, "deletecollection", "", "v1", "other", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/watch/pods",
                (true, "watch", "", "v1", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/other/pods",
                (true, "watch", "", "v1", "other", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/pods?watch=true",
                (true, "watch", "", "v1", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/pods?watch=1",
                (true, "watch", "", "v1", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/pods?watch=false",
                (true, "list", "", "v1", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/pods?watch=0",
                (true, "list", "", "v1", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/proxy/namespaces/other/pods/foo/bar",
                (true, "proxy", "", "v1", "other", "pods", "", "foo"),
            ),
            (
                "GET",
                "/apis/apps/v1/namespaces/other/deployments/web/scale",
                (
                    true,
                    "get",
                    "apps",
                    "v1",
                    "other",
                    "deployments",
                    "scale",
                    "web",
                ),
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/finalize",
                (
                    true,
                    "update",
                    "",
                    "v1",
                    "other",
                    "namespaces",
                    "finalize",
                    "other",
                ),
            ),
            (
                "GET",
                "/api/v1/namespaces/other/status",
                (
                    true,
                    "get",
                    "",
                    "v1",
                    "other",
                    "namespaces",
                    "status",
                    "other",
                ),
            ),
            (
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                (
                    true,
                    "list",
                    "rbac.authorization.k8s.io",
                    "v1",
                    "",
                    "clusterroles",
                    "",
                    "",
                ),
            ),
        ];
        for (method, url, want) in cases {
            let info = parse(method, url);
            assert_eq!(summary(&info), want, "{method} {url}");
        }
    }

    #[test]
    fn watch_is_true_unless_zero_or_false() {
        for (query, verb) in [
            ("watch=FALSE", "list"),
            ("watch=0", "list"),
            ("watch=", "watch"),
            ("watch=f", "watch"),
            ("watch=yes&watch=false", "watch"),
            ("limit=5", "list"),
        ] {
            let info = parse("GET", &format!("/api/v1/pods?{query}"));
            assert_eq!(info.verb, verb, "{query}");
        }
    }

    #[test]
    fn non_resource_paths_keep_the_http_verb() {
        for (method, url, verb) in [
            ("GET", "/", "get"),
            ("GET", "/healthz", "get"),
            ("GET", "/api", "get"),
            ("GET", "/api/v1", "get"),
            ("GET", "/apis", "get"),
            ("GET", "/apis/apps", "get"),
            ("GET", "/apis/apps/v1", "get"),
            ("POST", "/version", "post"),
            ("GET", "/openapi/v3/apis/apps/v1", "get"),
        ] {
            let info = parse(method, url);
            assert!(!info.is_resource_request, "{url}");
            assert_eq!(info.verb, verb);
            assert_eq!(info.path, url);
        }
    }

    #[test]
    fn a_metadata_name_field_selector_names_the_object_of_a_list() {
        let info = parse(
            "GET",
            "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dfoo&watch=true",
        );
        assert_eq!((info.verb.as_str(), info.name.as_str()), ("watch", "foo"));
        let info = parse(
            "GET",
            "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dfoo%2Cspec.nodeName%3Dn",
        );
        assert_eq!((info.verb.as_str(), info.name.as_str()), ("list", "foo"));
        let info = parse(
            "GET",
            "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name!%3Dfoo",
        );
        assert_eq!((info.verb.as_str(), info.name.as_str()), ("list", ""));
    }

    #[test]
    fn a_bare_special_verb_is_an_error_with_partial_info() {
        let Err(err) = RequestInfo::parse("GET", "/api/v1/watch", "") else {
            panic!("expected an error");
        };
        assert!(err.partial.is_resource_request);
        assert_eq!(
            err.to_string(),
            "unable to determine kind and namespace from url, /api/v1/watch"
        );
    }

    #[test]
    fn attributes_of_a_non_resource_request_carry_only_the_path() {
        let user = UserInfo::new("bob", &[]);
        let attrs = Attributes::from_request(&user, &parse("GET", "/healthz"));
        assert!(!attrs.resource_request);
        assert_eq!(attrs.path, "/healthz");
        assert_eq!(attrs.resource, "");
    }
}
