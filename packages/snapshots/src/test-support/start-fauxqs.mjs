// Runs the S3 emulator on loopback in its own process (the package is ESM-only, and its CLI
// binds every interface). Prints the URL on stdout once it listens; ends when stdin closes.
import { buildApp } from 'fauxqs';

const app = buildApp({ logger: false, host: '127.0.0.1' });
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address();
process.stdout.write(`http://127.0.0.1:${port}\n`);
process.stdin.on('end', () => void app.close().then(() => process.exit(0)));
process.stdin.resume();
