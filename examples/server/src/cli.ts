import { writeFileSync } from 'node:fs';
import { SigningKey } from '@gw/jwks';

const USAGE =
  'usage: gw keys generate [--out <file>]   writes a new RSA-2048 private key (PEM) and prints its kid and JWKS entry';

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

if (require.main === module) process.exit(runCli(process.argv.slice(2)));
