import { BodyTooLargeError, InvalidJsonError } from '../core/errors';

/** An error reduced to what every error shape renders. */
export interface RenderableError {
  status: number;
  code: string;
  message: string;
  type: string;
  param: string | null;
  headers: Record<string, string>;
}

const TYPE_BY_STATUS: ReadonlyMap<number, string> = new Map([
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [413, 'invalid_request_error'],
  [415, 'invalid_request_error'],
  [429, 'rate_limit_error'],
  [502, 'api_error'],
  [504, 'timeout_error'],
]);

/**
 * Any error as status, code, message, type, param and headers: errors with a numeric `status`
 * and a string `code` (from any package) keep them; Express body-parser errors are mapped;
 * anything else becomes a 500 `internal_error` without details.
 */
export function toRenderable(error: unknown): RenderableError {
  const e = (error ?? {}) as Record<string, unknown>;
  if (e.type === 'entity.parse.failed')
    return toRenderable(new InvalidJsonError('The request body is not valid JSON.'));
  if (e.type === 'entity.too.large') {
    return toRenderable(new BodyTooLargeError('The request body is larger than the gateway accepts.'));
  }
  if (typeof e.status !== 'number' || e.status < 400 || e.status > 599 || typeof e.code !== 'string') {
    return {
      status: 500,
      code: 'internal_error',
      message: 'The gateway failed to handle the request.',
      type: 'api_error',
      param: null,
      headers: {},
    };
  }
  return {
    status: e.status,
    code: e.code,
    message: typeof e.message === 'string' ? e.message : 'Request failed.',
    type: typeof e.type === 'string' ? e.type : (TYPE_BY_STATUS.get(e.status) ?? 'api_error'),
    param: typeof e.param === 'string' ? e.param : null,
    headers: typeof e.headers === 'object' && e.headers !== null ? (e.headers as Record<string, string>) : {},
  };
}

/** The OpenAI error body: `{"error":{"message","type","param","code"}}`. */
export function openAiErrorBody(r: RenderableError): unknown {
  return { error: { message: r.message, type: r.type, param: r.param, code: r.code } };
}

const ANTHROPIC_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
  'timeout_error',
]);

/** The Anthropic error body: `{"type":"error","error":{"type","message"},"code"}`. */
export function anthropicErrorBody(r: RenderableError): unknown {
  const type = ANTHROPIC_TYPES.has(r.type) ? r.type : (TYPE_BY_STATUS.get(r.status) ?? 'api_error');
  return { type: 'error', error: { type, message: r.message }, code: r.code };
}
