//! The embedded engine on sled. TO BE IMPLEMENTED (storage helper).
