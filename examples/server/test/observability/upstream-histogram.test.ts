import { Histogram, Registry } from 'prom-client';
import { GatewayMetrics } from '../../src/observability/metrics';

/** The `gateway_upstream_duration_seconds` lines of a scrape. */
const upstreamLines = (text: string): string =>
  text
    .split('\n')
    .filter((line) => line.includes('gateway_upstream_duration_seconds'))
    .join('\n');

/** The histogram as prom-client renders it when every duration is observed through `observe`. */
function prometheusReference() {
  const registry = new Registry();
  const histogram = new Histogram({
    name: 'gateway_upstream_duration_seconds',
    help: 'Time from sending a request upstream to its response headers.',
    labelNames: ['route', 'target'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return { registry, histogram };
}

describe('gateway_upstream_duration_seconds', () => {
  it("renders byte for byte what prom-client's own histogram renders for the same durations, scrape after scrape", async () => {
    const metrics = new GatewayMetrics();
    const reference = prometheusReference();
    const record = (route: string, target: string | undefined, ms: number | undefined) => {
      metrics.recordRequest(route, 200, target, ms);
      if (ms !== undefined) reference.histogram.observe({ route, target: target ?? 'none' }, ms / 1000);
    };
    expect(upstreamLines(await metrics.registry.metrics())).toBe(upstreamLines(await reference.registry.metrics()));
    // Values on the bounds, between them, above the last; series first seen in an interleaved order.
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const routes = ['messages', 'chat', 'mcp'];
    const targets = ['bench', undefined, 'tools', 'other'];
    for (let round = 0; round < 3; round++) {
      for (const ms of [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 30_001, 0, 0.3])
        record(routes[round]!, targets[round], ms);
      for (let i = 0; i < 500; i++)
        record(routes[Math.floor(next() * 3)]!, targets[Math.floor(next() * 4)], next() * 10 ** (next() * 5));
      // A request without an upstream call is counted, but not in the histogram.
      record('models', undefined, undefined);
      const rendered = upstreamLines(await metrics.registry.metrics());
      expect(rendered).toBe(upstreamLines(await reference.registry.metrics()));
      expect(rendered).toContain('gateway_upstream_duration_seconds_count{route="mcp",target="tools"}');
    }
  });

  it('starts again from zero when the registry is reset, as prom-client does', async () => {
    const metrics = new GatewayMetrics();
    metrics.recordRequest('messages', 200, 'bench', 12);
    metrics.recordRequest('chat', 200, 'bench', 12);
    metrics.recordRequest('mcp', 200, 'tools', 12);
    await metrics.registry.metrics();
    metrics.registry.resetMetrics();
    // Seen again after the reset, in another order; `mcp` is not seen again.
    metrics.recordRequest('chat', 200, 'bench', 4);
    metrics.recordRequest('messages', 200, 'bench', 3);
    const reference = prometheusReference();
    reference.histogram.observe({ route: 'chat', target: 'bench' }, 0.004);
    reference.histogram.observe({ route: 'messages', target: 'bench' }, 0.003);
    expect(upstreamLines(await metrics.registry.metrics())).toBe(upstreamLines(await reference.registry.metrics()));
  });
});
