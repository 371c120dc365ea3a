//! Permission on a CertificateSigningRequest's signer, as kube-apiserver's
//! certificate admission plugins check it
//! (`plugin/pkg/admission/certificates/util.go` `IsAuthorizedForSignerName`):
//! the verb (`approve`, `sign`) on `certificates.k8s.io` `signers` named the
//! signer, or else on `<domain>/*`.

use crate::authorizer::{Authorizer, RbacSource};
use crate::request_info::Attributes;
use crate::user::UserInfo;

const CERTIFICATES_GROUP: &str = "certificates.k8s.io";

/// Whether `user` may `verb` requests of `signer_name`.
pub fn authorized_for_signer<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    verb: &str,
    signer_name: &str,
) -> bool {
    let allowed = |name: &str| {
        let attrs = Attributes::resource(user, verb, CERTIFICATES_GROUP, "signers", "", name);
        authz.authorize(&attrs).is_allowed()
    };
    if allowed(signer_name) {
        return true;
    }
    let domain = signer_name.split('/').next().unwrap_or_default();
    allowed(&format!("{domain}/*"))
}
