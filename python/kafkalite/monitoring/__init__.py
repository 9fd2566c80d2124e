"""Watching a running broker: a parser of its Prometheus endpoint, `kafkalite top`, and
the Grafana dashboard (grafana-dashboard.json) that reads the same metrics."""
