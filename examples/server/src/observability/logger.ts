import pino, { type DestinationStream, type Logger } from 'pino';

/** Field names whose values are never written. */
const SECRET_FIELDS = [
  'authorization',
  '"x-api-key"',
  '"x-gateway-api-key"',
  '"x-portkey-api-key"',
  'cookie',
  'apiKey',
  'key',
  'secretAccessKey',
  'sessionToken',
  'token',
  'privateKey',
  'password',
];

/** Log levels accepted in `LOG_LEVEL`. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** Writes buffered log lines out now (after start-up messages, at shutdown). */
export function flushLogger(logger: Logger): void {
  logger.flush();
}

/**
 * The gateway's one logger: JSON lines through pino, with secret fields redacted. Nothing logs
 * request bodies or whole header objects; redaction is the second line of defence. Lines are
 * written asynchronously in batches (at least every second), off the request path.
 */
export function createLogger(level: string = 'info', destination?: DestinationStream): Logger {
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${level}").`);
  }
  const paths = SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]);
  return pino(
    {
      level,
      base: { service: 'gateway' },
      redact: { paths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
