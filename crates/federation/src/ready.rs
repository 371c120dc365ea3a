//! Waiting for a shared reflector store's first list without being stranded.
//!
//! kube-runtime's `Store::wait_until_ready` is a `DelayedInit` over one
//! futures oneshot, which keeps a single waker: of several tasks waiting on
//! one store at once only the one that polled last is woken when the list
//! completes. A kube-runtime `Controller` over a store is such a waiter, so
//! any other task of ours awaiting the same store could sleep forever (seen
//! as the MCS controller never starting, 1 e2e run in ~27). [`wait_listed`]
//! polls again every [`READY_POLL`], which bounds the delay after the list.

use std::time::Duration;

use kube::runtime::reflector::{Lookup, Store};

/// How often a wait for a store's first list looks again.
pub const READY_POLL: Duration = Duration::from_millis(200);

/// Wait until `store` holds a full list; false when its writer is gone
/// before it listed.
pub async fn wait_listed<K>(store: &Store<K>) -> bool
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    loop {
        tokio::select! {
            r = store.wait_until_ready() => return r.is_ok(),
            () = tokio::time::sleep(READY_POLL) => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher::Event;

    fn resource() -> ApiResource {
        ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
    }

    #[tokio::test]
    async fn a_later_waiter_on_a_shared_store_does_not_strand_an_earlier_one() {
        let mut writer = Writer::<DynamicObject>::new(resource());
        let reader = writer.as_reader();
        let ours = tokio::spawn({
            let r = reader.clone();
            async move { wait_listed(&r).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let other = tokio::spawn({
            let r = reader.clone();
            async move { r.wait_until_ready().await.is_ok() }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!ours.is_finished(), "nothing listed yet");
        writer.apply_watcher_event(&Event::InitDone);
        let waited = tokio::time::timeout(Duration::from_secs(2), ours).await;
        assert!(
            matches!(waited, Ok(Ok(true))),
            "the earlier wait never ended"
        );
        assert!(other.await.unwrap());
        // A writer gone before any list: false, not a hang.
        let writer = Writer::<DynamicObject>::new(resource());
        let reader = writer.as_reader();
        drop(writer);
        assert!(!wait_listed(&reader).await);
    }
}
