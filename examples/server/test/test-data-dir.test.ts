import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { openEmbeddedDatabase } from '@gw/catalog';
import { freshDataDir, TEMPLATE_DATABASES } from './support';

/** Bytes of the files under `dir`. */
function sizeOf(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((total, entry) => {
    const path = join(dir, entry.name);
    return total + (entry.isDirectory() ? sizeOf(path) : statSync(path).size);
  }, 0);
}

/*
 * Every gateway a test starts gets a copy of one migrated embedded database (support.ts). The copy
 * is CPU the run spends at each of about 190 starts, so the template holds the gateway's database
 * only: initdb's template databases are dropped from it.
 */
describe("the tests' embedded data directory", () => {
  it("holds the gateway's database, migrated, and no template database (a 25 MB copy, not 39 MB)", async () => {
    const dir = freshDataDir('gw-test-data-dir-');
    try {
      // base/<oid> per database, plus the WAL segment (16 MB) and the shared catalogs.
      expect(readdirSync(join(dir, 'base'))).toHaveLength(1);
      expect(sizeOf(dir)).toBeLessThan(30 * 1024 * 1024);
      const db = await openEmbeddedDatabase(dir);
      try {
        const databases = await db.query<{ datname: string }>('SELECT datname FROM pg_database ORDER BY datname');
        expect(databases.map((d) => d.datname)).toEqual(['postgres']);
        expect(databases.map((d) => d.datname)).not.toEqual(expect.arrayContaining([...TEMPLATE_DATABASES]));
        // Migrated: the catalog's tables are there, and writable.
        await db.exec(
          "INSERT INTO gw_audit (actor, action, kind, slug) VALUES ('test', 'test.copy', 'mcp-servers', 'copy')",
        );
        expect(await db.query('SELECT slug FROM gw_audit')).toEqual([{ slug: 'copy' }]);
      } finally {
        await db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
