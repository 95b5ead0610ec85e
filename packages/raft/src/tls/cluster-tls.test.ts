import { X509Certificate, createPrivateKey } from 'node:crypto';
import { FakeClock } from '@strongroom/base';
import { CLUSTER_SERVER_NAME } from './cluster-name';
import { createClusterTls } from './cluster-tls';

const DAY = 24 * 60 * 60 * 1000;

describe('createClusterTls', () => {
  it('issues a P-256 cluster certificate for client and server use, under a fresh CA', async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 1));
    const tls = await createClusterTls(clock);
    const ca = new X509Certificate(tls.caCert);
    const cert = new X509Certificate(tls.cert);

    expect(ca.ca).toBe(true);
    expect(ca.verify(ca.publicKey)).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkHost(CLUSTER_SERVER_NAME)).toBe(CLUSTER_SERVER_NAME);
    expect(cert.checkHost('127.0.0.1')).toBeUndefined();
    expect(cert.keyUsage).toEqual(expect.arrayContaining(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']));
    expect(cert.publicKey.asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
    expect(cert.checkPrivateKey(createPrivateKey(tls.key))).toBe(true);

    for (const c of [ca, cert]) {
      expect(Date.parse(c.validFrom)).toBeLessThanOrEqual(clock.now());
      const lifetime = Date.parse(c.validTo) - clock.now();
      expect(lifetime).toBeGreaterThan(364 * DAY);
      expect(lifetime).toBeLessThanOrEqual(366 * DAY);
    }
  });

  it('makes a new CA every time, so one cluster never trusts another', async () => {
    const [a, b] = await Promise.all([createClusterTls(), createClusterTls()]);
    expect(new X509Certificate(a.cert).verify(new X509Certificate(b.caCert).publicKey)).toBe(false);
  });
});
