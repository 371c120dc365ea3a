//! Metadata helpers over JSON objects. TO BE IMPLEMENTED.
