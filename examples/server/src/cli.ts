import { existsSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { CatalogStore, SecretBox, migrate } from '@gw/catalog';
import { SigningKey } from '@gw/jwks';
import { encryptionKeys, openCatalogDatabase } from './catalog/open-catalog';

const USAGE = [
  'usage: gw <command> [options]',
  '',
  'commands:',
  '  keys generate [--out <file>]   a new RSA-2048 signing key for JWT_PRIVATE_KEY, with its kid and JWKS entry',
  '  catalog reseal                 re-encrypts every catalog secret under GATEWAY_ENCRYPTION_KEY',
  '',
  'gw <command> --help shows what a command does and its options.',
].join('\n');

const KEYS_GENERATE_HELP = [
  'usage: gw keys generate [--out <file>] [--allow-in-git-tree]',
  '',
  'Generates an RSA-2048 private key (PKCS#8 PEM) for JWT_PRIVATE_KEY and prints its kid and its',
  'JWKS entry (what MCP servers will see at /.well-known/jwks.json).',
  '',
  '  --out <file>          write the key to <file> (mode 600, never over an existing file) instead of printing it',
  '  --allow-in-git-tree   write it even inside a git work tree (refused by default: a key must not be committed)',
].join('\n');

const CATALOG_RESEAL_HELP = [
  'usage: gw catalog reseal',
  '',
  'Re-encrypts every secret of the catalog under GATEWAY_ENCRYPTION_KEY, opening the old ones with',
  'GATEWAY_PREVIOUS_ENCRYPTION_KEYS (comma-separated). The catalog is DATABASE_URL, or the embedded',
  'database in GATEWAY_DATA_DIR (default ./.gateway-data; stop the gateway first). See docs/catalog.md.',
].join('\n');

/** The git work tree `path` is inside, or undefined. */
function gitWorkTree(path: string): string | undefined {
  for (let dir = resolve(dirname(path)); ; dir = dirname(dir)) {
    if (existsSync(resolve(dir, '.git'))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * `gw catalog reseal`: key rotation of the catalog's secrets without downtime. Run it once every
 * instance has the new `GATEWAY_ENCRYPTION_KEY` and the old key in `GATEWAY_PREVIOUS_ENCRYPTION_KEYS`
 * (they open both); afterwards the old key can be dropped. Returns the exit code.
 */
export async function resealCatalog(
  env: NodeJS.ProcessEnv,
  out: (text: string) => void = (t) => process.stdout.write(t),
): Promise<number> {
  let keys: ReturnType<typeof encryptionKeys>;
  try {
    keys = encryptionKeys(env);
  } catch (error) {
    out(`gw: ${(error as Error).message}\n`);
    return 2;
  }
  if (!keys.current) {
    out('gw: set GATEWAY_ENCRYPTION_KEY to the new key and GATEWAY_PREVIOUS_ENCRYPTION_KEYS to the old one(s).\n');
    return 2;
  }
  const db = await openCatalogDatabase(env);
  try {
    await migrate(db);
    const resealed = await new CatalogStore(db, new SecretBox(keys.current, keys.previous)).reseal();
    out(`Re-encrypted ${resealed} catalog record(s) under the key ${SecretBox.keyIdOf(keys.current)}.\n`);
    return 0;
  } catch (error) {
    out(`gw: ${(error as Error).message.split('\n')[0]}\n`);
    return 1;
  } finally {
    await db.close();
  }
}

/** `pnpm gw keys generate [--out file]`. Returns the exit code. */
export function runCli(args: string[], out: (text: string) => void = (t) => process.stdout.write(t)): number {
  const [group, command, ...rest] = args;
  if (group === 'catalog' && command === 'reseal' && rest.includes('--help')) {
    out(`${CATALOG_RESEAL_HELP}\n`);
    return 0;
  }
  if (group !== 'keys' || command !== 'generate') {
    out(`${USAGE}\n`);
    return group === undefined || group === '--help' || group === 'help' ? 0 : 2;
  }
  if (rest.includes('--help')) {
    out(`${KEYS_GENERATE_HELP}\n`);
    return 0;
  }
  const outIndex = rest.indexOf('--out');
  const file = outIndex === -1 ? undefined : rest[outIndex + 1];
  const unknown = rest.filter(
    (a, i) => !((outIndex !== -1 && (i === outIndex || i === outIndex + 1)) || a === '--allow-in-git-tree'),
  );
  if ((outIndex !== -1 && (!file || file.startsWith('--'))) || unknown.length > 0) {
    out(`${unknown.length > 0 ? `gw: unknown option ${unknown[0]}\n` : ''}${KEYS_GENERATE_HELP}\n`);
    return 2;
  }
  const tree = file === undefined ? undefined : gitWorkTree(file);
  if (file && tree !== undefined && !rest.includes('--allow-in-git-tree')) {
    out(
      `gw: ${file} is inside the git work tree ${tree}: a private key there is one "git add ." away from being committed. Write it elsewhere, or pass --allow-in-git-tree (and add it to .gitignore).\n`,
    );
    return 2;
  }
  const key = SigningKey.generate();
  if (file) {
    try {
      writeFileSync(file, key.toPkcs8Pem(), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      out(
        `gw: cannot write ${file} (${(error as NodeJS.ErrnoException).code === 'EEXIST' ? 'it exists; refusing to overwrite' : (error as Error).message}).\n`,
      );
      return 1;
    }
    out(`Wrote a new RSA-2048 private key to ${file} (mode 600). Set JWT_PRIVATE_KEY to its contents.\n`);
  } else {
    out(key.toPkcs8Pem());
  }
  out(`kid: ${key.kid}\nJWKS entry: ${JSON.stringify(key.publicJwk)}\n`);
  return 0;
}

if (require.main === module) {
  const args = process.argv.slice(2);
  if (args[0] === 'catalog' && args[1] === 'reseal' && args.length === 2) {
    void resealCatalog(process.env).then((code) => process.exit(code));
  } else {
    process.exit(runCli(args));
  }
}
