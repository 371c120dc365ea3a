//! TODO: placement
