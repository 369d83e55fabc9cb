// The report's rows for a `sideBySide` comparison (features.mjs): subject B against subject A on
// the same gateway, with the bare node:http proxy as the floor, in the same rounds.

export const times = (value) => `${value.toFixed(2)}×`;
export const us = (micros) => `${micros.toFixed(1)} µs`;
export const ms = (micros) => `${(micros / 1000).toFixed(3)} ms`;
/** A summary as "median (min – max)". */
export const spread = (s, format) => `${format(s.median)} (${format(s.min)} – ${format(s.max)})`;

/**
 * A row of the targets table for comparison `c`: B's CPU per request at 10 connections over A's,
 * round by round (median, min – max), met when the median is at most `limit`, with the added p50
 * at 1 connection beside it. A ratio whose reference read no CPU tick (smoke counts) is infinite
 * or NaN: the row says it was not measured.
 */
export function sideBySideTarget(metric, target, limit, c) {
  const cpu = c.ratio.cpu;
  const measured = Number.isFinite(cpu.median);
  return {
    metric,
    target,
    value: measured ? cpu.median : undefined,
    measured: measured
      ? `${spread(cpu, times)} CPU (${c.b} ${us(c.cpuMicrosPerRequest.b.median)} against ${us(c.cpuMicrosPerRequest.a.median)}); added p50 ${spread(c.ratio.addedP50, times)} (${ms(c.addedP50Micros.b.median)} against ${ms(c.addedP50Micros.a.median)})`
      : `not measured: no CPU tick in a round of ${c.a}`,
    floor: `${us(c.cpuMicrosPerRequest.floor.median)} CPU, ${ms(c.p50Micros.floor.median)} p50 (${ms(c.addedP50Micros.floor.median)} over the mock)`,
    ratio: `${times(c.ratio.cpuOverFloor.median)} CPU`,
    met: measured ? cpu.median <= limit : null,
  };
}

/** The head of a table of comparisons, one {@link sideBySideLine} each. */
export const SIDE_BY_SIDE_HEAD = [
  '| comparison | A | B | A p50 (added) | B p50 (added) | floor p50 (added) | B / A added p50 | A CPU | B CPU | floor CPU | B / A CPU |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
];

/** One comparison in full: both subjects and the floor. */
export function sideBySideLine(v) {
  return `| ${v.label} | ${v.a} | ${v.b} | ${ms(v.p50Micros.a.median)} (${ms(v.addedP50Micros.a.median)}) | ${ms(v.p50Micros.b.median)} (${ms(v.addedP50Micros.b.median)}) | ${ms(v.p50Micros.floor.median)} (${ms(v.addedP50Micros.floor.median)}) | ${spread(v.ratio.addedP50, times)} | ${us(v.cpuMicrosPerRequest.a.median)} | ${us(v.cpuMicrosPerRequest.b.median)} | ${us(v.cpuMicrosPerRequest.floor.median)} | ${spread(v.ratio.cpu, times)} |`;
}
