//! Fuzz the YAML request-body decoder (`negotiate::decode_yaml`, for
//! `Content-Type: application/yaml`; see `ubernetes_fuzz::codec`): never
//! panics, never overflows the stack, and what it accepts is JSON the server
//! can store and read back.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ubernetes_fuzz::assert_serialises;
use ubernetes_fuzz::codec::decode_yaml;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = decode_yaml(data) {
        assert_serialises(&value);
    }
});
