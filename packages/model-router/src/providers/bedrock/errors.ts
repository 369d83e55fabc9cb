/**
 * Bedrock Runtime's exceptions, as data: each exception name mapped to the status and Anthropic
 * error type a client of the `anthropic` provider would get for the same failure (CONTRACT
 * section 17), so fallback and retries treat the two transports alike.
 */

/** An Anthropic error status and type. */
export interface MappedBedrockError {
  status: number;
  type: string;
}

/** By Bedrock exception name (the `x-amzn-errortype` header, or the stream's `:exception-type`, first letter either case). */
export const BEDROCK_EXCEPTIONS: Readonly<Record<string, MappedBedrockError>> = Object.freeze({
  ThrottlingException: { status: 429, type: 'rate_limit_error' },
  ServiceQuotaExceededException: { status: 429, type: 'rate_limit_error' },
  ModelNotReadyException: { status: 429, type: 'rate_limit_error' },
  ServiceUnavailableException: { status: 503, type: 'overloaded_error' },
  ValidationException: { status: 400, type: 'invalid_request_error' },
  AccessDeniedException: { status: 403, type: 'permission_error' },
  ResourceNotFoundException: { status: 404, type: 'not_found_error' },
  ModelTimeoutException: { status: 504, type: 'timeout_error' },
  InternalServerException: { status: 500, type: 'api_error' },
  ModelErrorException: { status: 502, type: 'api_error' },
  ModelStreamErrorException: { status: 502, type: 'api_error' },
  // The gateway's AWS credentials are refused: what a bad provider key gives on the anthropic provider.
  UnrecognizedClientException: { status: 401, type: 'authentication_error' },
  InvalidSignatureException: { status: 401, type: 'authentication_error' },
  ExpiredTokenException: { status: 401, type: 'authentication_error' },
});

/** The Anthropic error type of a status, for an exception the table does not name. */
function typeOfStatus(status: number): string {
  if (status === 400) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  return 'api_error';
}

/** The exception name of `x-amzn-errortype` (`ThrottlingException:http://…` → `ThrottlingException`), or of a body's `__type`. */
export function exceptionName(errorType: unknown, body?: unknown): string | undefined {
  const raw =
    typeof errorType === 'string'
      ? errorType
      : typeof (body as { __type?: unknown } | null)?.__type === 'string'
        ? (body as { __type: string }).__type
        : undefined;
  if (raw === undefined) return undefined;
  const name = raw.split(':')[0]?.split('#').at(-1)?.trim() ?? '';
  return /^[A-Za-z]{1,64}$/.test(name) ? name.charAt(0).toUpperCase() + name.slice(1) : undefined;
}

/** The status and type of a Bedrock exception; an unknown one keeps `status` (a 2xx or 3xx becomes 502). */
export function mapBedrockException(name: string | undefined, status: number): MappedBedrockError {
  const known = name !== undefined && Object.hasOwn(BEDROCK_EXCEPTIONS, name) ? BEDROCK_EXCEPTIONS[name] : undefined;
  if (known) return known;
  const kept = status >= 400 && status <= 599 ? status : 502;
  return { status: kept, type: typeOfStatus(kept) };
}

/** Most characters of Bedrock's error message passed on. */
const MAX_MESSAGE_CHARS = 1024;

/** Anthropic's error body for a Bedrock error: `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorBodyOf(mapped: MappedBedrockError, name: string | undefined, body: unknown): string {
  const message =
    (body as { message?: unknown; Message?: unknown } | null)?.message ??
    (body as { Message?: unknown } | null)?.Message;
  const text =
    typeof message === 'string' && message !== ''
      ? message.slice(0, MAX_MESSAGE_CHARS)
      : `Bedrock answered ${name ?? `status ${mapped.status}`}.`;
  return JSON.stringify({ type: 'error', error: { type: mapped.type, message: text } });
}
