import { X509Certificate, createPrivateKey } from 'node:crypto';
import { FakeClock } from '@strongroom/base';
import { createClusterTls } from '@strongroom/raft';
import { certificateFingerprint, createReplicationCa, issueSecondaryCertificate, secondaryIdOf } from './replication-ca';

const der = (pem: string): Buffer => Buffer.from(new X509Certificate(pem).raw);

describe('replication CA and secondary certificates', () => {
  it('issues a client certificate the CA signed, naming the secondary, for the validity asked', async () => {
    const clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const ca = await createReplicationCa(clock);
    const issued = await issueSecondaryCertificate(ca, 'dr-east', 30 * 60 * 1000, clock);
    const cert = new X509Certificate(issued.cert);
    const caCert = new X509Certificate(ca.caCert);
    expect(caCert.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(Date.parse(cert.validTo)).toBe(Date.parse('2030-01-01T00:30:00Z'));
    expect(cert.checkPrivateKey(createPrivateKey(issued.key))).toBe(true);
    expect(secondaryIdOf(der(issued.cert))).toBe('dr-east');
    expect(issued.fingerprint).toBe(certificateFingerprint(der(issued.cert)));
    expect(issued.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('keeps any secondary id intact, and gives each certificate its own serial and fingerprint', async () => {
    const ca = await createReplicationCa();
    const ids = ['a,b=c+d;"e"<f>', 'ünïcødé/ｉｄ', 'x'.repeat(300), 'urn:strongroom:secondary:nested', '%41'];
    const issued = await Promise.all(ids.map((id) => issueSecondaryCertificate(ca, id, 60_000)));
    expect(issued.map((c) => secondaryIdOf(der(c.cert)))).toEqual(ids);
    const again = await issueSecondaryCertificate(ca, ids[0]!, 60_000);
    expect(again.fingerprint).not.toBe(issued[0]!.fingerprint);
    expect(new X509Certificate(again.cert).serialNumber).not.toBe(new X509Certificate(issued[0]!.cert).serialNumber);
  });

  it('reads no secondary id from any other certificate', async () => {
    const cluster = await createClusterTls();
    const ca = await createReplicationCa();
    expect(secondaryIdOf(der(cluster.cert))).toBeNull();
    expect(secondaryIdOf(der(ca.caCert))).toBeNull();
    expect(secondaryIdOf(Buffer.from('not a certificate'))).toBeNull();
  });

  it('refuses an empty id and a validity that is not positive', async () => {
    const ca = await createReplicationCa();
    await expect(issueSecondaryCertificate(ca, '', 60_000)).rejects.toThrow(/empty/);
    await expect(issueSecondaryCertificate(ca, 'x', 0)).rejects.toThrow(/positive/);
  });
});
