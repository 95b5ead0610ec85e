#!/bin/sh
# Starts a Strongroom server in a container, with the config named by STRONGROOM_CONFIG.
#
# A node sealed by the transit seal needs the token that lets it use its key on the unseal
# service. That token only exists once bootstrap has run, so such a node is started with
# STRONGROOM_SEAL_TOKEN_FILE and waits here for the file; a restarted node finds it at once.
# The token is handed to the server as VAULT_TOKEN and never written to the output.
set -eu

: "${STRONGROOM_CONFIG:?STRONGROOM_CONFIG must name the server config file}"
STRONGROOM_HOME="${STRONGROOM_HOME:-/opt/strongroom}"
# Long enough for a first bootstrap on a slow machine; bounded so that a topology whose
# bootstrap never ran says so instead of waiting forever in silence.
wait_limit="${STRONGROOM_SEAL_TOKEN_WAIT:-1800}"

log() {
  echo "entrypoint: $*" >&2
}

read_token() {
  # The file is read twice a second apart, so a token still being written is never taken.
  first="$(cat "$STRONGROOM_SEAL_TOKEN_FILE" 2>/dev/null || true)"
  sleep 1
  second="$(cat "$STRONGROOM_SEAL_TOKEN_FILE" 2>/dev/null || true)"
  [ -n "$first" ] && [ "$first" = "$second" ]
}

if [ -n "${STRONGROOM_SEAL_TOKEN_FILE:-}" ]; then
  case "$wait_limit" in
    '' | *[!0-9]*)
      log "STRONGROOM_SEAL_TOKEN_WAIT must be a whole number of seconds"
      exit 2
      ;;
  esac
  started="$(date +%s)"
  next_note=0
  until read_token; do
    waited=$(( $(date +%s) - started ))
    if [ "$waited" -ge "$wait_limit" ]; then
      log "no seal token in $STRONGROOM_SEAL_TOKEN_FILE after ${waited}s; has the bootstrap service run?"
      exit 1
    fi
    if [ "$waited" -ge "$next_note" ]; then
      log "waiting for the seal token file $STRONGROOM_SEAL_TOKEN_FILE (bootstrap writes it), ${waited}s of ${wait_limit}s"
      next_note=$(( waited + 30 ))
    fi
    sleep 1
  done
  VAULT_TOKEN="$second"
  export VAULT_TOKEN
  unset first second
  log "seal token read from $STRONGROOM_SEAL_TOKEN_FILE"
fi

exec node "$STRONGROOM_HOME/packages/cli/bin/strongroom.js" server -config="$STRONGROOM_CONFIG" "$@"
