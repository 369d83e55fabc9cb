import { CustomHostNotAllowedError } from './errors';
import type { ResolvedIntegration } from './integration';

/** Bedrock agent and agent-runtime endpoints (FIPS too, and China), whose region is in the name. */
const BEDROCK_AGENT_HOST =
  /^bedrock-agent(?:-runtime)?(?:-fips)?\.([a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d{1,2})\.amazonaws\.com(?:\.cn)?$/;

/** Where a signed request may go, and the region it is signed for. */
export interface SigningTarget {
  /** The origin that is dialled, and whose host is signed. */
  origin: URL;
  /** The signing region. */
  region: string;
}

/** True for an https Bedrock agent or agent-runtime host on port 443. */
export function isAllowedBedrockHost(url: URL): boolean {
  return url.protocol === 'https:' && url.port === '' && BEDROCK_AGENT_HOST.test(url.hostname);
}

/**
 * The single check every signed call goes through. The custom host (a host name, or a URL;
 * scheme-less means https) is parsed once with the WHATWG URL parser and must carry nothing but
 * an origin: no userinfo, path, query or fragment. It must then be an https Bedrock agent host on
 * port 443 (signed for the region in its name) or equal one of the integration's `allowedHosts`
 * origins exactly (signed for the integration's region). Anything else throws.
 */
export function resolveCustomHost(customHost: string, integration: ResolvedIntegration): SigningTarget {
  const refuse = (): never => {
    throw new CustomHostNotAllowedError(
      "The custom host is not allowed: use an https Bedrock agent endpoint such as bedrock-agent-runtime.us-east-1.amazonaws.com, or one of the integration's allowedHosts.",
    );
  };
  const raw = customHost.trim();
  // Stryker disable next-line StringLiteral: the empty text is refused anyway, since `https://` alone does not parse.
  if (raw === '' || raw.length > 512 || /[\s\\]/.test(raw)) refuse();
  let url: URL;
  try {
    // Stryker disable next-line Regex: text with `://` after a non-scheme prefix fails to parse on either branch or leaves a path, so the anchor changes no outcome.
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`);
  } catch {
    return refuse();
  }
  // Stryker disable next-line ConditionalExpression,LogicalOperator: userinfo, query and fragment need `@`, `?` or `#` in the text, refused on the next line (defence in depth); the path check is tested.
  if (url.username || url.password || url.search || url.hash || url.pathname !== '/') refuse();
  if (raw.includes('?') || raw.includes('#') || raw.includes('@')) refuse();
  if (integration.allowedOrigins.has(url.origin)) return { origin: new URL(url.origin), region: integration.region };
  if (!isAllowedBedrockHost(url)) refuse();
  return { origin: new URL(url.origin), region: BEDROCK_AGENT_HOST.exec(url.hostname)?.[1] as string };
}

/** Custom host texts a {@link ResolvedCustomHosts} keeps, by default; past it, it starts afresh. */
export const MAX_RESOLVED_CUSTOM_HOSTS = 32;

/**
 * {@link resolveCustomHost} for one integration, kept per custom host text: the same text always
 * resolves alike, and clients send the same one on every call (two WHATWG URL parses a call
 * otherwise). A refused text throws every time and is never kept. At most `max` texts are kept
 * (the header is the client's: past the bound the texts kept are forgotten, not added to).
 */
export class ResolvedCustomHosts {
  private readonly targets = new Map<string, SigningTarget>();

  /**
   * @param integration - the integration whose hosts are resolved.
   * @param max - most texts kept. Default {@link MAX_RESOLVED_CUSTOM_HOSTS} (32).
   */
  constructor(
    private readonly integration: ResolvedIntegration,
    private readonly max: number = MAX_RESOLVED_CUSTOM_HOSTS,
  ) {}

  /** Where `customHost` is signed for; throws as {@link resolveCustomHost} does. */
  resolve(customHost: string): SigningTarget {
    let target = this.targets.get(customHost);
    if (target === undefined) {
      target = resolveCustomHost(customHost, this.integration);
      if (this.targets.size >= this.max) this.targets.clear();
      this.targets.set(customHost, target);
    }
    return target;
  }

  /** Texts kept now. */
  get size(): number {
    return this.targets.size;
  }
}
