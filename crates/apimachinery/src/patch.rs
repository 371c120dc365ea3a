//! Patches. TO BE IMPLEMENTED.
