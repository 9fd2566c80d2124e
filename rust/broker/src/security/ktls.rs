//! Kernel TLS (kTLS): with the session's keys in the socket, sendfile keeps working under
//! TLS. This build checks whether the kernel offers the `tls` upper-layer protocol and
//! says which path Fetch takes; the hand-over of a rustls session to the kernel is not
//! built yet, so Fetch over TLS copies record bytes through rustls (user space) always.

use std::sync::OnceLock;

/// Whether `setsockopt(TCP_ULP, "tls")` works on a loopback connection (the kernel has
/// the `tls` module). Checked once.
pub fn kernel_has_tls() -> Result<(), String> {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    CHECKED.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let client = std::net::TcpStream::connect(listener.local_addr().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let (_server, _) = listener.accept().map_err(|e| e.to_string())?;
    let ulp = b"tls";
    // SAFETY: a valid socket fd and a buffer of the given length.
    let rc = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_ULP,
            ulp.as_ptr().cast(),
            ulp.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

/// Log, once per broker start with a TLS listener, how Fetch sends record bytes on TLS.
pub fn log_choice() {
    let why = match kernel_has_tls() {
        Ok(()) => {
            "the kernel has kTLS, but handing rustls sessions to it is not built yet".to_string()
        }
        Err(e) => format!("kernel TLS unavailable: setsockopt(TCP_ULP, \"tls\"): {e}"),
    };
    kafkalite_core::logging::log(
        kafkalite_core::logging::Level::Info,
        "kafkalite.security.Tls",
        &format!("Fetch over TLS uses user-space encryption (rustls), not sendfile ({why})"),
    );
}
