import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { UnsupportedQueryParameterError } from './errors';
import type { ResolvedIntegration } from './integration';

/** Both the Bedrock agent and agent-runtime APIs sign as `bedrock`. */
export const BEDROCK_SIGNING_SERVICE = 'bedrock';

/** A request to sign: `path` is the raw (percent-encoded) path, `query` the raw query string. */
export interface RequestToSign {
  method: string;
  origin: URL;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

/**
 * Decodes a raw query string into the parameters the signer canonicalises (order and encoding are
 * its job). The object has no prototype: a parameter named `constructor` or `toString` is a
 * parameter like any other. A parameter named `__proto__` is refused with
 * {@link UnsupportedQueryParameterError}: the signing library drops it from the canonical query.
 */
export function parseQuery(query: string): Record<string, string | string[]> {
  const params = Object.create(null) as Record<string, string | string[]>;
  // Stryker disable next-line ConditionalExpression,StringLiteral: a fast path; the loop skips the single empty pair of ''.split('&') alike.
  if (query === '') return params;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const decode = (s: string) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    };
    const key = decode(eq === -1 ? pair : pair.slice(0, eq));
    if (key === '__proto__') {
      throw new UnsupportedQueryParameterError('A query parameter may not be named "__proto__".');
    }
    const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
    const existing = Object.hasOwn(params, key) ? params[key] : undefined;
    params[key] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return params;
}

/** Signs requests with one integration's credentials (the secret is read only when signing). */
export class IntegrationSigner {
  private readonly signer: SignatureV4;

  constructor(
    integration: Pick<ResolvedIntegration, 'accessKeyId' | 'secretAccessKey' | 'sessionToken'>,
    service = BEDROCK_SIGNING_SERVICE,
  ) {
    this.signer = new SignatureV4({
      service,
      // Stryker disable next-line StringLiteral: a placeholder; sign() always passes signingRegion.
      region: 'us-east-1',
      sha256: Sha256,
      applyChecksum: false,
      credentials: async () => ({
        accessKeyId: integration.accessKeyId,
        secretAccessKey: integration.secretAccessKey.reveal(),
        sessionToken: integration.sessionToken?.reveal(),
      }),
    });
  }

  /**
   * Returns the headers to send: the given ones plus `host`, `x-amz-date`, `x-amz-security-token`
   * (with a session token) and `authorization`. The payload hash is over the exact body bytes.
   */
  async sign(request: RequestToSign, region: string, signingDate?: Date): Promise<Record<string, string>> {
    const signed = await this.signer.sign(
      {
        method: request.method,
        protocol: request.origin.protocol,
        hostname: request.origin.hostname,
        port: request.origin.port ? Number(request.origin.port) : undefined,
        path: request.path,
        query: parseQuery(request.query),
        headers: { ...request.headers, host: request.origin.host },
        body: request.body,
      },
      { signingRegion: region, signingDate },
    );
    return signed.headers as Record<string, string>;
  }
}
