//! Who a request is made by, as the authorizer sees it (`user.Info`), and the
//! well-known names kube-apiserver gives users and groups
//! (`k8s.io/apiserver/pkg/authentication/user` and `.../serviceaccount`).
//!
//! `UserInfo` itself lives in `ubernetes-apimachinery` (admission sends it
//! to webhooks too); it is re-exported here.

/// The group every authenticated user is in.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The anonymous user's name.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group whose members may do anything (`user.SystemPrivilegedGroup`).
pub const SYSTEM_PRIVILEGED_GROUP: &str = "system:masters";
/// The group every service account is in.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The prefix of a service account's user name.
pub const SERVICE_ACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";
/// The prefix of a service account namespace's group name.
pub const SERVICE_ACCOUNT_GROUP_PREFIX: &str = "system:serviceaccounts:";

/// Who made a request (`user.Info`): one type for authentication,
/// authorization, audit and admission.
pub use ubernetes_apimachinery::user::UserInfo;

/// `system:serviceaccount:<namespace>:<name>` (`serviceaccount.MakeUsername`).
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}")
}

/// The groups of every service account in `namespace`
/// (`serviceaccount.MakeGroupNames`): `system:serviceaccounts` and
/// `system:serviceaccounts:<namespace>`.
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{SERVICE_ACCOUNT_GROUP_PREFIX}{namespace}"),
    ]
}

/// Split `system:serviceaccount:<namespace>:<name>` into namespace and name
/// (`serviceaccount.SplitUsername`); `None` if it is not a service account's
/// user name or either part is not a valid name.
pub fn split_service_account_username(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)?;
    let mut parts = rest.split(':');
    let namespace = parts.next()?;
    let name = parts.next()?;
    if parts.next().is_some() {
        return None;
    }
    if !is_dns1123_label(namespace) || !is_dns1123_subdomain(name) {
        return None;
    }
    Some((namespace, name))
}

/// Whether a service account user name is `namespace`/`name`
/// (`serviceaccount.MatchesUsername`).
pub fn matches_service_account_username(namespace: &str, name: &str, username: &str) -> bool {
    username
        .strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|rest| rest == name)
}

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_round_trip() {
        let u = service_account_username("kube-system", "default");
        assert_eq!(u, "system:serviceaccount:kube-system:default");
        assert_eq!(
            split_service_account_username(&u),
            Some(("kube-system", "default"))
        );
        assert!(matches_service_account_username(
            "kube-system",
            "default",
            &u
        ));
        assert!(!matches_service_account_username(
            "kube",
            "system:default",
            &u
        ));
    }

    #[test]
    fn malformed_service_account_names_are_plain_users() {
        assert_eq!(
            split_service_account_username("system:serviceaccount:a"),
            None
        );
        assert_eq!(
            split_service_account_username("system:serviceaccount:a:b:c"),
            None
        );
        assert_eq!(
            split_service_account_username("system:serviceaccount::b"),
            None
        );
        assert_eq!(
            split_service_account_username("system:serviceaccount:A:b"),
            None
        );
        assert_eq!(split_service_account_username("bob"), None);
    }

    #[test]
    fn service_account_groups_are_the_fixed_pair() {
        assert_eq!(
            service_account_groups("ns"),
            vec!["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
    }
}
