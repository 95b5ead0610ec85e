/** Each step of the drill, timed, with its outcome; progress lines go to the given writer. */

export interface StepResult {
  name: string;
  seconds: number;
  ok: boolean;
  detail?: string;
  error?: string;
}

export type Progress = (line: string) => void;

export class StepLog {
  /** `steps` may be a report's list, which the steps are then added to as they end. */
  constructor(private readonly progress: Progress, private readonly section: string, readonly steps: StepResult[] = []) {}

  /** Runs one step; a failure is recorded and thrown on, so the steps after it do not run. */
  async run<T>(name: string, step: () => Promise<T>, detail?: (value: T) => string | undefined): Promise<T> {
    const started = Date.now();
    this.progress(`[${this.section}] ${name} ...`);
    try {
      const value = await step();
      const d = detail?.(value);
      const result: StepResult = { name, seconds: seconds(Date.now() - started), ok: true, ...(d ? { detail: d } : {}) };
      this.steps.push(result);
      this.progress(`[${this.section}] ${name}: ok in ${result.seconds} s${d ? ` (${d})` : ''}`);
      return value;
    } catch (err) {
      const result: StepResult = { name, seconds: seconds(Date.now() - started), ok: false, error: (err as Error).message };
      this.steps.push(result);
      this.progress(`[${this.section}] ${name}: FAILED after ${result.seconds} s: ${result.error}`);
      throw err;
    }
  }
}

/** Milliseconds as seconds with millisecond precision. */
export function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}
