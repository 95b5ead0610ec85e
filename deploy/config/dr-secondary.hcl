# Every node of the DR secondary cluster: a standby copy of the primary, promoted in a
# failover. Per-node values come from VAULT_RAFT_NODE_ID, VAULT_API_ADDR, VAULT_CLUSTER_ADDR.
storage "raft" {
  path = "/strongroom/data"

  retry_join {
    leader_api_addr = "http://dr-1:8200"
  }
  retry_join {
    leader_api_addr = "http://dr-2:8200"
  }
  retry_join {
    leader_api_addr = "http://dr-3:8200"
  }
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

seal "transit" {
  address    = "http://unseal:8200"
  key_name   = "dr-secondary"
  mount_path = "transit/"
}

# Once promoted it ships WALs to its own secondaries, with the same buffer as the primary.
replication {
  logshipper_buffer_length = 16384
}
