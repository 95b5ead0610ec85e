#!/usr/bin/env node
// The container health check: exits 0 when the server's sys/health answers 2xx, 1 otherwise
// (slim images have no curl). The URL may be given as the only argument.
'use strict';

const DEFAULT_URL =
  'http://127.0.0.1:8200/v1/sys/health?standbyok=true&perfstandbyok=true&drsecondarycode=200&sealedcode=503&uninitcode=501';
// Below the health check's own timeout, so that this process reports rather than being killed.
const TIMEOUT_MS = 4000;

async function check(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    await res.arrayBuffer();
    process.stdout.write(`sys/health: ${res.status}\n`);
    return res.status >= 200 && res.status < 300 ? 0 : 1;
  } catch (err) {
    process.stdout.write(`sys/health: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

check(process.argv[2] ?? DEFAULT_URL).then((code) => {
  process.exitCode = code;
});
