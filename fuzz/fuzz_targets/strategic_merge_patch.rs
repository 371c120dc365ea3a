//! Fuzz strategic merge patch (`patch::strategic_merge_patch`) with a fixed
//! schema ([`ubernetes_fuzz::FixedPatchMeta`]: merge keys, primitive sets
//! and `retainKeys` at every depth) on a fuzzed document and a fuzzed patch
//! (input: `<doc> NUL <patch>`, or a patch on a fixed Pod): never panics,
//! and an accepted patch yields JSON the server can store and read back.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ubernetes_apimachinery::patch::strategic_merge_patch;
use ubernetes_fuzz::{FixedPatchMeta, assert_serialises, doc_and_patch};

fuzz_target!(|data: &[u8]| {
    let Some((doc, patch)) = doc_and_patch(data) else {
        return;
    };
    if let Ok(patched) = strategic_merge_patch(&doc, patch, &FixedPatchMeta) {
        assert_serialises(&patched);
    }
});
