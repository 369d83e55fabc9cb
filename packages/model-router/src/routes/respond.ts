import type { ServerResponse } from 'node:http';
import { JSON_PIECE_LENGTH, endWithJson } from '@gw/upstream';
import { anthropicErrorBody, openAiErrorBody, toRenderable, type RenderableError } from './errors';

/** What an upstream-calling handler records for the host's logs and metrics (`res.locals.gateway`). */
export interface GatewayLocals {
  /** The provider slug the request went to. */
  target?: string;
  /** The provider's HTTP status. */
  upstreamStatus?: number;
  /** Time from sending the request upstream to its response headers, in ms (of the last attempt). */
  upstreamMs?: number;
  /** Upstream calls made for the request: 1, or more when it was retried. */
  upstreamAttempts?: number;
  /** True when the answer was ended because the upstream sent nothing for the idle timeout. */
  streamIdleTimeout?: boolean;
  /** The model the request asked for (without its `@slug/` prefix). */
  requestModel?: string;
  /** The model the provider reported in its answer. */
  responseModel?: string;
  /** Tokens the provider reported for the answer. */
  usage?: GatewayUsage;
  /** When the first byte of the answer's body was written (`performance.now()`); unset until then. */
  firstByteAt?: number;
  /** The `code` (or, for a provider's error, the error type) of an error answer. */
  errorCode?: string;
  /** The message of an error answer (the gateway's own or the provider's), as {@link recordedErrorMessage} keeps it. */
  errorMessage?: string;
  /** How the response cache answered (`x-gateway-cache-status`), when the request asked for it. */
  cacheStatus?: 'HIT' | 'MISS' | 'REFRESH' | 'DISABLED';
  /** The usage of an answer served from the cache: tokens the provider did not have to process. */
  cacheTokensSaved?: { input: number; output: number };
  /** Each provider attempt of a request routed across targets (CONTRACT section 17), in order; unset without targets. */
  attempts?: GatewayAttempt[];
  /** The dotted index of the target that answered, among {@link GatewayLocals.attempts}. */
  answeredIndex?: string;
}

/** One provider attempt of a request routed across targets. */
export interface GatewayAttempt {
  /** The target's dotted index from the config's top-level `targets` (`"1.0"`). */
  index: string;
  /** The provider slug. */
  provider: string;
  /** The model asked of it. */
  model: string;
  /** The provider's status, or the gateway's (502 unreachable, 504 timed out). */
  status: number;
  /** Time to the provider's response headers (or to the failure), in ms. */
  ms: number;
  /** `upstream_unreachable` or `upstream_timeout` when the provider gave no answer. */
  error?: string;
  /** True on the attempt whose answer the client got (set when the request is answered). Default: absent. */
  answered?: boolean;
}

/** Tokens of one answer, as the provider reported them. */
export interface GatewayUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheCreationInputTokens?: number;
  cacheReadInputTokens?: number;
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;

/** {@link GatewayUsage} from an Anthropic `usage` object (missing or malformed fields left out). */
export function anthropicUsage(usage: unknown): GatewayUsage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  return {
    inputTokens: count(u.input_tokens),
    outputTokens: count(u.output_tokens),
    cacheCreationInputTokens: count(u.cache_creation_input_tokens),
    cacheReadInputTokens: count(u.cache_read_input_tokens),
  };
}

type WithLocals = ServerResponse & { locals?: { gateway?: GatewayLocals } };

/** The response's `locals.gateway` record, created when absent (Express sets `locals`; node:http does not). */
export function gatewayLocals(res: ServerResponse): GatewayLocals {
  const holder = res as WithLocals;
  return ((holder.locals ??= {}).gateway ??= {});
}

/**
 * The length (UTF-16 code units) of JSON text from which {@link sendJson} writes an answer in
 * pieces (`endWithJson`) instead of as one string: 64 Ki, under V8's 128 KiB large-object size.
 */
export const SEND_JSON_IN_PIECES_FROM = 2 * JSON_PIECE_LENGTH;

/**
 * Writes `body` as a JSON response (no ETag: these are answers to POSTs): in one write, or, from
 * {@link SEND_JSON_IN_PIECES_FROM}, in pieces of text that never become one large string (a long
 * `/v1/models` list; docs/decisions.md, "Large JSON answers in pieces"). A text that long is
 * stringified twice, which costs less than reading it as one string (reading its `length` does not).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  gatewayLocals(res).firstByteAt ??= performance.now();
  // `length` of the text does not join its parts; the large text is dropped unread.
  if (text.length >= SEND_JSON_IN_PIECES_FROM) {
    endWithJson(res, status, body, { 'content-type': 'application/json; charset=utf-8' });
    return;
  }
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

/**
 * Which error body a route family answers with (CONTRACT section 7): `openai`
 * `{"error":{"message","type","param","code"}}`, `anthropic`
 * `{"type":"error","error":{"type","message"},"code"}`, `generic` `{"error":{"message","type","code"}}`.
 */
export type ErrorShape = 'openai' | 'anthropic' | 'generic';

const BODIES: ReadonlyMap<ErrorShape, (r: RenderableError) => unknown> = new Map<
  ErrorShape,
  (r: RenderableError) => unknown
>([
  ['openai', openAiErrorBody],
  ['anthropic', anthropicErrorBody],
  ['generic', (r) => ({ error: { message: r.message, type: r.type, code: r.code } })],
]);

/**
 * Renders an error in the route family's shape with its status and headers (`retry-after`,
 * `WWW-Authenticate`); a response already under way is cut off instead. Returns the error as
 * rendered, for the caller's log.
 */
export function sendError(res: ServerResponse, error: unknown, shape: ErrorShape): RenderableError {
  const renderable = toRenderable(error);
  const locals = gatewayLocals(res);
  locals.errorCode = renderable.code;
  locals.errorMessage = recordedErrorMessage(renderable.message);
  if (res.headersSent) {
    res.destroy();
    return renderable;
  }
  for (const name in renderable.headers) res.setHeader(name, renderable.headers[name] as string);
  sendJson(res, renderable.status, (BODIES.get(shape) ?? openAiErrorBody)(renderable));
  return renderable;
}

/** Most characters of an error message a request record keeps. */
export const MAX_RECORDED_ERROR_MESSAGE = 500;

/** Runs of text that look like credentials: API keys, bearer tokens, AWS key ids, JWTs, long random strings. */
const CREDENTIAL_LIKE = [
  /\b(?:sk|pk|rk|gw)-[A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[^\s"',;]+/gi,
  /\b(?:AKIA|ASIA)[A-Z0-9]{12,}\b/g,
  /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g,
  /\b((?:api[_-]?key|token|secret|password|authorization|signature|credential)[A-Za-z_-]*["']?\s*[:=]\s*["']?)[^\s"',;&]+/gi,
  /[A-Za-z0-9+/_-]{32,}={0,2}/g,
];

/**
 * An error message as a request record keeps it: at most {@link MAX_RECORDED_ERROR_MESSAGE}
 * characters, control characters removed, and anything that looks like a credential (an API key,
 * a bearer token, an AWS key id, a JWT, `key=value` of a credential's name, a long random string)
 * replaced by `[redacted]`. Undefined for no message.
 */
export function recordedErrorMessage(message: unknown): string | undefined {
  if (typeof message !== 'string' || message === '') return undefined;
  // Redacted before it is cut, so no cut can leave the start of a credential unrecognised.
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  let text = message.slice(0, MAX_RECORDED_ERROR_MESSAGE * 4).replace(/[\u0000-\u001f\u007f]+/g, ' ');
  for (const pattern of CREDENTIAL_LIKE)
    text = text.replace(pattern, (match, prefix?: unknown) =>
      typeof prefix === 'string' ? `${prefix}[redacted]` : '[redacted]',
    );
  return text.length > MAX_RECORDED_ERROR_MESSAGE ? `${text.slice(0, MAX_RECORDED_ERROR_MESSAGE - 1)}…` : text;
}
