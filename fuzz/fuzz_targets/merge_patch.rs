//! Fuzz the merge patch engine (`patch::merge_patch`) on a fuzzed document and a
//! fuzzed patch (input: `<doc> NUL <patch>`, or a patch on a fixed Pod):
//! never panics, and an accepted patch yields JSON the server can store and
//! read back.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ubernetes_apimachinery::patch::merge_patch;
use ubernetes_fuzz::{assert_serialises, doc_and_patch};

fuzz_target!(|data: &[u8]| {
    let Some((doc, patch)) = doc_and_patch(data) else {
        return;
    };
    if let Ok(patched) = merge_patch(&doc, patch) {
        assert_serialises(&patched);
    }
});
