//! TODO: overrides
