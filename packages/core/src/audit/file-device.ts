import { createSecretKey, type KeyObject } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { BadRequestError } from '../errors';
import { formatRequestEntry, formatResponseEntry, hmacOf, type FormatOptions } from './format';
import type { AuditDevice, AuditDeviceConfig, AuditDeviceFactory, AuditRequestInput, AuditResponseInput } from './types';

/** Where the lines go: a file opened for appending, the process's stdout, or nowhere. */
interface Sink {
  write(line: Buffer): Promise<void>;
  close(): Promise<void>;
}

const discardSink: Sink = { write: async () => {}, close: async () => {} };

const stdoutSink: Sink = {
  write: (line) => new Promise<void>((resolve, reject) => process.stdout.write(line, (err) => (err ? reject(err) : resolve()))),
  close: async () => {},
};

class FileSink implements Sink {
  /**
   * Lines are written one after another: a large entry can take several write calls, and
   * another entry slipping in between would corrupt both lines.
   */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly handle: FileHandle) {}

  write(line: Buffer): Promise<void> {
    const run = this.tail.then(async () => {
      let offset = 0;
      while (offset < line.length) {
        const { bytesWritten } = await this.handle.write(line, offset, line.length - offset, null);
        offset += bytesWritten;
      }
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  close(): Promise<void> {
    return this.tail.then(() => this.handle.close());
  }
}

/** Go's strconv.ParseBool spellings, which Vault's options accept. */
function parseBoolOption(options: Record<string, string>, name: string, fallback: boolean): boolean {
  const raw = options[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|t|T|TRUE|true|True)$/.test(raw)) return true;
  if (/^(0|f|F|FALSE|false|False)$/.test(raw)) return false;
  throw new BadRequestError(`invalid value for "options.${name}": expected a boolean, got "${raw}"`);
}

function parseMode(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 0o600;
  if (!/^[0-7]{1,4}$/.test(raw)) throw new BadRequestError(`invalid value for "options.mode": expected an octal file mode such as "0600", got "${raw}"`);
  return parseInt(raw, 8);
}

async function openLogFile(path: string, mode: number): Promise<FileHandle> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'a', mode === 0 ? 0o600 : mode);
    // The creation mode is filtered by the umask and an existing file keeps its own, so the
    // mode is set explicitly; "0000" leaves the file as the operator arranged it.
    if (mode !== 0) {
      const stat = await handle.stat();
      if (stat.isFile() && (stat.mode & 0o7777) !== mode) await handle.chmod(mode);
    }
    return handle;
  } catch (err) {
    await handle?.close().catch(() => undefined);
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new BadRequestError(`invalid value for "options.file_path": cannot open "${path}" for appending (${reason})`, { cause: err });
  }
}

class FileAuditDevice implements AuditDevice {
  constructor(
    private readonly sink: Sink,
    private readonly format: FormatOptions,
    private readonly prefix: string,
    private readonly salt: KeyObject,
    private readonly config: AuditDeviceConfig,
  ) {}

  hash(input: string): string {
    return hmacOf(this.salt, input);
  }

  private write(entry: Record<string, unknown>): Promise<void> {
    return this.sink.write(Buffer.from(`${this.prefix}${JSON.stringify(entry)}\n`, 'utf8'));
  }

  logRequest(input: AuditRequestInput): Promise<void> {
    return this.write(formatRequestEntry(input, this.format, this.config.clock.now()));
  }

  logResponse(input: AuditResponseInput): Promise<void> {
    return this.write(formatResponseEntry(input, this.format, this.config.clock.now()));
  }

  close(): Promise<void> {
    return this.sink.close();
  }
}

// `-` is the common shell spelling of standard output.
const SPECIAL_FILE_PATHS: ReadonlySet<string> = new Set(['stdout', '-', 'discard']);

/**
 * The `file` audit device: one JSON object per line, appended to `file_path` (or written to
 * stdout, or dropped with `discard`). Options as Vault takes them: `file_path`, `mode`,
 * `log_raw`, `hmac_accessor`, `format` (json only) and `prefix`.
 */
export const fileAuditDevice: AuditDeviceFactory = {
  type: 'file',
  // A relative path would land wherever the server happened to be started, and a number or a
  // boolean arrives here already turned into a string ("0"), so only these three forms are taken.
  checkNewOptions(options) {
    const filePath = options['file_path'] ?? options['path'] ?? '';
    if (filePath === '' || SPECIAL_FILE_PATHS.has(filePath)) return;
    if (!isAbsolute(filePath) || filePath.includes('\0')) {
      throw new BadRequestError('invalid value for "options.file_path": must be an absolute file path, "stdout" or "discard"');
    }
  },
  async create(config) {
    const { options } = config;
    // Vault still honours `path`, the option's name before `file_path`.
    const filePath = options['file_path'] ?? options['path'] ?? '';
    if (filePath === '') throw new BadRequestError('missing required option "options.file_path": a file path, "stdout" (or "-") or "discard"');
    const format = options['format'] ?? 'json';
    if (format === 'jsonx') throw new BadRequestError('invalid value for "options.format": "jsonx" is not supported; use "json"');
    if (format !== 'json' && format !== '') throw new BadRequestError(`invalid value for "options.format": must be "json", got "${format}"`);
    const logRaw = parseBoolOption(options, 'log_raw', false);
    const hmacAccessor = parseBoolOption(options, 'hmac_accessor', true);
    const mode = parseMode(options['mode']);
    const prefix = options['prefix'] ?? '';
    const salt = createSecretKey(config.salt);
    const formatOptions: FormatOptions = { hash: logRaw ? null : (input) => hmacOf(salt, input), hmacAccessor };

    let sink: Sink;
    if (filePath === 'stdout' || filePath === '-') sink = stdoutSink;
    else if (filePath === 'discard') sink = discardSink;
    else sink = new FileSink(await openLogFile(filePath, mode));
    return new FileAuditDevice(sink, formatOptions, prefix, salt, config);
  },
};
