import { createCipheriv, randomBytes } from 'node:crypto';
import { OpensslScratch } from './crypto/test-support/openssl';
import { b64, data, decrypt, transitRig, type TransitRig } from './test-support/transit-rig';

/*
 * Interoperability with the openssl command line, an implementation that shares no code with
 * ours: key material wrapped for import by openssl's own tools, signatures and ciphertext made
 * by openssl checked here, and what we hand out (CSRs, exported keys, byok blobs) read back by it.
 */

const ssl = new OpensslScratch();
let r: TransitRig;

beforeAll(async () => {
  r = transitRig();
  // The engine makes its own wrapping key here, as on a fresh mount.
  ssl.write('wrapping.pem', String(data(await r.h.request('read', 'wrapping_key'))['public_key']));
});
afterAll(() => ssl.cleanup());

let seq = 0;
const fresh = (stem: string) => `${stem}-${seq++}`;
/** Writes a new scratch file and answers its name (openssl runs in the scratch directory). */
const put = (stem: string, content: Buffer | string): string => {
  const name = fresh(stem);
  ssl.write(name, content);
  return name;
};

/**
 * The import ciphertext built with openssl alone: a random AES-256 key wrapped with RSA-OAEP
 * (SHA-256 for OAEP and MGF1) under the wrapping key, then the target wrapped with AES-KWP.
 */
function wrapWithOpenssl(targetFile: string): string {
  const eph = fresh('eph');
  ssl.run(['rand', '-out', eph, '32']);
  const wrappedEph = ssl.run([
    'pkeyutl', '-encrypt', '-pubin', '-inkey', 'wrapping.pem',
    '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', 'rsa_oaep_md:sha256', '-pkeyopt', 'rsa_mgf1_md:sha256', '-in', eph,
  ]);
  const wrappedTarget = ssl.run(['enc', '-id-aes256-wrap-pad', '-K', ssl.read(eph).toString('hex'), '-iv', 'A65959A6', '-in', targetFile]);
  expect(wrappedEph).toHaveLength(512);
  return Buffer.concat([wrappedEph, wrappedTarget]).toString('base64');
}

/** A private key from `openssl genpkey`, as PEM and as the PKCS#8 DER that import takes. */
function genpkey(args: string[]): { pem: string; der: string } {
  const pem = fresh('key');
  ssl.run(['genpkey', ...args, '-out', pem]);
  const der = fresh('der');
  ssl.run(['pkcs8', '-topk8', '-nocrypt', '-outform', 'DER', '-in', pem, '-out', der]);
  return { pem, der };
}

async function verify(name: string, input: Buffer, signature: Buffer, extra: Record<string, unknown> = {}): Promise<unknown> {
  return data(await r.h.request('write', `verify/${name}`, { input: b64(input), signature: `vault:v1:${signature.toString('base64')}`, ...extra }))['valid'];
}

describe('import of key material wrapped by openssl', () => {
  it('imports an AES-256 key and decrypts Vault-layout ciphertext made outside with it', async () => {
    const target = fresh('aes');
    ssl.run(['rand', '-out', target, '32']);
    await r.h.request('write', 'keys/ossl-aes/import', { type: 'aes256-gcm96', ciphertext: wrapWithOpenssl(target) });
    const key = ssl.read(target);
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    const body = Buffer.concat([cipher.update('made outside'), cipher.final()]);
    const ciphertext = `vault:v1:${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64')}`;
    expect(await decrypt(r.h, 'ossl-aes', ciphertext)).toBe('made outside');
  });

  it.each([
    ['ecdsa-p256', 'P-256', 'sha256', 'sha2-256'],
    ['ecdsa-p384', 'P-384', 'sha384', 'sha2-384'],
  ])('imports an %s key and verifies an openssl signature made with it', async (type, curve, dgst, hashAlgorithm) => {
    const key = genpkey(['-algorithm', 'EC', '-pkeyopt', `ec_paramgen_curve:${curve}`]);
    const resp = data(await r.h.request('write', `keys/ossl-${type}/import`, { type, ciphertext: wrapWithOpenssl(key.der) }));
    const shown = (resp['keys'] as Record<string, { public_key: string }>)['1']?.public_key;
    expect(shown).toBe(ssl.run(['pkey', '-in', key.pem, '-pubout']).toString());
    const input = put('data', 'signed by openssl');
    const sig = ssl.run(['dgst', `-${dgst}`, '-sign', key.pem, input]);
    expect(await verify(`ossl-${type}`, ssl.read(input), sig, { hash_algorithm: hashAlgorithm })).toBe(true);
    expect(await verify(`ossl-${type}`, Buffer.from('something else'), sig, { hash_algorithm: hashAlgorithm })).toBe(false);
  });

  it('imports an RSA key: verifies PSS and PKCS#1 v1.5 signatures and decrypts OAEP made by openssl', async () => {
    const key = genpkey(['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']);
    await r.h.request('write', 'keys/ossl-rsa/import', { type: 'rsa-2048', ciphertext: wrapWithOpenssl(key.der) });
    const input = put('data', 'rsa signed by openssl');
    const pss = ssl.run(['dgst', '-sha256', '-sign', key.pem, '-sigopt', 'rsa_padding_mode:pss', '-sigopt', 'rsa_pss_saltlen:32', input]);
    expect(await verify('ossl-rsa', ssl.read(input), pss)).toBe(true);
    const v15 = ssl.run(['dgst', '-sha256', '-sign', key.pem, input]);
    expect(await verify('ossl-rsa', ssl.read(input), v15, { signature_algorithm: 'pkcs1v15' })).toBe(true);

    const pub = fresh('pub');
    ssl.run(['pkey', '-in', key.pem, '-pubout', '-out', pub]);
    const msg = put('msg', 'encrypted by openssl');
    const ct = ssl.run(['pkeyutl', '-encrypt', '-pubin', '-inkey', pub, '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', 'rsa_oaep_md:sha256', '-pkeyopt', 'rsa_mgf1_md:sha256', '-in', msg]);
    expect(await decrypt(r.h, 'ossl-rsa', `vault:v1:${ct.toString('base64')}`)).toBe('encrypted by openssl');
  });

  it('imports an RSA-PSS PKCS#8 key from openssl as a plain RSA key', async () => {
    const key = genpkey(['-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048']);
    await r.h.request('write', 'keys/ossl-rsapss/import', { type: 'rsa-2048', ciphertext: wrapWithOpenssl(key.der) });
    const input = put('data', 'pss key');
    const sig = ssl.run(['dgst', '-sha256', '-sign', key.pem, '-sigopt', 'rsa_pss_saltlen:32', input]);
    expect(await verify('ossl-rsapss', ssl.read(input), sig)).toBe(true);
  });

  it('imports an ed25519 key and verifies an openssl signature made with it', async () => {
    const key = genpkey(['-algorithm', 'ED25519']);
    await r.h.request('write', 'keys/ossl-ed/import', { type: 'ed25519', ciphertext: wrapWithOpenssl(key.der) });
    const input = put('data', 'ed25519 by openssl');
    const sig = ssl.run(['pkeyutl', '-sign', '-inkey', key.pem, '-rawin', '-in', input]);
    expect(await verify('ossl-ed', ssl.read(input), sig)).toBe(true);
  });
});

describe('CSRs and certificates with openssl', () => {
  it.each(['ecdsa-p256', 'ecdsa-p521', 'rsa-2048', 'ed25519'])('a CSR of a %s key passes openssl req -verify', async (type) => {
    await r.h.request('write', `keys/csr-${type}`, { type });
    const csr = put('csr', String(data(await r.h.request('write', `keys/csr-${type}/csr`))['csr']));
    expect(ssl.succeeds(['req', '-in', csr, '-verify', '-noout'])).toBe(true);
  });

  it('keeps an openssl template\'s subject and SANs; openssl signs it and the chain is accepted and exported', async () => {
    await r.h.request('write', 'keys/svc', { type: 'ecdsa-p256' });
    const tkey = fresh('tkey');
    const template = fresh('template');
    ssl.run([
      'req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', tkey,
      '-subj', '/CN=svc.example.com/O=Example Org', '-addext', 'subjectAltName=DNS:svc.example.com,DNS:alt.example.com,IP:10.0.0.7', '-out', template,
    ]);
    const csr = put('csr', String(data(await r.h.request('write', 'keys/svc/csr', { csr: ssl.read(template).toString() }))['csr']));
    expect(ssl.succeeds(['req', '-in', csr, '-verify', '-noout'])).toBe(true);
    expect(ssl.run(['req', '-in', csr, '-noout', '-subject']).toString()).toContain('CN = svc.example.com, O = Example Org');
    const text = ssl.run(['req', '-in', csr, '-noout', '-text']).toString();
    expect(text).toContain('DNS:svc.example.com, DNS:alt.example.com, IP Address:10.0.0.7');
    const keys = data(await r.h.request('read', 'keys/svc'))['keys'] as Record<string, { public_key: string }>;
    expect(ssl.run(['req', '-in', csr, '-noout', '-pubkey']).toString()).toBe(keys['1']?.public_key);

    const caKey = fresh('cakey');
    const ca = fresh('ca');
    ssl.run([
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-subj', '/CN=Interop CA',
      '-days', '2', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign', '-out', ca,
    ]);
    const leaf = fresh('leaf');
    ssl.run(['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-days', '1', '-copy_extensions', 'copy', '-out', leaf]);
    await r.h.request('write', 'keys/svc/set-certificate', { certificate_chain: ssl.read(leaf).toString() + ssl.read(ca).toString() });

    const chain = String((data(await r.h.request('read', 'export/certificate-chain/svc/latest'))['keys'] as Record<string, string>)['1']);
    const [leafPem, caPem] = chain.split(/(?<=-----END CERTIFICATE-----)\n/);
    const exportedLeaf = put('exleaf', `${leafPem}\n`);
    const exportedCa = put('exca', `${caPem}\n`);
    expect(ssl.run(['verify', '-CAfile', exportedCa, exportedLeaf]).toString()).toContain(': OK');
    expect(ssl.run(['x509', '-in', exportedLeaf, '-noout', '-ext', 'subjectAltName']).toString()).toContain('DNS:alt.example.com');
  });
});

describe('exported keys in openssl', () => {
  it('loads exported ECDSA (SEC1) and RSA (PKCS#1) private keys and the public keys, which match', async () => {
    for (const type of ['ecdsa-p384', 'rsa-2048']) {
      await r.h.request('write', `keys/ex-${type}`, { type, exportable: true });
      const priv = String((data(await r.h.request('read', `export/signing-key/ex-${type}/1`))['keys'] as Record<string, string>)['1']);
      const pub = String((data(await r.h.request('read', `export/public-key/ex-${type}/1`))['keys'] as Record<string, string>)['1']);
      const privFile = put('priv', `${priv.trim()}\n`);
      const pubFile = put('pub', `${pub.trim()}\n`);
      expect(ssl.succeeds(['pkey', '-in', privFile, '-noout', '-check'])).toBe(true);
      expect(ssl.succeeds(['pkey', '-pubin', '-in', pubFile, '-noout'])).toBe(true);
      expect(ssl.run(['pkey', '-in', privFile, '-pubout']).toString()).toBe(`${pub.trim()}\n`);
    }
  });

  it('loads an exported ed25519 key (Go\'s 64-byte form) once its seed is put in PKCS#8', async () => {
    await r.h.request('write', 'keys/ex-ed', { type: 'ed25519', exportable: true });
    const raw = Buffer.from(String((data(await r.h.request('read', 'export/signing-key/ex-ed/1'))['keys'] as Record<string, string>)['1']), 'base64');
    const pub = Buffer.from(String((data(await r.h.request('read', 'export/public-key/ex-ed/1'))['keys'] as Record<string, string>)['1']), 'base64');
    const der = put('ed', Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), raw.subarray(0, 32)]));
    const spki = ssl.run(['pkey', '-inform', 'DER', '-in', der, '-pubout', '-outform', 'DER']);
    expect(spki.subarray(spki.length - 32).equals(pub)).toBe(true);
    expect(raw.subarray(32).equals(pub)).toBe(true);
  });

  it('unwraps a byok-export blob with openssl and the destination\'s private key', async () => {
    await r.h.request('write', 'keys/dest', { type: 'rsa-2048', exportable: true });
    await r.h.request('write', 'keys/moved', { exportable: true });
    const destPem = put('dest', String((data(await r.h.request('read', 'export/encryption-key/dest/1'))['keys'] as Record<string, string>)['1']));
    const blob = Buffer.from(String((data(await r.h.request('read', 'byok-export/dest/moved/1'))['keys'] as Record<string, string>)['1']), 'base64');
    const wrappedEph = put('weph', blob.subarray(0, 256));
    const wrappedKey = put('wkey', blob.subarray(256));
    const eph = ssl.run(['pkeyutl', '-decrypt', '-inkey', destPem, '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', 'rsa_oaep_md:sha256', '-pkeyopt', 'rsa_mgf1_md:sha256', '-in', wrappedEph]);
    const key = ssl.run(['enc', '-d', '-id-aes256-wrap-pad', '-K', eph.toString('hex'), '-iv', 'A65959A6', '-in', wrappedKey]);
    const exported = String((data(await r.h.request('read', 'export/encryption-key/moved/1'))['keys'] as Record<string, string>)['1']);
    expect(key.toString('base64')).toBe(exported);
  });
});
