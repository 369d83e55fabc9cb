import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedDatabase, type CatalogDatabase } from '../src';
import { startPostgres, type RunningPostgres } from './postgres';

/** The databases a test file's suites run on, and the folders of its embedded databases. */
export interface CatalogEngines {
  /** Each engine by name, with a function opening a database on it (for `describe.each`). */
  engines: [string, () => Promise<CatalogDatabase>][];
  /** A new folder for an embedded database, removed when the file's tests end. */
  embeddedFolder(): string;
}

/**
 * Sets up, for the calling test file, a real PostgreSQL server (started before its tests and
 * stopped after) and embedded databases in folders named `<folderPrefix>…` (removed after).
 * `openOnPostgres` opens the file's database on that server: a database of its own, or the
 * server's default one made empty.
 */
export function catalogEngines(
  folderPrefix: string,
  openOnPostgres: (postgres: RunningPostgres) => Promise<CatalogDatabase>,
): CatalogEngines {
  let postgres: RunningPostgres | undefined;
  const folders: string[] = [];
  beforeAll(async () => {
    postgres = await startPostgres();
  });
  afterAll(async () => {
    await postgres?.destroy();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });
  const embeddedFolder = (): string => {
    const folder = mkdtempSync(join(tmpdir(), folderPrefix));
    folders.push(folder);
    return folder;
  };
  return {
    engines: [
      ['the embedded database', async () => openEmbeddedDatabase(embeddedFolder())],
      [
        'PostgreSQL',
        async () => {
          if (!postgres) throw new Error('the PostgreSQL server of this test file did not start');
          return openOnPostgres(postgres);
        },
      ],
    ],
    embeddedFolder,
  };
}
