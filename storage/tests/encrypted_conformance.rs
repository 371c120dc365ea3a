//! The conformance suite on [`EncryptedStorage`] over sled, every key
//! encrypted (`*.*`): encryption at rest must not change any engine
//! semantics (revisions, CAS, lists at a revision, watches, compaction).

use std::sync::Arc;

use ubernetes_storage::encryption::{EncryptedStorage, EncryptionConfig};
use ubernetes_storage::sled_engine::SledStorage;
use ubernetes_storage::{Storage, conformance};

const CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ['*.*']
    providers:
      - aesgcm:
          keys:
            - name: key1
              secret: MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn encrypted_sled_passes_the_conformance_suite() {
    let config = Arc::new(EncryptionConfig::parse(CONFIG).expect("valid config"));
    let dirs = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let keep = dirs.clone();
    let raws = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let keep_raw = raws.clone();
    conformance::run_all(move || {
        let dirs = keep.clone();
        let raws = keep_raw.clone();
        let config = config.clone();
        async move {
            let dir = tempfile::TempDir::new().expect("tempdir");
            let raw: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open"));
            dirs.lock().push(dir);
            raws.lock().push(raw.clone());
            Arc::new(EncryptedStorage::new(raw, config)) as Arc<dyn Storage>
        }
    })
    .await;
    // The suite's values really went through the cipher: every value left in
    // the engines is encrypted.
    let mut checked = 0;
    let engines: Vec<Arc<dyn Storage>> = raws.lock().clone();
    for raw in &engines {
        let list = raw
            .list("/conformance/", Default::default())
            .await
            .expect("raw list");
        for kv in list.items {
            // `/conformance/GROUP/RESOURCE...` names a resource (`*.*`);
            // a shorter key names none and is stored as it is.
            if kv.key.matches('/').count() < 3 {
                assert!(!kv.value.starts_with(b"k8s:enc:"), "{}", kv.key);
                continue;
            }
            assert!(
                kv.value.starts_with(b"k8s:enc:aesgcm:v1:key1:"),
                "{} stored as {:?}",
                kv.key,
                kv.value
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "the suite left values to check");
    drop(dirs);
}
