# The performance secondary in another region: it serves reads locally and forwards writes to
# the primary over the primary's cluster port, the only port of the primary it reaches.
storage "raft" {
  path    = "/strongroom/data"
  node_id = "perf-1"
}

listener "tcp" {
  address         = "0.0.0.0:8200"
  cluster_address = "0.0.0.0:8201"
  tls_disable     = true

  # Prometheus scrapes sys/metrics without a token on this listener (the compose networks
  # only). A DR secondary answers sys/metrics nowhere else, since it serves no other path.
  telemetry {
    unauthenticated_metrics_access = true
  }
}

api_addr     = "http://perf-1:8200"
cluster_addr = "https://perf-1:8201"

seal "transit" {
  address    = "http://unseal:8200"
  key_name   = "perf-secondary"
  mount_path = "transit/"
}
