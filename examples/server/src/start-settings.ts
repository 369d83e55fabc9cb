import { isIP } from 'node:net';
import { allowedOriginsFromEnv } from './config/mcp-security';

/*
 * The settings a start reads from the environment alone, checked before the gateway's modules
 * load: this module needs only node:* (main.ts runs it first), so a typo in one of them stops a
 * start within a few hundredths of a CPU-second instead of the second the gateway's modules cost.
 */

/** How long in-flight requests (streams included) may run after SIGTERM/SIGINT, by default. */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Most days `GATEWAY_RESPONSES_DAYS` may keep a stored response: @gw/catalog's
 * `MAX_RESPONSE_RETENTION_DAYS`, written here so that checking it does not load the catalog
 * (`start-settings.test.ts` holds the two equal).
 */
export const MAX_RESPONSES_DAYS = 3650;

/** `PUBLIC_BASE_URL`: the gateway's public origin (for RFC 9728 metadata behind a proxy). */
function parsePublicBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(
      `PUBLIC_BASE_URL must be an origin such as "https://gateway.example.com" (got "${value.slice(0, 100)}").`,
    );
  }
  if (
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    url.pathname !== '/' ||
    url.search ||
    url.hash ||
    url.username
  ) {
    throw new Error('PUBLIC_BASE_URL must be an origin only, such as "https://gateway.example.com".');
  }
  return url.origin;
}

/**
 * `PORT`, read as the gateway always read it (`Number(PORT)`, default 8787; 0: a free port chosen
 * at start). A value that is not a port stops start-up here rather than when the server listens,
 * after the catalog database was opened.
 */
function listenPort(env: NodeJS.ProcessEnv): number {
  const port = Number(env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(
      `PORT must be a whole number from 0 to 65535, such as 8787 (got "${String(env.PORT).slice(0, 40)}").`,
    );
  }
  return port;
}

/**
 * A whole-number environment variable, or `fallback` when it is unset or empty. Anything else
 * stops start-up with a message that says what to write.
 */
export function wholeNumberEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const value = env[name]?.trim();
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) {
    throw new Error(
      `${name} must be a whole number of at least ${min}, such as ${fallback} (got "${value.slice(0, 40)}").`,
    );
  }
  if (Number(value) > max)
    throw new Error(`${name} must be at most ${max}, such as ${fallback} (got "${value.slice(0, 40)}").`);
  return Number(value);
}

/**
 * What slow or many clients may hold, from the environment (docs/configuration.md). The defaults
 * keep a 2-core gateway serving others while a few hundred sockets trickle bytes.
 */
export interface ConnectionLimits {
  /** `HEADERS_TIMEOUT_MS`: time to receive a request's headers (server.headersTimeout). Default 10000. */
  headersTimeoutMs: number;
  /**
   * `REQUEST_TIMEOUT_MS`: time to receive a whole request, body included (server.requestTimeout).
   * The response is not covered: streams run as long as they last. Default 60000.
   */
  requestTimeoutMs: number;
  /** `KEEP_ALIVE_TIMEOUT_MS`: how long an idle keep-alive connection stays open. Default 5000. */
  keepAliveTimeoutMs: number;
  /** `MAX_CONNECTIONS`: open connections in all (server.maxConnections); more are closed at once. Default 1024. */
  maxConnections: number;
  /** `MAX_CONNECTIONS_PER_IP`: open connections from one peer address; more are closed at once. Default 256. */
  maxConnectionsPerIp: number;
  /** `MAX_HEADERS_COUNT`: headers read per request (server.maxHeadersCount). Default 2000. */
  maxHeadersCount: number;
}

/** Reads {@link ConnectionLimits} from the environment; a bad value stops start-up with what to write. */
export function connectionLimits(env: NodeJS.ProcessEnv): ConnectionLimits {
  const limits: ConnectionLimits = {
    headersTimeoutMs: wholeNumberEnv(env, 'HEADERS_TIMEOUT_MS', 10_000, 1),
    requestTimeoutMs: wholeNumberEnv(env, 'REQUEST_TIMEOUT_MS', 60_000, 1),
    keepAliveTimeoutMs: wholeNumberEnv(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 1),
    maxConnections: wholeNumberEnv(env, 'MAX_CONNECTIONS', 1024, 1),
    maxConnectionsPerIp: wholeNumberEnv(env, 'MAX_CONNECTIONS_PER_IP', 256, 1),
    // Node drops the headers past maxHeadersCount; the gateway reads the server's value and
    // refuses a request that reached it (431 too_many_headers) rather than authenticate a
    // truncated list. Set explicitly: left unset, Node keeps 1,000 headers, not the 2,000 it documents.
    maxHeadersCount: wholeNumberEnv(env, 'MAX_HEADERS_COUNT', 2000, 1),
  };
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(
      `HEADERS_TIMEOUT_MS (${limits.headersTimeoutMs}) must not be more than REQUEST_TIMEOUT_MS (${limits.requestTimeoutMs}).`,
    );
  }
  return limits;
}

/** The response cache's environment variables, checked (a bad value stops start-up with what to write). */
export function responseCacheSettings(env: NodeJS.ProcessEnv): { maxMb: number; timeoutMs: number; url?: string } {
  const maxMb = wholeNumberEnv(env, 'GATEWAY_CACHE_MAX_MB', 256, 1);
  const timeoutMs = wholeNumberEnv(env, 'GATEWAY_CACHE_REDIS_TIMEOUT_MS', 50, 1);
  const url = env.REDIS_URL?.trim();
  if (!url) return { maxMb, timeoutMs };
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = '';
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    throw new Error('REDIS_URL must be a redis:// or rediss:// URL, such as "redis://127.0.0.1:6379".');
  }
  return { maxMb, timeoutMs, url };
}

/** What a start reads from the environment alone, checked ({@link startSettings}). */
export interface StartSettings {
  /** `PUBLIC_BASE_URL` as an origin; undefined when unset. */
  publicBaseUrl: string | undefined;
  /** `TRUSTED_PROXIES`: the proxies' IP addresses. Default: none. */
  trustedProxies: string[];
  /** `GATEWAY_ALLOWED_ORIGINS`: the other origins whose pages may call the MCP servers. Default: none. */
  allowedOrigins: string[];
  /** `HOST`: the listen address. Default `127.0.0.1`. */
  host: string;
  /** `PORT`: the listen port (0: chosen at start). Default 8787. */
  port: number;
  /** The slow-client limits ({@link ConnectionLimits}). */
  limits: ConnectionLimits;
  /** `SHUTDOWN_GRACE_MS`: how long in-flight requests may run after SIGTERM/SIGINT. Default 10000. */
  graceMs: number;
  /** `GATEWAY_REQUEST_LOG_DAYS`: days request records are kept (0: logged only, not stored). Default 30. */
  requestLogDays: number;
  /** `GATEWAY_REQUEST_LOG_QUEUE`: request records waiting to be written, at most. Default 10000. */
  requestLogQueue: number;
  /** `GATEWAY_RESPONSES_DAYS`: days stored Responses API responses are kept (1 to 3650). Default 30. */
  responsesDays: number;
}

/**
 * Reads and checks the {@link StartSettings} from the environment, in the order start-up always
 * checked them: the first bad value throws an Error whose one-line message says what to write.
 */
export function startSettings(env: NodeJS.ProcessEnv): StartSettings {
  responseCacheSettings(env);
  const publicBaseUrl = env.PUBLIC_BASE_URL ? parsePublicBaseUrl(env.PUBLIC_BASE_URL) : undefined;
  const trustedProxies = (env.TRUSTED_PROXIES ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  if (trustedProxies.some((a) => isIP(a) === 0)) {
    throw new Error('TRUSTED_PROXIES must be a comma-separated list of IP addresses, such as "10.0.0.5,10.0.0.6".');
  }
  const allowedOrigins = allowedOriginsFromEnv(env);
  const host = env.HOST ?? '127.0.0.1';
  const limits = connectionLimits(env);
  return {
    publicBaseUrl,
    trustedProxies,
    allowedOrigins,
    host,
    limits,
    graceMs: wholeNumberEnv(env, 'SHUTDOWN_GRACE_MS', SHUTDOWN_GRACE_MS),
    // 0: records are logged only, not stored (those stored before stay readable).
    requestLogDays: wholeNumberEnv(env, 'GATEWAY_REQUEST_LOG_DAYS', 30, 0),
    requestLogQueue: wholeNumberEnv(env, 'GATEWAY_REQUEST_LOG_QUEUE', 10_000, 1),
    // Stored Responses API responses: 1 day to 10 years (the catalog's store takes no more).
    responsesDays: wholeNumberEnv(env, 'GATEWAY_RESPONSES_DAYS', 30, 1, MAX_RESPONSES_DAYS),
    port: listenPort(env),
  };
}
