//! Storage layers in one place: a [`ValueLayer`] transforms values on their
//! way to the layer below and back (kube's `value.Transformer`:
//! `TransformToStorage`, `TransformFromStorage` with its `stale` flag and
//! the key as data context), and [`Layered`] is the one [`Storage`] that
//! applies a layer over another storage. Every `Storage` method is
//! implemented here once: values written are transformed on the way in
//! (create, update), values read on the way out (get, list, the value a
//! delete returns, watch events and their previous values), and everything
//! else (revisions, compaction, progress, consistent reads) is forwarded.
//!
//! So a new `Storage` method is added in exactly one wrapper (this file),
//! and no layer can forget to forward it. Encryption at rest
//! ([`crate::encryption`]), and the registry's version stamping, built-in
//! conversion, webhook conversion and shared write marks are all layers;
//! they stack as `Layered<A>` over `Layered<B>` over an engine.
//!
//! A layer that does more than transform values has three hooks besides
//! the two transformations: [`ValueLayer::transform_from_storage_batch`] (transform
//! several values read together in one go: a list page, a watch event and
//! its previous value), [`ValueLayer::wrote`] (told the revision of every
//! write) and [`ValueLayer::consistent_read_revision`] (adjust or refuse
//! the revision a consistent read waits for).

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;

use crate::{
    Event, KeyValue, ListOptions, ListResult, ProgressWatchStream, Revision, Storage, StorageError,
    WatchItem, WatchStream,
};

/// Which read a value comes from, for a layer that treats them apart (one
/// call per list page; failures of watch events remembered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Read {
    /// [`Storage::get`] or [`Storage::get_with_staleness`].
    Get,
    /// The items of one [`Storage::list`] page.
    List,
    /// The value a [`Storage::delete`] returns.
    Delete,
    /// A watch event's value and previous value.
    Event,
}

/// A transformation of the values of one storage (kube's
/// `value.Transformer`). Both directions get the key (kube's data context:
/// encryption authenticates it) and can fail with a [`StorageError`].
#[async_trait::async_trait]
pub trait ValueLayer: Send + Sync + 'static {
    /// `value`, written at `key` from above, as the storage below keeps it
    /// (kube's `TransformToStorage`).
    async fn transform_to_storage(&self, key: &str, value: Bytes) -> Result<Bytes, StorageError>;

    /// `value`, kept at `key` below, as read from above, and whether it is
    /// *stale*: readable, but not what a write would store now (kube's
    /// `TransformFromStorage`; see [`Storage::get_with_staleness`]).
    async fn transform_from_storage(
        &self,
        key: &str,
        value: Bytes,
        read: Read,
    ) -> Result<(Bytes, bool), StorageError>;

    /// Several values read together (`read` is [`Read::List`] for a list
    /// page, [`Read::Event`] for a watch event's value then its previous
    /// value), transformed in place. The default transforms them one by one;
    /// a layer whose transformation is a call makes one call.
    async fn transform_from_storage_batch(
        &self,
        kvs: &mut [KeyValue],
        read: Read,
    ) -> Result<(), StorageError> {
        for kv in kvs.iter_mut() {
            let value = std::mem::take(&mut kv.value);
            kv.value = self.transform_from_storage(&kv.key, value, read).await?.0;
        }
        Ok(())
    }

    /// What a successful create or update answers with, given the value
    /// written from above and the value stored below. The default is the
    /// value written: what a read would transform back to. A layer whose
    /// round trip may change a value (a lossy conversion) answers
    /// `transform_from_storage(stored)` instead.
    async fn written(
        &self,
        key: &str,
        written: Bytes,
        stored: Bytes,
    ) -> Result<Bytes, StorageError> {
        let _ = (key, stored);
        Ok(written)
    }

    /// Told the revision of every successful write (create, update,
    /// delete) through this layer. Default: nothing.
    fn wrote(&self, revision: Revision) {
        let _ = revision;
    }

    /// The revision a consistent read must wait for, given the answer of
    /// the storage below ([`Storage::consistent_read_revision`]). Default:
    /// that answer.
    fn consistent_read_revision(
        &self,
        below: Option<Revision>,
    ) -> Result<Option<Revision>, StorageError> {
        Ok(below)
    }
}

/// A [`ValueLayer`] over another [`Storage`]: the only `Storage` wrapper.
pub struct Layered<L> {
    inner: Arc<dyn Storage>,
    layer: Arc<L>,
}

impl<L: ValueLayer> Layered<L> {
    /// `layer` over `inner`.
    pub fn new(inner: Arc<dyn Storage>, layer: Arc<L>) -> Self {
        Self { inner, layer }
    }

    /// The layer.
    pub fn layer(&self) -> &Arc<L> {
        &self.layer
    }

    /// The storage below.
    pub fn inner(&self) -> &Arc<dyn Storage> {
        &self.inner
    }

    async fn read_one(
        &self,
        mut kv: KeyValue,
        read: Read,
    ) -> Result<(KeyValue, bool), StorageError> {
        let value = std::mem::take(&mut kv.value);
        let (value, stale) = self
            .layer
            .transform_from_storage(&kv.key, value, read)
            .await?;
        kv.value = value;
        Ok((kv, stale))
    }

    async fn write_answer(
        &self,
        mut kv: KeyValue,
        written: Bytes,
    ) -> Result<KeyValue, StorageError> {
        self.layer.wrote(kv.mod_revision);
        let stored = std::mem::take(&mut kv.value);
        kv.value = self.layer.written(&kv.key, written, stored).await?;
        Ok(kv)
    }
}

impl<L> std::fmt::Debug for Layered<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layered")
            .field("layer", &std::any::type_name::<L>())
            .finish_non_exhaustive()
    }
}

/// A watch event with its value and previous value read through `layer` in
/// one batch.
async fn read_event<L: ValueLayer>(layer: &L, ev: Event) -> Result<Event, StorageError> {
    let Event { kind, kv, prev } = ev;
    let had_prev = prev.is_some();
    let mut kvs: Vec<KeyValue> = std::iter::once(kv).chain(prev).collect();
    layer
        .transform_from_storage_batch(&mut kvs, Read::Event)
        .await?;
    let mut kvs = kvs.into_iter();
    let kv = kvs
        .next()
        .ok_or_else(|| StorageError::Engine("a layer lost a watch event's value".into()))?;
    let prev = if had_prev { kvs.next() } else { None };
    Ok(Event { kind, kv, prev })
}

#[async_trait::async_trait]
impl<L: ValueLayer> Storage for Layered<L> {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        match self.inner.get(key).await? {
            Some(kv) => Ok(Some(self.read_one(kv, Read::Get).await?.0)),
            None => Ok(None),
        }
    }

    async fn get_with_staleness(
        &self,
        key: &str,
    ) -> Result<Option<(KeyValue, bool)>, StorageError> {
        match self.inner.get_with_staleness(key).await? {
            Some((kv, stale_below)) => {
                let (kv, stale) = self.read_one(kv, Read::Get).await?;
                Ok(Some((kv, stale_below || stale)))
            }
            None => Ok(None),
        }
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        let mut res = self.inner.list(prefix, opts).await?;
        self.layer
            .transform_from_storage_batch(&mut res.items, Read::List)
            .await?;
        Ok(res)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        let stored = self.layer.transform_to_storage(key, value.clone()).await?;
        let kv = self.inner.create(key, stored).await?;
        self.write_answer(kv, value).await
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let stored = self.layer.transform_to_storage(key, value.clone()).await?;
        let kv = self.inner.update(key, stored, expected).await?;
        self.write_answer(kv, value).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        let kv = self.inner.delete(key, expected).await?;
        self.layer.wrote(kv.mod_revision);
        Ok(self.read_one(kv, Read::Delete).await?.0)
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError> {
        let layer = self.layer.clone();
        let events = self.inner.watch(prefix, from).await?;
        Ok(Box::pin(events.then(move |item| {
            let layer = layer.clone();
            async move {
                match item {
                    Ok(ev) => read_event(&*layer, ev).await,
                    Err(e) => Err(e),
                }
            }
        })))
    }

    async fn watch_progress(
        &self,
        prefix: &str,
        from: Revision,
    ) -> Result<ProgressWatchStream, StorageError> {
        let layer = self.layer.clone();
        let items = self.inner.watch_progress(prefix, from).await?;
        Ok(Box::pin(items.then(move |item| {
            let layer = layer.clone();
            async move {
                match item {
                    Ok(WatchItem::Event(ev)) => read_event(&*layer, ev).await.map(WatchItem::Event),
                    other => other,
                }
            }
        })))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    async fn consistent_read_revision(&self) -> Result<Option<Revision>, StorageError> {
        let below = self.inner.consistent_read_revision().await?;
        self.layer.consistent_read_revision(below)
    }

    fn request_progress(&self) {
        self.inner.request_progress();
    }

    fn serves_progress_requests(&self) -> bool {
        self.inner.serves_progress_requests()
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.inner.compacted_revision().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;
    use crate::sled_engine::SledStorage;

    /// Stores `v1:` + the value; reads a value without it as it is, stale.
    struct Tagged;

    #[async_trait::async_trait]
    impl ValueLayer for Tagged {
        async fn transform_to_storage(
            &self,
            _key: &str,
            value: Bytes,
        ) -> Result<Bytes, StorageError> {
            Ok(Bytes::from([b"v1:".as_slice(), &value].concat()))
        }

        async fn transform_from_storage(
            &self,
            _key: &str,
            value: Bytes,
            _read: Read,
        ) -> Result<(Bytes, bool), StorageError> {
            match value.strip_prefix(b"v1:") {
                Some(v) => Ok((Bytes::copy_from_slice(v), false)),
                None => Ok((value, true)),
            }
        }
    }

    /// Changes nothing.
    struct Identity;

    #[async_trait::async_trait]
    impl ValueLayer for Identity {
        async fn transform_to_storage(
            &self,
            _key: &str,
            value: Bytes,
        ) -> Result<Bytes, StorageError> {
            Ok(value)
        }

        async fn transform_from_storage(
            &self,
            _key: &str,
            value: Bytes,
            _read: Read,
        ) -> Result<(Bytes, bool), StorageError> {
            Ok((value, false))
        }
    }

    /// `Identity` over `Tagged` over `engine`.
    fn two_layers(engine: Arc<dyn Storage>) -> Arc<dyn Storage> {
        let tagged: Arc<dyn Storage> = Arc::new(Layered::new(engine, Arc::new(Tagged)));
        Arc::new(Layered::new(tagged, Arc::new(Identity)))
    }

    async fn get(s: &Arc<dyn Storage>, key: &str) -> (KeyValue, bool) {
        s.get_with_staleness(key)
            .await
            .expect("get")
            .expect("present")
    }

    fn sled() -> (tempfile::TempDir, Arc<dyn Storage>) {
        let dir = tempfile::TempDir::new().expect("tempdir");
        let s: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open"));
        (dir, s)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_layer_passes_the_conformance_suite_and_forwards_every_method() {
        let dirs = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let engines = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let (d, e) = (dirs.clone(), engines.clone());
        conformance::run_all(move || {
            let (dirs, engines) = (d.clone(), e.clone());
            async move {
                let (dir, engine) = sled();
                dirs.lock().push(dir);
                engines.lock().push(engine.clone());
                Arc::new(Layered::new(engine, Arc::new(Tagged))) as Arc<dyn Storage>
            }
        })
        .await;
        // What the engines keep went through the layer.
        let engines: Vec<Arc<dyn Storage>> = engines.lock().clone();
        let mut checked = 0;
        for engine in &engines {
            let kept = engine
                .list("/conformance/", ListOptions::default())
                .await
                .expect("list");
            for kv in kept.items {
                assert!(kv.value.starts_with(b"v1:"), "{}", kv.key);
                checked += 1;
            }
        }
        assert!(checked > 0);
        let (_dir, engine) = sled();
        conformance::forwards_every_method(engine, two_layers).await;
    }

    #[tokio::test]
    async fn staleness_from_any_layer_reaches_the_top() {
        let (_dir, engine) = sled();
        let top = two_layers(engine.clone());
        // Written before the layer existed: readable, stale through two layers.
        engine
            .create("/r/a", Bytes::from_static(b"old"))
            .await
            .expect("create");
        let (kv, stale) = get(&top, "/r/a").await;
        assert_eq!((&kv.value[..], stale), (&b"old"[..], true));
        // Rewritten through the stack: current, and kept in the new form.
        top.update("/r/a", kv.value.clone(), kv.mod_revision)
            .await
            .expect("update");
        let (kv, stale) = get(&top, "/r/a").await;
        assert_eq!((&kv.value[..], stale), (&b"old"[..], false));
        let raw = engine.get("/r/a").await.expect("get").expect("present");
        assert_eq!(&raw.value[..], b"v1:old");
    }
}
