/**
 * The built-in `default` policy, attached to tokens unless they opt out. It lets a token manage
 * itself and use the per-token facilities (cubbyhole, wrapping, hashing) and nothing else.
 * Vault clients expect these grants to exist, so the set follows Vault's; templated
 * identity paths are left out because policy templating is not supported.
 */
export const DEFAULT_POLICY_NAME = 'default';

export const DEFAULT_POLICY_TEXT = `# Built-in policy held by every token that does not opt out of it.

# A token can inspect, extend and give up its own lease on life.
path "auth/token/lookup-self" {
  capabilities = ["read"]
}

path "auth/token/renew-self" {
  capabilities = ["update"]
}

path "auth/token/revoke-self" {
  capabilities = ["update"]
}

# A token can ask what it may do, per path and as a whole (the UI uses the latter).
path "sys/capabilities-self" {
  capabilities = ["update"]
}

path "sys/internal/ui/resultant-acl" {
  capabilities = ["read"]
}

# Leases handed out to this token can be looked up and renewed.
path "sys/renew" {
  capabilities = ["update"]
}

path "sys/leases/renew" {
  capabilities = ["update"]
}

path "sys/leases/lookup" {
  capabilities = ["update"]
}

# Response wrapping: wrap data, inspect a wrapping token, and unwrap one.
path "sys/wrapping/wrap" {
  capabilities = ["update"]
}

path "sys/wrapping/lookup" {
  capabilities = ["update"]
}

path "sys/wrapping/unwrap" {
  capabilities = ["update"]
}

# Hashing with the server's keyed hash, with or without an algorithm in the path.
path "sys/tools/hash" {
  capabilities = ["update"]
}

path "sys/tools/hash/*" {
  capabilities = ["update"]
}

# The cubbyhole is private to the token, so the token gets full use of it.
path "cubbyhole/*" {
  capabilities = ["create", "read", "update", "delete", "list"]
}

# Requesting a control-group authorization and answering an MFA challenge.
path "sys/control-group/request" {
  capabilities = ["update"]
}

path "sys/mfa/challenge" {
  capabilities = ["update"]
}
`;
