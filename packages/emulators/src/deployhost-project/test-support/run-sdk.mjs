// Runs deployhost SDK calls in a process of its own: the SDK ships only as ES modules, which
// the test runner's module system cannot load. Reads {serverURL, bearerToken, calls} as JSON
// from argv[2]; prints one {ok} or {error} per call, in order.
import { Vercel } from '@vercel/sdk';

const { serverURL, bearerToken, calls } = JSON.parse(process.argv[2]);
const client = new Vercel({ serverURL, bearerToken, retryConfig: { strategy: 'none' } });
const results = [];
for (const { method, request } of calls) {
  const [group, name] = method.split('.');
  try {
    results.push({ ok: await client[group][name](request) });
  } catch (error) {
    results.push({
      error: { name: error.name, statusCode: error.statusCode, body: error.body, message: error.message },
    });
  }
}
process.stdout.write(JSON.stringify(results));
