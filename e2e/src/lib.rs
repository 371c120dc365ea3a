//! End-to-end tests (real binary, real kubectl) live in `tests/`.
