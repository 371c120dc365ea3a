//! The audit event (`audit.k8s.io/v1` `Event`, kube's
//! `k8s.io/apiserver/pkg/apis/audit/v1/types.go`) as one JSON line, and
//! kube's one-line `legacy` text form (`pkg/audit/format.go`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::policy::{Level, Stage};

/// The authenticated (or impersonated) user (`authentication/v1.UserInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&ubernetes_rbac::user::UserInfo> for UserInfo {
    fn from(u: &ubernetes_rbac::user::UserInfo) -> Self {
        UserInfo {
            username: u.name.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// What the request is about (`audit.ObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(rename = "apiGroup", skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// One audit event (`audit.Event`); field order as kube writes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: Level,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: Stage,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: UserInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<UserInfo>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// A `meta/v1` Status: `{"metadata":{},"code":200}`, with `status`,
    /// `reason`, `message` and `details` for a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    pub request_received_timestamp: String,
    pub stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Event {
    /// A new event at stage `RequestReceived`, received at `received`.
    pub fn new(level: Level, audit_id: String, received: jiff::Timestamp) -> Event {
        let ts = micro_time(received);
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level,
            audit_id,
            stage: Stage::RequestReceived,
            request_uri: String::new(),
            verb: String::new(),
            user: UserInfo::default(),
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: ts.clone(),
            stage_timestamp: ts,
            annotations: BTreeMap::new(),
        }
    }

    /// The event as one JSON line (with the newline).
    pub fn to_json_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_else(|e| {
            // Serializing plain strings and JSON values cannot fail; keep a
            // trace of the event if it ever does.
            format!(
                r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":{:?},"error":{:?}}}"#,
                self.audit_id,
                e.to_string()
            )
        });
        s.push('\n');
        s
    }

    /// kube's `legacy` format (`audit.EventString`), with the newline.
    pub fn to_legacy_line(&self) -> String {
        let q = ubernetes_rbac::rules::go_quote;
        let qs = |list: &[String]| list.iter().map(|g| q(g)).collect::<Vec<_>>().join(",");
        let (username, groups) = if self.user.username.is_empty() {
            ("<none>".to_string(), "<none>".to_string())
        } else if self.user.groups.is_empty() {
            (self.user.username.clone(), "<none>".to_string())
        } else {
            (self.user.username.clone(), qs(&self.user.groups))
        };
        let (asuser, asgroups) = match &self.impersonated_user {
            None => ("<self>".to_string(), "<lookup>".to_string()),
            Some(u) => (u.username.clone(), qs(&u.groups)),
        };
        let namespace = self
            .object_ref
            .as_ref()
            .map(|o| o.namespace.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "<none>".to_string());
        let response = self
            .response_status
            .as_ref()
            .and_then(|s| s.get("code"))
            .map(|c| c.to_string())
            .unwrap_or_else(|| "<deferred>".to_string());
        let ip = self
            .source_ips
            .first()
            .cloned()
            .unwrap_or_else(|| "<unknown>".to_string());
        format!(
            "{} AUDIT: id={} stage={} ip={} method={} user={} groups={} as={} asgroups={} user-agent={} namespace={} uri={} response=\"{}\"\n",
            self.request_received_timestamp,
            q(&self.audit_id),
            q(self.stage.as_str()),
            q(&ip),
            q(&self.verb),
            q(&username),
            q(&groups),
            q(&asuser),
            q(&asgroups),
            q(&self.user_agent),
            q(&namespace),
            q(&self.request_uri),
            response
        )
    }
}

/// `metav1.MicroTime` as JSON: RFC 3339 in UTC with microseconds
/// (`2006-01-02T15:04:05.000000Z07:00`).
pub fn micro_time(t: jiff::Timestamp) -> String {
    let z = t.to_zoned(jiff::tz::TimeZone::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        z.year(),
        z.month(),
        z.day(),
        z.hour(),
        z.minute(),
        z.second(),
        z.subsec_nanosecond() / 1_000
    )
}

/// A new audit ID: a random UUID, as kube's `WithAuditInit`.
pub fn new_audit_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_serializes_as_kubes_json_with_microsecond_timestamps() {
        let t: jiff::Timestamp = "2026-11-25T10:00:01.123456789Z".parse().expect("ts");
        let mut ev = Event::new(Level::Metadata, "id-1".into(), t);
        ev.verb = "get".into();
        ev.request_uri = "/api/v1/namespaces/a/pods/p".into();
        ev.user = UserInfo {
            username: "alice".into(),
            groups: vec!["devs".into()],
            ..UserInfo::default()
        };
        ev.source_ips = vec!["127.0.0.1".into()];
        ev.object_ref = Some(ObjectReference {
            resource: "pods".into(),
            namespace: "a".into(),
            name: "p".into(),
            api_version: "v1".into(),
            ..ObjectReference::default()
        });
        let v: Value = serde_json::from_str(&ev.to_json_line()).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata",
                "auditID":"id-1","stage":"RequestReceived","requestURI":"/api/v1/namespaces/a/pods/p",
                "verb":"get","user":{"username":"alice","groups":["devs"]},"sourceIPs":["127.0.0.1"],
                "objectRef":{"resource":"pods","namespace":"a","name":"p","apiVersion":"v1"},
                "requestReceivedTimestamp":"2026-11-25T10:00:01.123456Z",
                "stageTimestamp":"2026-11-25T10:00:01.123456Z"})
        );
        let legacy = ev.to_legacy_line();
        assert_eq!(
            legacy,
            "2026-11-25T10:00:01.123456Z AUDIT: id=\"id-1\" stage=\"RequestReceived\" ip=\"127.0.0.1\" method=\"get\" user=\"alice\" groups=\"\\\"devs\\\"\" as=\"<self>\" asgroups=\"<lookup>\" user-agent=\"\" namespace=\"a\" uri=\"/api/v1/namespaces/a/pods/p\" response=\"<deferred>\"\n"
        );
    }
}
