//! Kubernetes resource quantities, for validation (`requests <= limits`):
//! the parser lives in `ubernetes-apimachinery` (the federation compares
//! quantities too).

pub use ubernetes_apimachinery::quantity::parse;
