import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { boolFlag, stringFlag, UsageError, type ParsedArgs } from '../args';
import { apiRequest } from '../client';
import { clientOf, success, type Command, type Context } from '../command';
import { kvTable, outputOptions, printStructured } from '../output';
import { unsealKey } from './key-share';

/** Every token the server makes has this length, and so has the OTP that encodes it. */
const OTP_LENGTH = 28;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

interface Kind {
  base: string;
  /** What the token is called in messages. */
  what: string;
}

const ROOT: Kind = { base: 'sys/generate-root', what: 'root token' };
const DR: Kind = { base: 'sys/replication/dr/secondary/generate-operation-token', what: 'DR operation token' };

type Status = Record<string, unknown>;

function printStatus(args: ParsedArgs, ctx: Context, s: Status): void {
  if (printStructured(ctx.out, outputOptions(args, ctx.env), s)) return;
  const rows: Array<[string, unknown]> = [
    ['Nonce', s['nonce'] || 'n/a'], ['Started', s['started']], ['Progress', `${String(s['progress'])}/${String(s['required'])}`],
    ['Complete', s['complete']],
  ];
  if (s['encoded_token']) rows.push(['Encoded Token', s['encoded_token']]);
  if (s['pgp_fingerprint']) rows.push(['PGP Fingerprint', s['pgp_fingerprint']]);
  if (s['otp']) rows.push(['OTP', s['otp']]);
  if (s['otp_length']) rows.push(['OTP Length', s['otp_length']]);
  ctx.out.write(kvTable(rows));
}

/** XORs the decoded bytes with the OTP, as the server XORed the token with it. */
export function decodeToken(encoded: string, otp: string): string {
  const raw = Buffer.from(encoded.trim(), 'base64');
  const pad = Buffer.from(otp.trim(), 'utf8');
  if (raw.length === 0 || raw.length !== pad.length) {
    throw new UsageError(`the encoded token (${raw.length} bytes) and the OTP (${pad.length} characters) differ in length: is this the OTP the attempt started with?`);
  }
  return Buffer.from(raw.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

/**
 * The -pgp-key file as the server takes it: an armored key as it is, a binary key in base64,
 * a file that already holds base64 trimmed.
 */
function readPgpKey(file: string): string {
  if (file.startsWith('keybase:')) throw new UsageError('-pgp-key takes a file with an OpenPGP public key; keybase names are not supported');
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch (err) {
    throw new UsageError(`cannot read the PGP key ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const text = data.toString('utf8').trim();
  if (text.startsWith('-----BEGIN')) return text;
  if (/^[A-Za-z0-9+/\s]+={0,2}$/.test(text)) return text.replace(/\s+/g, '');
  return data.toString('base64');
}

const MODES = ['init', 'cancel', 'status', 'decode', 'generate-otp'] as const;

export const generateRootCommand: Command = {
  name: ['operator', 'generate-root'], summary: 'Make a new root token (or DR operation token) from unseal key shares',
  client: true, output: true, booleans: ['init', 'cancel', 'status', 'dr-token', 'generate-otp'],
  help: `Usage: strongroom operator generate-root [options] [KEY]

  Makes a new root token from a quorum of unseal key shares. Start an attempt with -init (the
  server makes a one-time password, the OTP, and shows it once: keep it), then each share
  holder gives a key share (as KEY, at the hidden prompt on a terminal, or on stdin with "-").
  The last share returns the token encoded with the OTP; -decode turns it back into the token.
  With -pgp-key the token is encrypted to that key instead.

  -init              Start an attempt
  -otp=OTP           With -init: use this OTP instead of one the server makes (see -generate-otp);
                     with -decode: the OTP the attempt started with
  -pgp-key=FILE      With -init: encrypt the token to the OpenPGP public key in FILE (binary, base64 or armored)
  -nonce=NONCE       The attempt's nonce (default: read from the server)
  -status            Show the attempt's progress
  -cancel            Cancel the attempt and forget the shares given
  -decode=ENCODED    Decode the encoded token with -otp ("-" reads it from stdin); needs no server
  -generate-otp      Print a new OTP for -init -otp
  -dr-token          Make a DR operation token (on a DR secondary) instead of a root token

  Example:
    $ strongroom operator generate-root -init
    $ strongroom operator generate-root
    Unseal Key (will be hidden):
    $ strongroom operator generate-root -decode=ENCODED -otp=OTP`,
  async run(args, ctx) {
    const kind = boolFlag(args, 'dr-token') ? DR : ROOT;
    const modes = MODES.filter((m) => args.flags.has(m));
    if (modes.length > 1) throw new UsageError(`-${modes.join(', -')} cannot be combined: give one`);
    const mode = modes[0];
    if (mode === 'generate-otp') {
      let otp = '';
      for (let i = 0; i < OTP_LENGTH; i++) otp += BASE62[randomInt(BASE62.length)];
      ctx.out.write(`${otp}\n`);
      return 0;
    }
    if (mode === 'decode') {
      const given = stringFlag(args, 'decode') ?? '';
      const encoded = given === '-' ? ctx.stdin().trim() : given;
      const otp = stringFlag(args, 'otp');
      if (!otp) throw new UsageError('-decode needs -otp, the one-time password the attempt started with');
      const token = decodeToken(encoded, otp);
      if (!printStructured(ctx.out, outputOptions(args, ctx.env), { token })) ctx.out.write(`${token}\n`);
      return 0;
    }
    const client = clientOf(args, ctx);
    const attempt = `${kind.base}/attempt`;
    if (mode === 'status') {
      printStatus(args, ctx, (await apiRequest(client, 'GET', attempt)).body as Status);
      return 0;
    }
    if (mode === 'cancel') {
      await apiRequest(client, 'DELETE', attempt);
      return success(ctx, `${kind.what[0]?.toUpperCase()}${kind.what.slice(1)} generation canceled (if one was in progress).`);
    }
    if (mode === 'init') {
      const otp = stringFlag(args, 'otp');
      const pgpFile = stringFlag(args, 'pgp-key');
      if (otp && pgpFile) throw new UsageError('-otp and -pgp-key cannot be combined: give one');
      const body = { ...(otp ? { otp } : {}), ...(pgpFile ? { pgp_key: readPgpKey(pgpFile) } : {}) };
      const status = (await apiRequest(client, 'PUT', attempt, body)).body as Status;
      if (status['otp'] && outputOptions(args, ctx.env).format === 'table') {
        ctx.out.write('A one-time password (OTP) was made for this attempt and is shown below, once.\nKeep it: it decodes the new token (-decode=... -otp=...).\n\n');
      }
      printStatus(args, ctx, status);
      return 0;
    }
    if (args.flags.has('otp') || args.flags.has('pgp-key')) throw new UsageError('-otp and -pgp-key go with -init (or -otp with -decode)');
    if (args.positional.length > 1) throw new UsageError('give at most one key share');
    let nonce = stringFlag(args, 'nonce');
    if (!nonce) {
      const status = (await apiRequest(client, 'GET', attempt)).body as Status;
      if (!status['started']) throw new UsageError(`no ${kind.what} generation is in progress: start one with -init`);
      nonce = String(status['nonce']);
    }
    const key = await unsealKey(args, ctx);
    const status = (await apiRequest(client, 'PUT', `${kind.base}/update`, { key, nonce })).body as Status;
    printStatus(args, ctx, status);
    return 0;
  },
};
