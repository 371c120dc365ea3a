//! TODO: the propagation controllers.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::FederationOptions;
use crate::members::Members;

/// Run the propagation controllers until `stop`.
pub async fn run(
    _client: kube::Client,
    _members: Arc<Members>,
    _options: FederationOptions,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    stop.cancelled().await;
    Ok(())
}
