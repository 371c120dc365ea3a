//! The JSON and YAML request-body decoders and the YAML response encoder,
//! as the fuzz targets call them.
//!
//! With the `server` feature these are the apiserver's own
//! `handlers::negotiate::{decode_json, decode_yaml, encode}`. Without it
//! (the default, so `scripts/fuzz.sh` builds in minutes) they make the same
//! library calls those functions make — `serde_json::from_slice::<Value>`,
//! `serde_saphyr::from_str::<Value>` on UTF-8 text, `serde_saphyr::to_string`
//! — at the versions pinned by `fuzz/Cargo.lock` (the workspace's), leaving
//! out only the error wording.

use serde_json::Value;

#[cfg(feature = "server")]
mod imp {
    use serde_json::Value;
    use ubernetes_apiserver::handlers::negotiate::{self, Output};

    pub fn decode_json(body: &[u8]) -> Result<Value, String> {
        negotiate::decode_json(body).map_err(|e| format!("{e:?}"))
    }

    pub fn decode_yaml(body: &[u8]) -> Result<Value, String> {
        negotiate::decode_yaml(body).map_err(|e| format!("{e:?}"))
    }

    pub fn encode_yaml(v: &Value) -> Result<Vec<u8>, String> {
        negotiate::encode(v, Output::Yaml).map_err(|e| format!("{e:?}"))
    }
}

#[cfg(not(feature = "server"))]
mod imp {
    use serde_json::Value;

    pub fn decode_json(body: &[u8]) -> Result<Value, String> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err("the body of the request was empty or not valid JSON".into());
        }
        serde_json::from_slice(body).map_err(|e| e.to_string())
    }

    pub fn decode_yaml(body: &[u8]) -> Result<Value, String> {
        let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
        serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
    }

    pub fn encode_yaml(v: &Value) -> Result<Vec<u8>, String> {
        serde_saphyr::to_string(v)
            .map(String::into_bytes)
            .map_err(|e| e.to_string())
    }
}

/// Parse a JSON request body (`negotiate::decode_json`).
pub fn decode_json(body: &[u8]) -> Result<Value, String> {
    imp::decode_json(body)
}

/// Parse a YAML request body (`negotiate::decode_yaml`).
pub fn decode_yaml(body: &[u8]) -> Result<Value, String> {
    imp::decode_yaml(body)
}

/// Render a value as the YAML output format (`negotiate::encode(.., Yaml)`).
pub fn encode_yaml(v: &Value) -> Result<Vec<u8>, String> {
    imp::encode_yaml(v)
}
