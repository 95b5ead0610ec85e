import { CompactedError, ConfChangeError, NotLeaderError, ProposalDroppedError, RaftError, TransferError } from './errors';

test('each error has a stable name and code, typed fields and an optional cause', () => {
  const cause = new Error('underlying');
  const cases: [RaftError, string, string, number][] = [
    [new NotLeaderError('n2', { cause }), 'NotLeaderError', 'not_leader', 503],
    [new ProposalDroppedError('transfer'), 'ProposalDroppedError', 'proposal_dropped', 503],
    [new ConfChangeError('pending'), 'ConfChangeError', 'conf_change_refused', 400],
    [new TransferError('n3', 'not a voter'), 'TransferError', 'transfer_refused', 400],
    [new CompactedError(3, 10), 'CompactedError', 'compacted', 500],
  ];
  for (const [err, name, code, status] of cases) {
    expect(err).toBeInstanceOf(RaftError);
    expect(err).toBeInstanceOf(Error);
    expect([err.name, err.code, err.status]).toEqual([name, code, status]);
  }
  expect(cases[0]![0].cause).toBe(cause);
  expect(new NotLeaderError('n2').leader).toBe('n2');
  expect(new NotLeaderError(null).message).toMatch(/no leader is known/);
  expect(new ConfChangeError('pending').reason).toBe('pending');
  expect(new CompactedError(3, 10)).toMatchObject({ index: 3, snapshotIndex: 10 });
});
