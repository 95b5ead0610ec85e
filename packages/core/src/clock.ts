export { FakeClock, systemClock } from '@strongroom/base';
export type { Clock, TimerHandle } from '@strongroom/base';
