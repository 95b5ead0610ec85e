import type { DrillReport } from './drill';
import type { FailoverReport } from './failover';
import type { PerformanceReport } from './performance-secondary';
import type { StepResult } from './steps';

/** The drill's report for people; `--json` prints the DrillReport object itself. */

function steps(list: StepResult[]): string[] {
  const width = Math.max(...list.map((s) => s.name.length), 4);
  return list.map((s) => `  ${s.ok ? 'ok  ' : 'FAIL'}  ${s.name.padEnd(width)}  ${s.seconds.toFixed(3).padStart(8)} s${s.detail ? `  ${s.detail}` : ''}${s.error ? `  ${s.error}` : ''}`);
}

function numbers(r: FailoverReport): string[] {
  const or = (v: number | null, unit = '') => (v === null ? 'not measured' : `${v}${unit}`);
  return [
    `  RPO: ${or(r.rpo_writes_lost, ' acknowledged writes lost')}${r.missing_seqs.length ? ` (seqs ${r.missing_seqs.join(', ')}${r.rpo_writes_lost !== null && r.rpo_writes_lost > r.missing_seqs.length ? ', ...' : ''})` : ''}`,
    `  RTO: ${or(r.rto_seconds, ' s')} from the failure to the first acknowledged write on the new primary`,
    `  canaries: ${r.canaries_acknowledged} acknowledged (${r.canaries_acknowledged_before_failure} by the old primary), ${r.canaries_verified} verified on the promoted cluster; ${r.load_write_failures} writes failed or refused`,
    `  last acknowledged seq by the old primary: ${or(r.last_acknowledged_seq)}; highest of those on the promoted cluster: ${or(r.last_seq_on_promoted)}`,
    ...(r.old_primary.came_back_as ? [`  old primary came back as a DR ${r.old_primary.came_back_as}${r.old_primary.came_back_as === 'primary' ? ' (two primaries until it was demoted)' : ''}`] : []),
    ...(r.old_primary.now ? [`  old primary is now the ${r.old_primary.now}`] : []),
  ];
}

function performance(p: PerformanceReport | null): string[] {
  if (!p) return ['  performance secondary: none in this topology or not reached'];
  return [`  performance secondary ${p.name}: ${p.state_before ?? '?'} before, ${p.state_after_failover ?? '?'} after the failover, action ${p.action ?? 'none'}, now ${p.state ?? '?'}, canary read ${p.canary_read ? 'yes' : 'no'}`];
}

export function formatReport(r: DrillReport): string {
  const lines = [
    `DR drill (${r.mode}${r.failback ? ', with failback' : ''}): ${r.ok ? 'PASSED' : 'FAILED'}${r.from ? `; ${r.from} -> ${r.to}` : ''}`,
    ...(r.error ? [`  error: ${r.error}`] : []),
    ...numbers(r),
    ...performance(r.performance_secondary),
    '  steps:',
    ...steps(r.steps),
  ];
  if (r.failback) {
    lines.push('', `Failback (planned): ${r.failback.ok ? 'PASSED' : 'FAILED'}; ${r.failback.from} -> ${r.failback.to}`, ...(r.failback.error ? [`  error: ${r.failback.error}`] : []),
      ...numbers(r.failback), ...performance(r.failback.performance_secondary), '  steps:', ...steps(r.failback.steps));
  }
  const t = r.operation_tokens;
  lines.push('', `DR operation tokens deleted on: ${t.deleted.join(', ') || 'none'}${t.kept.length ? `; kept: ${t.kept.join(', ')}` : ''}`);
  return `${lines.join('\n')}\n`;
}
