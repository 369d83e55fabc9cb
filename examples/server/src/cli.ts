import { writeFileSync } from 'node:fs';
import { CatalogStore, SecretBox, migrate } from '@gw/catalog';
import { SigningKey } from '@gw/jwks';
import { encryptionKeys, openCatalogDatabase } from './catalog/open-catalog';

const USAGE = [
  'usage: gw keys generate [--out <file>]   writes a new RSA-2048 private key (PEM) and prints its kid and JWKS entry',
  '       gw catalog reseal                  re-encrypts every catalog secret under GATEWAY_ENCRYPTION_KEY, opening',
  '                                          old ones with GATEWAY_PREVIOUS_ENCRYPTION_KEYS (DATABASE_URL or GATEWAY_DATA_DIR)',
].join('\n');

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
  if (group !== 'keys' || command !== 'generate') {
    out(`${USAGE}\n`);
    return group === undefined || group === '--help' ? 0 : 2;
  }
  const outIndex = rest.indexOf('--out');
  const file = outIndex === -1 ? undefined : rest[outIndex + 1];
  if (outIndex !== -1 && !file) {
    out(`${USAGE}\n`);
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
