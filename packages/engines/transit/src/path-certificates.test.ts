import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { BackendHarness } from '@strongroom/core';
import { ed25519PublicKeyFromRaw } from './crypto';
import { ECDSA_SHA256, ecKeyPair, issue, makeCa, x509Crypto } from './test-support/certificates';
import { keyPairs, spkiPem } from './test-support/import-support';
import { badRequest, data, failure, transitRig } from './test-support/transit-rig';

const provider = x509Crypto;

function spkiDer(key: KeyObject): Buffer {
  return key.export({ format: 'der', type: 'spki' });
}

/** The public key of a version as the key read shows it. */
async function versionKey(h: BackendHarness, name: string, version = 1): Promise<KeyObject> {
  const keys = data(await h.request('read', `keys/${name}`))['keys'] as Record<string, { public_key: string }>;
  const text = keys[String(version)]?.public_key ?? '';
  return text.includes('BEGIN') ? createPublicKey(text) : ed25519PublicKeyFromRaw(Buffer.from(text, 'base64'));
}

async function csrOf(h: BackendHarness, name: string, body: Record<string, unknown> = {}): Promise<x509.Pkcs10CertificateRequest> {
  const resp = data(await h.request('write', `keys/${name}/csr`, body));
  expect(resp).toMatchObject({ name });
  const pem = String(resp['csr']);
  expect(pem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----\n[\s\S]+-----END CERTIFICATE REQUEST-----\n$/);
  return new x509.Pkcs10CertificateRequest(pem);
}

const pem = (c: x509.X509Certificate) => c.toString('pem');

describe('keys/:name/csr', () => {
  it.each(['ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048', 'ed25519'])('signs a CSR for a %s key with the key itself', async (type) => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type });
    const csr = await csrOf(h, 'k');
    expect(await csr.verify(provider)).toBe(true);
    expect(Buffer.from(csr.publicKey.rawData).equals(spkiDer(await versionKey(h, 'k')))).toBe(true);
    expect(csr.subject).toBe('');
  });

  it('keeps the template\'s subject, requested extensions and attributes, but not its key', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type: 'ecdsa-p256' });
    const other = await ecKeyPair();
    const template = await x509.Pkcs10CertificateRequestGenerator.create({
      name: 'CN=app.example.com, O=Example Org, C=DE',
      keys: other,
      signingAlgorithm: ECDSA_SHA256,
      extensions: [
        new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'app.example.com' }, { type: 'ip', value: '10.1.2.3' }]),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      ],
      attributes: [new x509.ChallengePasswordAttribute('open sesame')],
    }, provider);
    const csr = await csrOf(h, 'k', { csr: template.toString('pem') });
    expect(await csr.verify(provider)).toBe(true);
    expect(csr.subject).toBe(template.subject);
    expect(Buffer.from(csr.publicKey.rawData).equals(spkiDer(await versionKey(h, 'k')))).toBe(true);
    const san = csr.getExtension('2.5.29.17');
    expect(san && Buffer.from(san.rawData).equals(Buffer.from(template.getExtension('2.5.29.17')!.rawData))).toBe(true);
    expect(csr.getExtension('2.5.29.15')).not.toBeNull();
    expect(new x509.ChallengePasswordAttribute(csr.getAttribute('1.2.840.113549.1.9.7')!.rawData).password).toBe('open sesame');
  });

  it('signs with the version asked for: a number, latest, or the current one when empty', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type: 'ecdsa-p256' });
    await h.request('write', 'keys/k/rotate');
    const v1 = spkiDer(await versionKey(h, 'k', 1));
    const v2 = spkiDer(await versionKey(h, 'k', 2));
    expect(Buffer.from((await csrOf(h, 'k', { version: 1 })).publicKey.rawData).equals(v1)).toBe(true);
    expect(Buffer.from((await csrOf(h, 'k', { version: 'latest' })).publicKey.rawData).equals(v2)).toBe(true);
    expect(Buffer.from((await csrOf(h, 'k')).publicKey.rawData).equals(v2)).toBe(true);
    await badRequest(h.request('write', 'keys/k/csr', { version: 3 }), 'version');
  });

  it('refuses keys that cannot sign, derived keys, missing keys, bad templates and public-key-only versions', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/aes');
    await h.request('write', 'keys/mac', { type: 'hmac' });
    await h.request('write', 'keys/ded', { type: 'ed25519', derived: true });
    for (const name of ['aes', 'mac']) expect((await failure(h.request('write', `keys/${name}/csr`), 400)).message).toContain('does not support signing');
    expect((await failure(h.request('write', 'keys/ded/csr'), 400)).message).toContain('derivation');
    await failure(h.request('write', 'keys/nope/csr'), 400);
    await h.request('write', 'keys/ec', { type: 'ecdsa-p256' });
    await badRequest(h.request('write', 'keys/ec/csr', { csr: 'not a pem' }), 'csr');
    await badRequest(h.request('write', 'keys/ec/csr', { csr: '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n' }), 'csr');
    const pair = keyPairs['ecdsa-p256']();
    await h.request('write', 'keys/pub/import', { type: 'ecdsa-p256', public_key: spkiPem(pair.publicKey) });
    await badRequest(h.request('write', 'keys/pub/csr'), 'version');
  });
});

describe('keys/:name/set-certificate', () => {
  it('stores a chain whose leaf certifies the version; key read and export show it, even unexportable', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type: 'ecdsa-p256' });
    const ca = await makeCa();
    const leaf = await issue(ca, await versionKey(h, 'k'));
    const resp = data(await h.request('write', 'keys/k/set-certificate', { certificate_chain: `${pem(leaf)}\n${pem(ca.cert)}\n` }));
    const chain = String(resp['certificate_chain']);
    expect(chain.match(/-----BEGIN CERTIFICATE-----/g)).toHaveLength(2);
    expect(chain.endsWith('-----END CERTIFICATE-----')).toBe(true);
    const keys = data(await h.request('read', 'keys/k'))['keys'] as Record<string, { certificate_chain?: string }>;
    expect(keys['1']?.certificate_chain).toBe(chain);
    expect(data(await h.request('read', 'export/certificate-chain/k/1'))['keys']).toEqual({ 1: chain });
    const certs = chain.split(/(?<=-----END CERTIFICATE-----)\n/).map((p) => new x509.X509Certificate(p));
    expect(certs[0]?.equal(leaf)).toBe(true);
    expect(certs[1]?.equal(ca.cert)).toBe(true);
  });

  it('replaces an earlier chain', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type: 'ed25519' });
    const key = await versionKey(h, 'k');
    const first = await issue(await makeCa('CN=First CA'), key, { subject: 'CN=first' });
    const second = await issue(await makeCa('CN=Second CA'), key, { subject: 'CN=second' });
    await h.request('write', 'keys/k/set-certificate', { certificate_chain: pem(first) });
    await h.request('write', 'keys/k/set-certificate', { certificate_chain: pem(second) });
    const chain = (data(await h.request('read', 'export/certificate-chain/k'))['keys'] as Record<string, string>)['1'] ?? '';
    expect(new x509.X509Certificate(chain).subject).toBe('CN=second');
  });

  it('sets the chain of the version named, and export without version lists only versions with one', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type: 'rsa-2048' });
    await h.request('write', 'keys/k/rotate');
    const ca = await makeCa();
    await badRequest(h.request('write', 'keys/k/set-certificate', { certificate_chain: pem(await issue(ca, await versionKey(h, 'k', 1))) }), 'certificate_chain');
    await h.request('write', 'keys/k/set-certificate', { version: '1', certificate_chain: pem(await issue(ca, await versionKey(h, 'k', 1))) });
    expect(Object.keys(data(await h.request('read', 'export/certificate-chain/k'))['keys'] as object)).toEqual(['1']);
    await failure(h.request('read', 'export/certificate-chain/k/2'), 400);
  });

  it('refuses chains Vault refuses', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k', { type: 'ecdsa-p256' });
    const ca = await makeCa();
    const key = await versionKey(h, 'k');
    const leaf = await issue(ca, key);
    const caLeaf = await issue(ca, key, { isCa: true });
    const otherLeaf = await issue(ca, keyPairs['ecdsa-p256']().publicKey);
    const rsaLeaf = await issue(ca, keyPairs['rsa-2048']().publicKey);
    await badRequest(h.request('write', 'keys/k/set-certificate', {}), 'certificate_chain');
    await badRequest(h.request('write', 'keys/k/set-certificate', { certificate_chain: 'nothing here' }), 'certificate_chain');
    await badRequest(h.request('write', 'keys/k/set-certificate', { certificate_chain: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }), 'certificate_chain');
    expect(await badRequest(h.request('write', 'keys/k/set-certificate', { certificate_chain: pem(caLeaf) }), 'certificate_chain')).toContain('leaf');
    expect(await badRequest(h.request('write', 'keys/k/set-certificate', { certificate_chain: `${pem(leaf)}${pem(leaf)}` }), 'certificate_chain')).toContain('CA');
    expect(await badRequest(h.request('write', 'keys/k/set-certificate', { certificate_chain: pem(otherLeaf) }), 'certificate_chain')).toContain('does not match');
    expect(await badRequest(h.request('write', 'keys/k/set-certificate', { certificate_chain: pem(rsaLeaf) }), 'certificate_chain')).toContain('RSA');
    await h.request('write', 'keys/aes');
    expect((await failure(h.request('write', 'keys/aes/set-certificate', { certificate_chain: pem(leaf) }), 400)).message).toContain('does not support signing');
    await failure(h.request('write', 'keys/nope/set-certificate', { certificate_chain: pem(leaf) }), 400);
    // Other PEM blocks in the text are skipped, as Vault does.
    await h.request('write', 'keys/k/set-certificate', { certificate_chain: `${spkiPem(key)}${pem(leaf)}` });
  });
});
