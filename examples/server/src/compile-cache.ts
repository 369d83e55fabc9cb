import { lstatSync, mkdirSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Node's compile cache (Node 22.1+, `module.enableCompileCache`): the V8 code of every module the
 * gateway loads is kept on disk, so a later start compiles none of them again (about 140 ms of
 * CPU of a start of the development default on Node 22, 1.88 → 1.74 s). On Node 20 there is no
 * such API and nothing happens.
 *
 * The cache is code the process runs: it lives in a directory only the gateway's user can write
 * ({@link compileCacheDirectory}), never in a shared one, and not in the data directory (that is
 * PostgreSQL's, and copied or backed up as a database; with `DATABASE_URL` there is none). A cache
 * that is lost or cannot be written only means a start that compiles everything, as before.
 */

/**
 * The directory for the gateway's compile cache: `<tmpdir>/gw-compile-cache-<uid>`, created with
 * mode 0700. `undefined` (no cache) when it cannot be made, or when it is not a plain directory
 * owned by this user that no one else may write: a symbolic link, another user's directory, or
 * one writable by its group or others is never used. `undefined` where there are no user ids
 * (Windows). Default `base`: `os.tmpdir()`.
 */
export function compileCacheDirectory(base: string = tmpdir()): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const dir = join(base, `gw-compile-cache-${uid}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

/** `node:module`'s compile cache API, present from Node 22.1 (absent from Node 20's types). */
interface CompileCacheApi {
  enableCompileCache?: (directory?: string) => { status: number; directory?: string };
  constants?: { compileCacheStatus?: { ENABLED: number } };
}

/**
 * Turns Node's compile cache on for this process in {@link compileCacheDirectory}, where Node has
 * `module.enableCompileCache` (22.1+) and `NODE_DISABLE_COMPILE_CACHE` is not set. A cache the
 * operator enabled with `NODE_COMPILE_CACHE` is left as it is. Returns the directory in use, or
 * `undefined` when no cache was turned on here. Defaults: `process.env`, `os.tmpdir()`.
 */
export function enableGatewayCompileCache(
  env: NodeJS.ProcessEnv = process.env,
  base: string = tmpdir(),
): string | undefined {
  const { enableCompileCache, constants } = nodeModule as unknown as CompileCacheApi;
  if (typeof enableCompileCache !== 'function' || env.NODE_DISABLE_COMPILE_CACHE || env.NODE_COMPILE_CACHE)
    return undefined;
  const dir = compileCacheDirectory(base);
  if (dir === undefined) return undefined;
  return enableCompileCache(dir).status === constants?.compileCacheStatus?.ENABLED ? dir : undefined;
}

// Only when the gateway itself runs (`node dist/main.js`), before its other modules load: a
// program that imports the gateway decides about its own process.
if (require.main?.filename === join(__dirname, 'main.js')) enableGatewayCompileCache();
