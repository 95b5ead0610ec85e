import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** A self-signed certificate for `names` (DNS names or IP addresses), made with openssl. */
export function selfSignedCert(dir: string, label: string, names: string[]): { cert: string; key: string } {
  const cert = join(dir, `${label}.crt`);
  const key = join(dir, `${label}.key`);
  const san = names.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', `/CN=${label}`, '-addext', `subjectAltName=${san}`, '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' });
  return { cert, key };
}
