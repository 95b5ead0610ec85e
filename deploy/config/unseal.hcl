# The transit seal provider: a one-node cluster whose transit engine holds the keys that seal
# the primary and both secondaries. It is the root of trust of the topology and is unsealed by
# hand (its unseal key is in the operator's volume); everything else unseals itself through it.
storage "raft" {
  path    = "/strongroom/data"
  node_id = "unseal"
}

listener "tcp" {
  address         = "0.0.0.0:8200"
  cluster_address = "0.0.0.0:8201"
  # Plain HTTP only inside the compose networks; see deploy/PRODUCTION.md for TLS.
  tls_disable = true
}

api_addr     = "http://unseal:8200"
cluster_addr = "https://unseal:8201"
