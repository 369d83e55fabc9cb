// Builds the embedded database's prepared data directory: PostgreSQL's initdb run once, here, at
// build time, into dist/pglite-data/<PGlite version>/. openEmbeddedDatabase copies it into an
// empty data directory, so a gateway's first start never runs initdb in its own process (initdb
// under PGlite peaks near 800 MB resident; a copied directory opens like any later start).
// Skipped when the directory for the installed PGlite version is already there.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = createRequire(join(packageDir, 'package.json')).resolve('@electric-sql/pglite');
const { version } = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8'));
const target = join(packageDir, 'dist', 'pglite-data', version);
if (!existsSync(join(target, 'PG_VERSION'))) {
  const started = Date.now();
  mkdirSync(dirname(target), { recursive: true });
  const building = mkdtempSync(`${target}.building-`);
  const { PGlite } = await import(pathToFileURL(entry.replace(/\.cjs$/, '.js')).href);
  const db = await PGlite.create(building);
  await db.close();
  rmSync(target, { recursive: true, force: true });
  renameSync(building, target);
  console.log(`@gw/catalog: prepared the embedded data directory for PGlite ${version} (${Date.now() - started} ms)`);
}

// Every directory of the prepared data directory, listed beside it: a package tarball keeps no
// empty directory (pg_tblspc, pg_notify, pg_wal/archive_status…), and PostgreSQL needs each of
// them, so openEmbeddedDatabase creates them again after its copy.
const manifest = `${target}.directories.json`;
if (!existsSync(manifest)) {
  const directories = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      directories.push(relative(target, join(dir, entry.name)).split('\\').join('/'));
      walk(join(dir, entry.name));
    }
  };
  walk(target);
  writeFileSync(manifest, `${JSON.stringify(directories.sort())}\n`);
}
