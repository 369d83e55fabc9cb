import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

jest.setTimeout(120_000);

interface Spread {
  median: number;
  min: number;
  max: number;
}
interface ShapeRow {
  shape: string;
  figure: string;
  measured: Spread;
  target: string;
  met: boolean | null;
}

const PATHS = ['passThrough', 'conversion', 'mcpCached', 'bedrock'];
const LATENCY_PATHS = ['passThrough', 'conversion', 'mcpCached'];

/**
 * `pnpm bench --shape production,embedded` with tiny counts: real PostgreSQL and Redis started by
 * the bench, both shapes, the bare proxy and the contract floor; every target of the footprint
 * work as a row naming its shape, with its spread and verdict. The figures themselves need a full
 * run (docs/benchmarks.md); this checks the runner that produces them.
 */
describe('pnpm bench --shape production,embedded', () => {
  it('reports every target of both shapes with its shape, spread and verdict, and leaves nothing behind', () => {
    const out = mkdtempSync(join(tmpdir(), 'bench-shapes-'));
    const temp = mkdtempSync(join(tmpdir(), 'bench-shapes-tmp-'));
    // The PostgreSQL server runs as the `postgres` user, with its data in a folder below this one.
    chmodSync(temp, 0o755);
    const run = spawnSync(
      process.execPath,
      ['--expose-gc', join(__dirname, '..', 'run.mjs'), '--smoke', '--shape', 'production,embedded', '--out', out],
      { encoding: 'utf8', timeout: 110_000, env: { ...process.env, TMPDIR: temp } },
    );
    const left = readdirSync(temp);
    rmSync(temp, { recursive: true, force: true });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(left).toEqual([]);
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as {
      shapes: { rows: ShapeRow[] };
    };
    rmSync(out, { recursive: true, force: true });
    const rows = report.shapes.rows;
    const named = (shape: string) => rows.filter((r) => r.shape === shape).map((r) => r.figure);
    for (const shape of ['production', 'embedded']) {
      expect(named(shape)).toEqual(
        expect.arrayContaining([
          ...PATHS.map((p) => `CPU per request, ${p}`),
          ...LATENCY_PATHS.map((p) => `added p50 at 1 connection, ${p}`),
          'first byte of a paced stream after 20 ms idle',
          'resident memory 2 s after start (MB)',
        ]),
      );
    }
    expect(named('embedded')).toContain('peak resident memory, first start (MB)');
    expect(named('embedded − production')).toEqual(PATHS.map((p) => `CPU per request, ${p}`));
    expect(named('production')).toEqual(
      expect.arrayContaining(['CPU per request over the contract floor, passThrough']),
    );
    for (const row of rows) {
      expect(row.measured.min).toBeLessThanOrEqual(row.measured.median);
      expect(row.measured.median).toBeLessThanOrEqual(row.measured.max);
      expect(row.target).not.toBe('');
      // The contract floor's rows are the premise: no verdict of their own.
      expect(typeof row.met === 'boolean' || (row.shape === 'contract floor' && row.met === null)).toBe(true);
    }
  });
});
