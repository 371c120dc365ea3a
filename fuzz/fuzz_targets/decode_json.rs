//! Fuzz the JSON request-body decoder (`negotiate::decode_json`, what every
//! create/update/apply with `Content-Type: application/json` goes through;
//! see `ubernetes_fuzz::codec`), and the response encoders the decoded value
//! then meets: JSON and YAML output must succeed, and YAML output must read
//! back as the same value.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ubernetes_fuzz::codec::{decode_json, decode_yaml, encode_yaml};
use ubernetes_fuzz::{assert_serialises, same_json};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = decode_json(data) else {
        return;
    };
    assert_serialises(&value);
    let yaml = match encode_yaml(&value) {
        Ok(y) => y,
        Err(e) => panic!("YAML output failed for a decoded body: {e}"),
    };
    match decode_yaml(&yaml) {
        Ok(back) => assert!(
            same_json(&back, &value),
            "YAML output does not read back: {value} became {back}"
        ),
        Err(e) => panic!(
            "YAML output does not parse: {e}\n{}",
            String::from_utf8_lossy(&yaml)
        ),
    }
});
