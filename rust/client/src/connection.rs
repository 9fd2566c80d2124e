//! One TCP connection to one broker: request framing, correlation ids, size-bounded
//! responses, and the ApiVersions exchange that opens it. Requests go one at a time
//! (`&mut self`); a failure that may leave half a frame on the stream ends the connection
//! (the [`Client`](crate::Client) drops it and reconnects).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
    SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::{
    Decodable, Encodable, HeaderVersion, Request, StrBytes, VersionRange,
};
use kafkalite_core::error_codes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::address::Address;
use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::security::{ClientSecurity, SaslPlain, Transport};
use crate::versions::{self, BrokerVersions};

pub struct Connection {
    broker: String,
    stream: Box<dyn Transport>,
    correlation_id: i32,
    client_id: StrBytes,
    response_bytes_max: usize,
    request_timeout: Duration,
    versions: BrokerVersions,
}

impl Connection {
    /// Connect, then learn the broker's API versions.
    pub async fn open(address: &Address, config: &ClientConfig) -> Result<Connection> {
        Self::open_secured(address, config, &ClientSecurity::default()).await
    }

    /// `open` over TLS and/or authenticated with SASL PLAIN, as `security` says.
    pub async fn open_secured(
        address: &Address,
        config: &ClientConfig,
        security: &ClientSecurity,
    ) -> Result<Connection> {
        let broker = address.to_string();
        let io = |source| Error::Io {
            broker: broker.clone(),
            source,
        };
        let setup = config.connect_timeout.unwrap_or(config.request_timeout);
        let connect = connect(address, config.receive_buffer_bytes);
        let stream = tokio::time::timeout(setup, connect)
            .await
            .map_err(|_| io(timed_out(setup)))?
            .map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        let stream: Box<dyn Transport> = match &security.tls {
            None => Box::new(stream),
            Some(tls) => {
                let name = match &tls.server_name {
                    Some(name) => name.clone(),
                    None => rustls::pki_types::ServerName::try_from(address.host.clone()).map_err(
                        |e| io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
                    )?,
                };
                let connector =
                    tokio_rustls::TlsConnector::from(std::sync::Arc::clone(&tls.config));
                let handshake = connector.connect(name, stream);
                Box::new(
                    tokio::time::timeout(setup, handshake)
                        .await
                        .map_err(|_| io(timed_out(setup)))?
                        .map_err(io)?,
                )
            }
        };
        let mut conn = Connection {
            broker,
            stream,
            correlation_id: 0,
            client_id: StrBytes::from_string(config.client_id.clone()),
            response_bytes_max: config.response_bytes_max,
            request_timeout: config.request_timeout,
            versions: BrokerVersions::default(),
        };
        conn.negotiate().await?;
        if let Some(sasl) = &security.sasl {
            conn.authenticate_plain(sasl).await?;
        }
        Ok(conn)
    }

    /// SASL PLAIN: SaslHandshake, then SaslAuthenticate (KIP-152), so the exchange is
    /// framed as Kafka requests.
    async fn authenticate_plain(&mut self, sasl: &SaslPlain) -> Result<()> {
        let version = self.version(ApiKey::SaslHandshake, VersionRange { min: 1, max: 1 })?;
        let handshake =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
        let response = self.call(&handshake, version, Duration::ZERO).await?;
        if response.error_code != error_codes::NONE {
            return Err(Error::Broker {
                broker: self.broker.clone(),
                what: format!(
                    "SaslHandshake (PLAIN; the listener enables {:?})",
                    response
                        .mechanisms
                        .iter()
                        .map(|m| m.to_string())
                        .collect::<Vec<_>>()
                ),
                code: response.error_code,
            });
        }
        let version = self.version(ApiKey::SaslAuthenticate, VersionRange { min: 0, max: 2 })?;
        let auth = SaslAuthenticateRequest::default()
            .with_auth_bytes(ClientSecurity::plain_auth_bytes(sasl).into());
        let response = self.call(&auth, version, Duration::ZERO).await?;
        if response.error_code != error_codes::NONE {
            return Err(Error::Broker {
                broker: self.broker.clone(),
                what: format!(
                    "SaslAuthenticate as {:?}: {}",
                    sasl.username,
                    response.error_message.as_deref().unwrap_or("")
                ),
                code: response.error_code,
            });
        }
        Ok(())
    }

    /// `host:port` of the broker, as errors name it.
    #[must_use]
    pub fn broker(&self) -> &str {
        &self.broker
    }

    /// The version to use for `key`: the highest both sides support.
    pub fn version(&self, key: ApiKey, ours: VersionRange) -> Result<i16> {
        self.versions
            .pick(key, ours)
            .map_err(|theirs| Error::UnsupportedVersion {
                broker: self.broker.clone(),
                api: key,
                ours,
                theirs,
            })
    }

    /// Send `request` at `version` and decode its response. `extra_wait` lengthens the
    /// deadline for requests the broker may hold (a Fetch's `max_wait_ms`).
    pub async fn call<R: Request>(
        &mut self,
        request: &R,
        version: i16,
        extra_wait: Duration,
    ) -> Result<R::Response> {
        let correlation_id = self.send(request, version).await?;
        let mut body = self
            .receive(
                correlation_id,
                R::Response::header_version(version),
                extra_wait,
            )
            .await?;
        R::Response::decode(&mut body, version).map_err(|e| {
            self.protocol(format!(
                "cannot decode {:?} v{version} response: {e}",
                api_key::<R>()
            ))
        })
    }

    /// Send `request` and expect no response (Produce with acks=0).
    pub async fn send_only<R: Request>(&mut self, request: &R, version: i16) -> Result<()> {
        self.send(request, version).await.map(|_| ())
    }

    async fn send<R: Request>(&mut self, request: &R, version: i16) -> Result<i32> {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(self.client_id.clone()));
        let mut frame = BytesMut::with_capacity(256);
        frame.extend_from_slice(&[0; 4]);
        header
            .encode(&mut frame, R::header_version(version))
            .and_then(|()| request.encode(&mut frame, version))
            .map_err(|e| Error::Protocol {
                broker: self.broker.clone(),
                message: format!("cannot encode {:?} v{version}: {e}", api_key::<R>()),
            })?;
        let size = i32::try_from(frame.len() - 4)
            .map_err(|_| self.protocol("request over 2 GiB".into()))?;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        let write = self.stream.write_all(&frame);
        deadline(&self.broker, self.request_timeout, write).await?;
        Ok(self.correlation_id)
    }

    /// The body of the next response, which must answer `correlation_id`.
    async fn receive(
        &mut self,
        correlation_id: i32,
        header_version: i16,
        extra_wait: Duration,
    ) -> Result<Bytes> {
        let mut size = [0u8; 4];
        let read = self.stream.read_exact(&mut size);
        deadline(&self.broker, self.request_timeout + extra_wait, read).await?;
        let size = i32::from_be_bytes(size);
        // Bound the frame before allocating it: a broken peer's length is not a size.
        let len = usize::try_from(size).unwrap_or(usize::MAX);
        if len < 4 || len > self.response_bytes_max {
            return Err(self.protocol(format!(
                "response frame of {size} bytes (limit {})",
                self.response_bytes_max
            )));
        }
        let mut frame = BytesMut::zeroed(len);
        let read = self.stream.read_exact(&mut frame);
        deadline(&self.broker, self.request_timeout, read).await?;
        let mut frame = frame.freeze();
        let header = ResponseHeader::decode(&mut frame, header_version)
            .map_err(|e| self.protocol(format!("cannot decode a response header: {e}")))?;
        if header.correlation_id != correlation_id {
            return Err(self.protocol(format!(
                "response correlation id {} does not answer request {correlation_id}",
                header.correlation_id
            )));
        }
        Ok(frame)
    }

    /// ApiVersions at our highest version; a broker that cannot parse it answers v0 with
    /// UNSUPPORTED_VERSION and its ranges, and the exchange is repeated at v0.
    async fn negotiate(&mut self) -> Result<()> {
        let mut version = versions::API_VERSIONS.max;
        loop {
            let request = ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("kafkalite"))
                .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
            let request = if version >= 3 {
                request
            } else {
                ApiVersionsRequest::default()
            };
            let correlation_id = self.send(&request, version).await?;
            let header_version = ApiVersionsResponse::header_version(version);
            let body = self
                .receive(correlation_id, header_version, Duration::ZERO)
                .await?;
            let response = ApiVersionsResponse::decode(&mut body.clone(), version)
                .or_else(|_| ApiVersionsResponse::decode(&mut body.clone(), 0))
                .map_err(|e| self.protocol(format!("cannot decode ApiVersions: {e}")))?;
            // A broker that cannot parse our version answers v0 with UNSUPPORTED_VERSION.
            if response.error_code == error_codes::UNSUPPORTED_VERSION && version > 0 {
                version = 0;
                continue;
            }
            if response.error_code != error_codes::NONE {
                return Err(Error::Broker {
                    broker: self.broker.clone(),
                    what: "ApiVersions".into(),
                    code: response.error_code,
                });
            }
            for key in response.api_keys {
                self.versions.insert(
                    key.api_key,
                    VersionRange {
                        min: key.min_version,
                        max: key.max_version,
                    },
                );
            }
            return Ok(());
        }
    }

    fn protocol(&self, message: String) -> Error {
        Error::Protocol {
            broker: self.broker.clone(),
            message,
        }
    }
}

fn api_key<R: Request>() -> ApiKey {
    ApiKey::try_from(R::KEY).unwrap_or(ApiKey::ApiVersions)
}

/// A socket for `addr` with SO_RCVBUF set to `receive_buffer_bytes` (before it connects,
/// so the TCP window scale is chosen for it).
fn socket_for(addr: std::net::SocketAddr, receive_buffer_bytes: u32) -> std::io::Result<TcpSocket> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_recv_buffer_size(receive_buffer_bytes)?;
    Ok(socket)
}

/// Connect to the first of `address`'s resolved addresses that takes the connection.
async fn connect(
    address: &Address,
    receive_buffer_bytes: Option<u32>,
) -> std::io::Result<TcpStream> {
    let target = (address.host.as_str(), address.port);
    let Some(bytes) = receive_buffer_bytes else {
        return TcpStream::connect(target).await;
    };
    let mut last = None;
    for addr in tokio::net::lookup_host(target).await? {
        match socket_for(addr, bytes)?.connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the address resolves to nothing",
        )
    }))
}

fn timed_out(limit: Duration) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no answer within {} ms", limit.as_millis()),
    )
}

/// `io` bounded by `limit`; a timeout is an I/O error naming the broker.
async fn deadline<T>(
    broker: &str,
    limit: Duration,
    io: impl std::future::Future<Output = std::io::Result<T>>,
) -> Result<T> {
    let io_error = |source| Error::Io {
        broker: broker.to_string(),
        source,
    };
    tokio::time::timeout(limit, io)
        .await
        .map_err(|_| io_error(timed_out(limit)))?
        .map_err(io_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn the_receive_buffer_is_set_before_connecting() {
        let _rt = runtime().enter();
        let addr = "127.0.0.1:9".parse().unwrap();
        let small = socket_for(addr, 8192).unwrap().recv_buffer_size().unwrap();
        let large = socket_for(addr, 256 << 10)
            .unwrap()
            .recv_buffer_size()
            .unwrap();
        // Linux keeps twice what is asked (room for its bookkeeping), within rmem_max.
        assert!((8192..=2 * 8192).contains(&small), "{small}");
        assert!(large > small, "{small} {large}");
    }

    #[test]
    fn opening_a_connection_is_bounded_by_the_setup_timeout() {
        runtime().block_on(async {
            // A listener that never accepts, with its queue full: the next SYN goes
            // unanswered, as from a broker that is down behind a firewall.
            let listener = TcpSocket::new_v4().unwrap();
            listener.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let listener = listener.listen(0).unwrap();
            let port = listener.local_addr().unwrap().port();
            let mut queued = Vec::new();
            for _ in 0..4 {
                let attempt = TcpStream::connect(("127.0.0.1", port));
                if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_millis(200), attempt).await {
                    queued.push(s);
                }
            }
            let config = ClientConfig {
                connect_timeout: Some(Duration::from_millis(300)),
                request_timeout: Duration::from_secs(10),
                ..ClientConfig::default()
            };
            let address = Address {
                host: "127.0.0.1".into(),
                port,
            };
            let started = std::time::Instant::now();
            let e = Connection::open(&address, &config).await.err().unwrap();
            let took = started.elapsed();
            // The setup bound, not the request timeout.
            assert!(took < Duration::from_secs(5), "{took:?} {e}");
            assert!(e.to_string().contains("no answer within 300 ms"), "{e}");
            drop(queued);
        });
    }
}
