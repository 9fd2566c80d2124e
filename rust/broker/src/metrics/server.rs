//! The scrape endpoint: a minimal HTTP/1.1 server answering `GET /metrics` (and `/`) with
//! the text format, one request per connection. Anything else gets 404; a request head over
//! 8 KiB or slower than 5 s is dropped, so a stray client cannot hold the broker's memory.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::state::BrokerState;

const HEAD_MAX: usize = 8 << 10;
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

// Parsed with the rest of the config (config.rs must not import this server, which
// imports the broker state: an import circle).
pub use crate::config::parse_metrics_listen as parse_listen;

pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot serve metrics on {addr} (metrics.listen): {e}"))
}

pub async fn serve(
    socket: TcpListener,
    state: Arc<BrokerState>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let stream = tokio::select! {
            r = socket.accept() => match r {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
            _ = shutdown.changed() => return,
        };
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let _ = answer(stream, &state).await;
        });
    }
}

async fn answer(mut stream: TcpStream, state: &BrokerState) -> std::io::Result<()> {
    let Ok(Ok(head)) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await else {
        return Ok(());
    };
    let first = head.lines().next().unwrap_or_default();
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or_default();
    let (status, body, kind) = if method == "GET" && (path == "/metrics" || path == "/") {
        let text = super::exposition::render(state);
        ("200 OK", text, "text/plain; version=0.0.4; charset=utf-8")
    } else {
        (
            "404 Not Found",
            "try GET /metrics\n".to_string(),
            "text/plain; charset=utf-8",
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

async fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 || head.len() + n > HEAD_MAX {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_values() {
        assert_eq!(
            parse_listen("http://127.0.0.1:9404/metrics").unwrap(),
            "127.0.0.1:9404".parse().unwrap()
        );
        assert_eq!(parse_listen("0.0.0.0:9404").unwrap().port(), 9404);
        let e = parse_listen("localhost").unwrap_err().to_string();
        assert!(
            e.contains("metrics.listen") && e.contains("localhost"),
            "{e}"
        );
    }
}
