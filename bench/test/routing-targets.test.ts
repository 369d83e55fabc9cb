import { inBenchModule } from './in-module';

/** A side-by-side comparison as `sideBySide` reports it, with CPU ratios round by round summarised. */
const comparison = (cpu: number, b = 'B') => {
  const s = (median: number) => ({ median, min: median, max: median });
  return {
    label: 'x',
    a: 'A',
    b,
    p50Micros: { a: s(500), b: s(500), floor: s(300), direct: s(100) },
    addedP50Micros: { a: s(400), b: s(400), floor: s(200) },
    cpuMicrosPerRequest: { a: s(300), b: s(300 * cpu), floor: s(120) },
    ratio: { addedP50: s(1), cpu: s(cpu), cpuOverFloor: s(2.5) },
  };
};

/** The fallback row of `routingTargets` for a fallback ratio, with the request-against-itself ratio when given. */
function fallbackRow(fallback: number, same?: number): { met: boolean; target: string; measured: string } {
  const routing = {
    fallback: comparison(fallback),
    bedrock: comparison(1.05),
    ...(same ? { same: comparison(same) } : {}),
  };
  return inBenchModule(
    'routing.mjs',
    'routing',
    `console.log(JSON.stringify(routing.routingTargets(${JSON.stringify(routing)})[0]));`,
  ) as { met: boolean; target: string; measured: string };
}

describe('the routing rows of the bench report', () => {
  it('meets the fallback row at 1.00× or less, and not above it when the noise was not measured', () => {
    expect(fallbackRow(1).met).toBe(true);
    expect(fallbackRow(1.03).met).toBe(false);
    expect(fallbackRow(1.03).target).toBe('≤ 1.00×');
  });

  it('meets it within the same request’s difference from itself, and says so', () => {
    const within = fallbackRow(1.04, 1.06);
    expect(within.met).toBe(true);
    expect(within.target).toMatch(/or within the same request’s difference from itself/);
    expect(within.measured).toMatch(/the same request against itself: 1\.06×/);
    expect(fallbackRow(1.08, 1.06).met).toBe(false);
    // An identical pair below 1.00× does not tighten the target.
    expect(fallbackRow(1, 0.97).met).toBe(true);
  });
});
