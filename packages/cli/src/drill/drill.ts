import { runFailover, type DrillContext, type FailoverMode, type FailoverReport } from './failover';
import { call, errorsOf } from '../node-api';
import { followNewPrimary, type PerformanceReport } from './performance-secondary';
import { answeringNode, DR, drMode, generateRoot, replicationStatus } from './replication-ops';
import { StepLog, type Progress, type StepResult } from './steps';
import type { DrillCluster, DrillNode, DrillTarget } from './target';

/** The whole drill: failover, the performance secondary after it, failback if asked, cleanup. */

export interface DrillOptions {
  mode: FailoverMode;
  failback: boolean;
  loadSeconds: number;
  concurrency: number;
}

export interface DrillReport extends Omit<FailoverReport, 'steps'> {
  ok: boolean;
  steps: StepResult[];
  performance_secondary: PerformanceReport | null;
  failback?: FailoverReport & { performance_secondary: PerformanceReport | null };
  /** Clusters whose DR operation token was deleted, and why any was kept. */
  operation_tokens: { deleted: string[]; kept: string[] };
}

/** Which of the pair is the DR primary now: a drill may run again after one without failback. */
async function roles(pair: [DrillCluster, DrillCluster]): Promise<[DrillCluster, DrillCluster]> {
  const [a, b] = pair;
  const [ma, mb] = [await drMode(a), await drMode(b)];
  if (ma === 'primary' && mb === 'secondary') return [a, b];
  if (mb === 'primary' && ma === 'secondary') return [b, a];
  throw new Error(`the clusters are not a DR pair: ${a.name} is ${ma}, ${b.name} is ${mb}`);
}

async function deleteOperationTokens(ctx: DrillContext): Promise<{ deleted: string[]; kept: string[] }> {
  const deleted: string[] = [];
  const kept: string[] = [];
  for (const [cluster, token] of ctx.operationTokens) {
    const mode = await drMode(cluster).catch(() => 'unreachable');
    if (mode !== 'secondary') {
      // The token serves only on a DR secondary: a primary refuses the delete as it refuses any use of it.
      kept.push(`${cluster.name} (a DR ${mode} now: the token serves only on a DR secondary)`);
      continue;
    }
    const r = await answeringNode(cluster)
      .then((n) => call(n.apiAddr, 'POST', `${DR}/secondary/operation-token/delete`, { body: { dr_operation_token: token } }))
      .catch(() => null);
    if (r && r.status >= 200 && r.status < 300) deleted.push(cluster.name);
    else kept.push(`${cluster.name} (the delete answered ${r ? errorsOf(r) : 'nothing'})`);
  }
  ctx.operationTokens.clear();
  return { deleted, kept };
}

function emptyReport(mode: FailoverMode, steps: StepResult[]): DrillReport {
  return {
    mode, from: '', to: '', ok: false, rpo_writes_lost: null, rto_seconds: null, canaries_acknowledged: 0,
    canaries_acknowledged_before_failure: 0, canaries_verified: 0, last_acknowledged_seq: null, last_seq_on_promoted: null,
    missing_seqs: [], load_write_failures: 0, old_primary: { came_back_as: null, now: null }, steps,
    performance_secondary: null, operation_tokens: { deleted: [], kept: [] },
  };
}

export async function runDrill(target: DrillTarget, options: DrillOptions, progress: Progress): Promise<DrillReport> {
  const ctx: DrillContext = { target, progress, loadSeconds: options.loadSeconds, concurrency: options.concurrency, operationTokens: new Map() };
  const { rootToken, keyShares } = target.credentials;
  const log = new StepLog(progress, 'drill');
  const report = emptyReport(options.mode, log.steps);
  const perf = target.performance;
  let perfToken: string | null = null;
  let perfState: string | null = null;
  try {
    const [primary, secondary] = await log.run('roles', () => roles(target.pair), ([p, s]) => `${p.name} is the DR primary, ${s.name} its DR secondary`);
    if (perf) {
      await log.run('performance secondary: pre-check', async () => {
        const node = perf.nodes[0] as DrillNode;
        const st = await replicationStatus(node.apiAddr, 'performance');
        perfState = (st.state ?? st.mode) as string;
        // It keeps its own tokens: a root token made there from the primary's shares, revoked at the end.
        perfToken = await generateRoot(node.apiAddr, keyShares);
      }, () => `state ${perfState}`);
    }

    const first = await runFailover(ctx, primary, secondary, options.mode, 1, options.mode);
    const { steps: failoverSteps, ...failover } = first.report;
    Object.assign(report, failover, { steps: [...log.steps, ...failoverSteps] });
    if (!first.report.ok || !first.newActive) throw new Error(first.report.error ?? 'the failover failed');
    if (perf && perfToken !== null) {
      report.performance_secondary = await followNewPrimary(
        new StepLog(progress, options.mode, report.steps), perf, perfToken, perfState, first.newActive, rootToken, first.canaryOnNew,
      );
    }

    if (options.failback) {
      const back = await runFailover(ctx, secondary, primary, 'planned', first.lastSeq + 1, 'failback');
      const failback = { ...back.report, performance_secondary: null as PerformanceReport | null };
      report.failback = failback;
      if (!back.report.ok || !back.newActive) throw new Error(`failback: ${back.report.error ?? 'failed'}`);
      if (perf && perfToken !== null) {
        failback.performance_secondary = await followNewPrimary(
          new StepLog(progress, 'failback', failback.steps), perf, perfToken, report.performance_secondary?.state ?? null, back.newActive, rootToken, back.canaryOnNew,
        );
      }
    }
    report.ok = true;
  } catch (err) {
    report.ok = false;
    report.error ??= (err as Error).message;
  } finally {
    await new StepLog(progress, 'cleanup', report.steps).run('delete the DR operation tokens', async () => {
      report.operation_tokens = await deleteOperationTokens(ctx);
      if (perf && perfToken !== null) await call(perf.nodes[0]!.apiAddr, 'POST', 'auth/token/revoke-self', { token: perfToken }).catch(() => null);
    }, () => `deleted on ${report.operation_tokens.deleted.join(', ') || 'none'}${report.operation_tokens.kept.length ? `; kept on ${report.operation_tokens.kept.join(', ')}` : ''}`).catch(() => undefined);
  }
  return report;
}
