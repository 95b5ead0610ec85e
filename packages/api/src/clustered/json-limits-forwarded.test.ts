import { GrpcTransport } from '@strongroom/raft';
import { call, forwardedCalls, initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';

const nestedText = (depth: number): string => '{"n":'.repeat(depth) + '1' + '}'.repeat(depth);

/**
 * The JSON limits that judge a body are those of the listener the client sent it to, also when
 * that node is a standby handing the request to the active node (a node with other limits).
 */
describe('JSON limits on a request a standby forwards', () => {
  let leader: TestServer;
  let standby: TestServer;
  let root: string;

  beforeAll(async () => {
    const limits = { maxStringLength: 1024 * 1024, maxObjectEntries: 10_000, maxArrayElements: 10_000 };
    leader = await startTestServer({ jsonLimits: { ...limits, maxDepth: 4 } });
    root = await initAndUnseal(leader);
    standby = await startTestServer({ jsonLimits: { ...limits, maxDepth: 8 } }, 'standby');
    const joined = await call(standby.url, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.url } });
    expect(joined.status).toBe(200);
    const unsealed = await call(standby.url, 'PUT', 'sys/unseal', { body: { key: (leader.key as Buffer).toString('base64') } });
    expect(unsealed.json).toMatchObject({ sealed: false });
    // Bounded wait for the standby to learn who the active node is.
    const deadline = Date.now() + 20_000;
    while ((await call(standby.url, 'GET', 'sys/leader')).json?.leader_address !== leader.url) {
      if (Date.now() > deadline) throw new Error('the standby never learned the active node');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  afterAll(async () => {
    await standby.stop();
    await leader.stop();
  });

  it('judges the body by the receiving standby\'s limits, not the active node\'s', async () => {
    const calls = jest.spyOn(GrpcTransport.prototype, 'call');
    try {
      // Within the standby's limit of 8, beyond the active node's 4.
      const body = `{"data":${nestedText(5)}}`;
      const viaStandby = await call(standby.url, 'POST', 'secret/data/deep', { token: root, raw: body });
      expect(viaStandby.status).toBe(200);
      expect(forwardedCalls(calls).length).toBeGreaterThan(0);
      const direct = await call(leader.url, 'POST', 'secret/data/deep', { token: root, raw: body });
      expect(direct.status).toBe(400);
      expect(direct.json.errors).toEqual(['JSON input is nested deeper than max_json_depth (4) allows']);

      const tooDeep = await call(standby.url, 'POST', 'secret/data/deeper', { token: root, raw: `{"data":${nestedText(9)}}` });
      expect(tooDeep.status).toBe(400);
      expect(tooDeep.json.errors).toEqual(['JSON input is nested deeper than max_json_depth (8) allows']);
      const huge = await call(standby.url, 'POST', 'sys/wrapping/wrap', { token: root, raw: `{"v":${nestedText(10_000)}}` });
      expect(huge.status).toBe(400);
      expect(huge.json.errors[0]).toMatch(/max_json_depth \(8\)/);
    } finally {
      calls.mockRestore();
    }
  });
});
