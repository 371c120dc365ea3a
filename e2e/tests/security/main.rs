//! Issue 28's end-to-end checks, with real processes: the federation holds
//! every member's credentials and must not be a confused deputy. Whatever a
//! user makes the federation do in a member passes the federation's own
//! checks first (`docs/security.md` has the threat model and the rules).
//! One test binary, one module per concern.

mod adoption_dns;
mod credentials;
mod files;
mod overrides;
