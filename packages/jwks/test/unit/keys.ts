import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Key pairs of the unit tests. Generating RSA keys is the slow part (a second each on a loaded
 * machine) and mutation testing reruns a file once per mutant, so a generated pair is kept in the
 * temporary directory (throwaway test keys, never used elsewhere) and read back by later runs.
 */
const made = new Map<string, { privateKey: KeyObject; publicKey: KeyObject; privatePem: string; publicPem: string }>();

/** An RSA key pair of `bits` bits, generated once per test file per name. */
export function rsaKey(name = 'a', bits = 2048) {
  const id = `${name}/${bits}`;
  let pair = made.get(id);
  if (!pair) {
    const file = join(tmpdir(), `gw-unit-test-rsa-${name}-${bits}.json`);
    let pem: { privateKey: string; publicKey: string };
    if (existsSync(file)) pem = JSON.parse(readFileSync(file, 'utf8'));
    else {
      pem = generateKeyPairSync('rsa', {
        modulusLength: bits,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      });
      const partial = `${file}.${process.pid}`;
      writeFileSync(partial, JSON.stringify(pem));
      renameSync(partial, file);
    }

    pair = {
      privatePem: pem.privateKey,
      publicPem: pem.publicKey,
      privateKey: createPrivateKey(pem.privateKey),
      publicKey: createPublicKey(pem.publicKey),
    };
    made.set(id, pair);
  }
  return pair;
}

const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** A compact JWS signed with `key` (RS256 unless the header names RS384/RS512). */
export function token(header: Record<string, unknown>, payload: unknown, key: KeyObject = rsaKey().privateKey): string {
  const hashName = header.alg === 'RS384' ? 'sha384' : header.alg === 'RS512' ? 'sha512' : 'sha256';
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign(hashName, Buffer.from(input), key).toString('base64url')}`;
}

/** Base64url of a JSON value or a raw string. */
export const segment = b64;
