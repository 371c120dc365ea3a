//! The engine conformance suite. TO BE IMPLEMENTED (storage helper).
