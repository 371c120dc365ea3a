//! impersonation (todo)
