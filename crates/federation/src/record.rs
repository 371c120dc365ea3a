//! TODO: record
