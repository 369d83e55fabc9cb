import { inspect } from 'node:util';
import {
  createIdentityTokenSigner,
  loadSigningKey,
  type IdentityTokenSigner,
  type JsonWebKeySet,
  type LoadSigningKeyOptions,
  type LoadedSigningKey,
  type PublicJwk,
  type SigningKey,
} from '@gw/jwks';

/*
 * The gateway's temporary development key (no `JWT_PRIVATE_KEY`) is an RSA-2048 key generated in
 * the process: 0.15 to 0.3 s of CPU. It is made when something first needs it: the JWKS is
 * fetched, an identity token is signed for a `jwt_header` server, OAuth is turned on. Until then no
 * token exists that it would have signed, so nothing a client sees differs but when the key was made.
 */

/** A key made by `load` the first time any of its members is read; printing it never makes it. */
function deferredKey(load: () => SigningKey): SigningKey {
  let made: SigningKey | undefined;
  const key = () => (made ??= load());
  const printed = () => (made ? made.toString() : 'SigningKey(not generated yet, private key [redacted])');
  return {
    get kid() {
      return key().kid;
    },
    get privateKey() {
      return key().privateKey;
    },
    get publicKey() {
      return key().publicKey;
    },
    get publicJwk() {
      return key().publicJwk;
    },
    toPkcs8Pem: () => key().toPkcs8Pem(),
    toString: printed,
    toJSON: () => (made ? made.toJSON() : { kid: '[not generated yet]', privateKey: '[redacted]' }),
    [inspect.custom]: printed,
  } as SigningKey;
}

/** What {@link signingKeyAtStart} returns: {@link LoadedSigningKey}, and whether the key is made yet. */
export interface StartSigningKey extends LoadedSigningKey {
  /** False while a deferred key has not been made (its `kid` is not known without making it). */
  readonly generated: () => boolean;
}

/**
 * {@link loadSigningKey} at start-up, except that the temporary development key is made when first
 * needed: with no `privateKeyPem` and no `previousPublicKeysPem`, unless in production with
 * `jwtHeaderInUse` (which `loadSigningKey` refuses). Every other case is `loadSigningKey` itself,
 * with its errors at start-up.
 */
export function signingKeyAtStart(options: LoadSigningKeyOptions): StartSigningKey {
  const deferrable =
    !options.privateKeyPem?.trim() &&
    !options.previousPublicKeysPem?.trim() &&
    !(options.production && options.jwtHeaderInUse);
  if (!deferrable) {
    const loaded = loadSigningKey(options);
    return { ...loaded, generated: () => true };
  }
  let loaded: LoadedSigningKey | undefined;
  const load = () => (loaded ??= loadSigningKey(options));
  const key = deferredKey(() => load().key as SigningKey);
  const jwks: JsonWebKeySet = {
    get keys(): PublicJwk[] {
      return load().jwks.keys;
    },
  };
  return { key, ephemeral: true, jwks, generated: () => loaded !== undefined };
}

/**
 * `JWT_PRIVATE_KEY` (with `JWT_PREVIOUS_PUBLIC_KEYS`), loaded when set, so that a key that cannot
 * sign (too short, not RSA, not a key) stops start-up before the gateway's modules load (main.ts);
 * undefined when it is unset: {@link signingKeyAtStart} decides then, once the catalog is open.
 */
export function configuredSigningKey(env: NodeJS.ProcessEnv): StartSigningKey | undefined {
  if (!env.JWT_PRIVATE_KEY?.trim()) return undefined;
  // With a private key, loadSigningKey neither makes a key nor reads jwtHeaderInUse.
  const loaded = loadSigningKey({
    privateKeyPem: env.JWT_PRIVATE_KEY,
    previousPublicKeysPem: env.JWT_PREVIOUS_PUBLIC_KEYS,
    production: env.NODE_ENV === 'production',
    jwtHeaderInUse: false,
  });
  return { ...loaded, generated: () => true };
}

/**
 * An identity-token signer for `key` made with its first use (see {@link signingKeyAtStart}):
 * {@link createIdentityTokenSigner} reads the key at once.
 */
export function deferredSigner(key: SigningKey): IdentityTokenSigner {
  let signer: IdentityTokenSigner | undefined;
  const made = () => (signer ??= createIdentityTokenSigner(key));
  return {
    get kid() {
      return made().kid;
    },
    signIdentityToken: (claims, options) => made().signIdentityToken(claims, options),
  };
}
