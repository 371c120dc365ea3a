//! Who a request is made by (`k8s.io/apiserver/pkg/authentication/user.Info`),
//! as authentication resolves it, authorization decides on it, admission
//! sends it to webhooks (`AdmissionReview.request.userInfo`) and CEL policies
//! read it (`request.userInfo`).

use std::collections::BTreeMap;

/// The anonymous user's name (`user.Anonymous`).
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of the anonymous user (`user.AllUnauthenticated`).
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";

/// Who made a request (`user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with a name and groups (no uid, no extra).
    pub fn new(name: impl Into<String>, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Self::default()
        }
    }

    /// `system:anonymous` in `system:unauthenticated`.
    pub fn anonymous() -> Self {
        Self::new(ANONYMOUS, &[ALL_UNAUTHENTICATED])
    }

    /// Whether this is the anonymous user.
    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}
