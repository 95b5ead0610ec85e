'use strict';
// One printed line per measurement, shared by every bench section.

/** `name  rate/s  p50  p99  [n% of ceiling]  [(errors: first one)]`. */
function row(name, r, ceiling) {
  const ratio = ceiling ? ` ${(r.rate / ceiling.rate * 100).toFixed(0).padStart(4)}% of ceiling` : '';
  const errors = r.errors ? `  (${r.errors} errors${r.firstError ? `, first: ${r.firstError.replace(/\s+/g, ' ')}` : ''})` : '';
  console.log(`${name.padEnd(44)} ${r.rate.toFixed(0).padStart(7)}/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms${ratio}${errors}`);
}

/** `label  measured / reference = ratio  (note)`: a ratio line under a section. */
function ratio(label, measured, reference, note = '') {
  console.log(`${label.padEnd(66)} ${(measured / reference).toFixed(2).padStart(6)}x${note ? `  ${note}` : ''}`);
}

/** `label  text`: a measurement that is not a request rate (MB/s, sizes, memory). */
function line(label, text) {
  console.log(`${label.padEnd(44)} ${text}`);
}

/** The middle value (the mean of the two middle ones for an even count). */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

module.exports = { row, ratio, line, median };
