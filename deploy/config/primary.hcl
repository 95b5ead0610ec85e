# Every node of the primary cluster. The per-node values come from the environment:
# VAULT_RAFT_NODE_ID, VAULT_API_ADDR and VAULT_CLUSTER_ADDR (as in Vault), and VAULT_TOKEN for
# the transit seal.
storage "raft" {
  path = "/strongroom/data"

  # Each node keeps trying these until it is part of the cluster, so no node needs an
  # explicit join and a replaced node finds its way back.
  retry_join {
    leader_api_addr = "http://primary-1:8200"
  }
  retry_join {
    leader_api_addr = "http://primary-2:8200"
  }
  retry_join {
    leader_api_addr = "http://primary-3:8200"
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

# A restarted node unseals itself with this key, held by the unseal service.
seal "transit" {
  address    = "http://unseal:8200"
  key_name   = "primary"
  mount_path = "transit/"
}

replication {
  logshipper_buffer_length = 16384
}
