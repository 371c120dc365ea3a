//! The network side: hickory-server's `ServerFuture` on one UDP socket and
//! one TCP listener of the same address, handing each decoded request to
//! [`crate::answer::answer_in`] (the question's zone answers). hickory parses the packets (a malformed one
//! gets FORMERR or is dropped, never reaches us half-decoded), limits each
//! TCP connection by an idle timeout and never answers a packet that is
//! itself a response. A request whose questions could not be echoed
//! readably ([`crate::answer::encode`]) gets no answer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Header, ResponseCode};
use hickory_server::ServerFuture;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use tokio::net::{TcpListener, UdpSocket};
use tokio_util::sync::CancellationToken;

use crate::answer::{answer_in, encode, message};
use crate::records::RecordStore;

/// How long a TCP connection may stay idle.
pub const TCP_TIMEOUT: Duration = Duration::from_secs(10);

struct Handler {
    store: Arc<RecordStore>,
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler>(
        &self,
        request: &Request,
        mut response_handle: R,
    ) -> ResponseInfo {
        let response = answer_in(&self.store, request);
        let qtype = request.queries().first().map(|q| q.query_type());
        // Encoded once here to be sure it reads back (see `encode`); hickory
        // encodes it again to send it, with the transport's size limit.
        if encode(request, &response, u16::MAX).is_none() {
            let mut header = Header::response_from_request(request.header());
            header.set_response_code(ResponseCode::FormErr);
            crate::metrics::answered(ResponseCode::FormErr, qtype);
            return header.into();
        }
        crate::metrics::answered(response.header.response_code(), qtype);
        match response_handle
            .send_response(message(request, &response))
            .await
        {
            Ok(info) => info,
            Err(e) => {
                tracing::debug!(error = %e, "sending a DNS response");
                let mut header = Header::response_from_request(request.header());
                header.set_response_code(ResponseCode::ServFail);
                header.into()
            }
        }
    }
}

/// A running DNS server.
#[derive(Debug)]
pub struct DnsServer {
    /// The address it listens on (UDP and TCP).
    pub local_addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl DnsServer {
    /// Bind UDP and TCP on `addr` (port 0: a free port, the same for both)
    /// and answer from `store` (each of its zones) until `stop` is cancelled.
    pub async fn start(
        addr: SocketAddr,
        store: Arc<RecordStore>,
        stop: CancellationToken,
    ) -> anyhow::Result<Self> {
        // Port 0: a free UDP port whose TCP twin is free too (another
        // process may hold the TCP side; then try another port).
        let attempts = if addr.port() == 0 { 20 } else { 1 };
        let mut bound = None;
        let mut last_err = None;
        for _ in 0..attempts {
            let udp = UdpSocket::bind(addr)
                .await
                .map_err(|e| anyhow::anyhow!("binding DNS UDP {addr}: {e}"))?;
            let local_addr = udp.local_addr()?;
            match TcpListener::bind(local_addr).await {
                Ok(tcp) => {
                    bound = Some((udp, tcp, local_addr));
                    break;
                }
                Err(e) => last_err = Some(anyhow::anyhow!("binding DNS TCP {local_addr}: {e}")),
            }
        }
        let Some((udp, tcp, local_addr)) = bound else {
            return Err(last_err.unwrap_or_else(|| anyhow::anyhow!("binding DNS {addr}")));
        };
        let mut server = ServerFuture::new(Handler { store });
        server.register_socket(udp);
        server.register_listener(tcp, TCP_TIMEOUT);
        let task = tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {
                    if let Err(e) = server.shutdown_gracefully().await {
                        tracing::debug!(error = %e, "DNS server shutdown");
                    }
                }
                r = server.block_until_done() => {
                    if let Err(e) = r {
                        tracing::error!(error = %e, "DNS server stopped");
                    }
                }
            }
        });
        tracing::info!(%local_addr, "DNS server listening (UDP and TCP)");
        Ok(Self { local_addr, task })
    }

    /// Wait until the server stopped.
    pub async fn stopped(self) {
        let _ = self.task.await;
    }
}
