//! See the module list in main.rs.
