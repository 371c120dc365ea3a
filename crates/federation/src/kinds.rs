//! TODO: kinds
