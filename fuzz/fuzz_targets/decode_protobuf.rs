//! Fuzz the Kubernetes protobuf request-body decoder (`protobuf::decode_as`,
//! for `Content-Type: application/vnd.kubernetes.protobuf`, what kubectl's
//! typed clients send; the apiserver's own `protobuf.rs`, compiled into
//! `ubernetes_fuzz::protobuf`), and the encoder on what it decodes: an
//! accepted body must encode again, and decode → encode → decode must reach
//! a fixed point.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ubernetes_fuzz::protobuf::{decode, decode_as, encodable, encode};
use ubernetes_fuzz::{assert_serialises, same_json};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = decode_as(data, "ConfigMap") else {
        return;
    };
    assert_serialises(&value);
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    let kind = value["kind"].as_str().unwrap_or_default();
    if !encodable(api_version, kind) {
        return;
    }
    let once = match encode(&value).map(|b| decode(&b)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => panic!("our own encoding of {value} does not decode: {e:?}"),
        Err(e) => panic!("a decoded body does not encode: {e:?}\n{value}"),
    };
    let twice = match encode(&once).map(|b| decode(&b)) {
        Ok(Ok(v)) => v,
        other => panic!("re-encoding {once} failed: {other:?}"),
    };
    assert!(
        same_json(&once, &twice),
        "decode/encode is not stable: {once} became {twice}"
    );
});
