//! The broker's lifecycle: open the logs, bind every listener, serve, compact on demand,
//! shut down. Connections are `net`'s business; requests are the handlers'.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::config::BrokerConfig;
use crate::log_maintenance::{self, LogMaintenance, PartitionCompaction};
use crate::log_scrubber::LogScrubber;
use crate::net::acceptor;
use crate::state::BrokerState;

/// A running broker: its runtime, listeners and state.
pub struct Broker {
    runtime: Option<tokio::runtime::Runtime>,
    state: Arc<BrokerState>,
    shutdown: watch::Sender<bool>,
    addrs: Vec<(String, SocketAddr)>,
    maintenance: Option<LogMaintenance>,
    scrubber: Option<LogScrubber>,
    metrics_addr: Option<SocketAddr>,
}

impl Broker {
    /// Open the logs, bind every listener and start serving.
    pub fn start(config: BrokerConfig, worker_threads: usize) -> anyhow::Result<Broker> {
        // The schema checked the name; the threshold is process-wide, as log4j's root level.
        let level = config.raw.get("log.level").map_or("INFO", String::as_str);
        kafkalite_core::logging::set_level(level).map_err(anyhow::Error::msg)?;
        crate::fd_budget::raise_soft_limit();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads.max(1))
            .thread_name("kafkalite-broker")
            .enable_all()
            .build()?;
        let listeners = config.listeners.clone();
        let state = BrokerState::open(config)?;
        if let Some(link) = &state.cluster {
            let _ = link.runtime.set(runtime.handle().clone());
        }
        let (shutdown, watcher) = watch::channel(false);
        let mut addrs = Vec::new();
        let backlog = u32::try_from(state.config.settings.int("socket.listen.backlog.size"))
            .unwrap_or(acceptor::LISTEN_BACKLOG_DEFAULT);
        for listener in listeners {
            let socket = runtime.block_on(acceptor::bind(&listener, backlog))?;
            addrs.push((listener.name.clone(), socket.local_addr()?));
            runtime.spawn(acceptor::accept_loop(
                socket,
                listener,
                Arc::clone(&state),
                watcher.clone(),
            ));
        }
        let _ = state.advertised.set(advertised_for(&state.config, &addrs));
        let metrics_addr = match state.config.metrics_listen {
            Some(addr) => {
                let socket = runtime.block_on(crate::metrics::server::bind(addr))?;
                let bound = socket.local_addr()?;
                runtime.spawn(crate::metrics::server::serve(
                    socket,
                    Arc::clone(&state),
                    watcher.clone(),
                ));
                Some(bound)
            }
            None => None,
        };
        let maintenance = Some(LogMaintenance::start(Arc::clone(&state))?);
        let scrubber = LogScrubber::start(Arc::clone(&state))?;
        if let Some(fetchers) = &state.fetchers {
            fetchers.set_runtime(runtime.handle().clone());
            runtime.spawn(crate::replication::leader::shrink_loop(
                Arc::clone(&state),
                fetchers.config.lag_time_max_ms,
            ));
        }
        Ok(Broker {
            runtime: Some(runtime),
            state,
            shutdown,
            addrs,
            maintenance,
            scrubber,
            metrics_addr,
        })
    }

    /// Where the Prometheus endpoint listens (`metrics.listen`, port 0 resolved).
    #[must_use]
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Listener name and bound address (ephemeral ports resolved).
    #[must_use]
    pub fn addresses(&self) -> &[(String, SocketAddr)] {
        &self.addrs
    }

    #[must_use]
    pub fn state(&self) -> &Arc<BrokerState> {
        &self.state
    }

    /// Run a cleaner pass now over `topic`'s partitions (every topic when `None`); see
    /// `log_maintenance::compact`.
    #[must_use]
    pub fn compact(&self, topic: Option<&str>, force: bool) -> Vec<PartitionCompaction> {
        log_maintenance::compact(&self.state, topic, force)
    }

    /// Stop accepting, drop connections, close every log cleanly.
    pub fn shutdown(&mut self) -> anyhow::Result<()> {
        let Some(runtime) = self.runtime.take() else {
            return Ok(());
        };
        // A cleaner pass in progress finishes (or is discarded) before the logs close.
        if let Some(mut maintenance) = self.maintenance.take() {
            maintenance.stop();
        }
        if let Some(mut scrubber) = self.scrubber.take() {
            scrubber.stop();
        }
        if let Some(fetchers) = &self.state.fetchers {
            fetchers.stop_all();
        }
        let _ = self.shutdown.send(true);
        runtime.shutdown_timeout(Duration::from_secs(5));
        self.state.close()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl Broker {
    /// What Metadata tells clients: `advertised.listeners`, else each bound address (a
    /// wildcard bind is advertised as 127.0.0.1, since nothing better is known).
    #[must_use]
    pub fn advertised_listeners(&self) -> Vec<(String, String, u16)> {
        self.state.advertised.get().cloned().unwrap_or_default()
    }
}

#[must_use]
pub fn advertised_for(
    config: &BrokerConfig,
    addrs: &[(String, SocketAddr)],
) -> Vec<(String, String, u16)> {
    if !config.advertised.is_empty() {
        return config.advertised.clone();
    }
    addrs
        .iter()
        .map(|(name, addr)| {
            let host = if addr.ip().is_unspecified() {
                "127.0.0.1".to_string()
            } else {
                addr.ip().to_string()
            };
            (name.clone(), host, addr.port())
        })
        .collect()
}
