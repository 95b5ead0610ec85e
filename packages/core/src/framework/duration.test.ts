import { formatDuration, MAX_DURATION_SECONDS, parseDurationSeconds } from './duration';

describe('durations', () => {
  it.each([
    [3600, 3600], ['3600', 3600], ['72h', 259200], ['1h30m', 5400], ['90s', 90], ['1.5h', 5400], ['7d', 604800],
    ['1500ms', 1], ['', 0], [' 10m ', 600],
  ])('reads %j as %d seconds', (input, seconds) => {
    expect(parseDurationSeconds(input)).toBe(seconds);
  });

  it.each([[-1], ['-5m'], ['abc'], ['10x'], ['h'], [null], [{}], [Infinity]])('rejects %j', (input) => {
    expect(parseDurationSeconds(input)).toBeNull();
  });

  it('takes up to the longest duration Go holds (about 292 years), and refuses longer ones', () => {
    expect(parseDurationSeconds(MAX_DURATION_SECONDS)).toBe(MAX_DURATION_SECONDS);
    expect(parseDurationSeconds('2562047h')).toBe(2562047 * 3600);
  });

  it.each([[MAX_DURATION_SECONDS + 1], [1e308], ['9'.repeat(400)], ['99999999999999999999h'], ['1e400'], ['10000000000000000000000d']])('rejects the too long %j', (input) => {
    expect(parseDurationSeconds(input)).toBeNull();
  });

  it('prints like Go durations', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(59)).toBe('59s');
    expect(formatDuration(3600)).toBe('1h0m0s');
    expect(formatDuration(5430)).toBe('1h30m30s');
  });
});
