import type { CoreExtension } from '@strongroom/core';
import { snapshotAutoPaths } from './paths';
import { SnapshotScheduler, type SchedulerOptions } from './scheduler';

/** Automated snapshots as a core extension: the `sys/storage/raft/snapshot-auto/*` paths and the scheduler. */
export function automatedSnapshots(options: SchedulerOptions): CoreExtension {
  const scheduler = new SnapshotScheduler(options);
  return { systemPaths: snapshotAutoPaths(scheduler), service: scheduler };
}
