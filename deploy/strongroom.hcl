# A single node serving plain HTTP on loopback. For anything beyond a trial, give the listener
# tls_cert_file and tls_key_file and drop tls_disable.
storage "raft" {
  path    = "./data"
  node_id = "node1"
}

listener "tcp" {
  address     = "127.0.0.1:8200"
  tls_disable = true
}

api_addr = "http://127.0.0.1:8200"
