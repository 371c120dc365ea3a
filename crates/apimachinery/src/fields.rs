//! Field selectors. TO BE IMPLEMENTED.
