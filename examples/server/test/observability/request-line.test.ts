import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger';
import { logRequest, type RequestRecord } from '../../src/observability/request-record';

/** A logger writing into an array, and the lines it wrote (parsed). */
function capture(level = 'info') {
  const lines: string[] = [];
  const logger = createLogger(
    level,
    new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }),
  );
  return { logger, lines, parsed: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

const record = (over: Partial<RequestRecord> = {}): RequestRecord => ({
  time: '2025-06-02T10:00:00.000Z',
  requestId: '6f1c2a9e-0d6b-4a53-9a53-0e3d5c0c1b2a',
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  route: 'messages',
  method: 'POST',
  path: '/v1/messages',
  userId: 'u_"quoted"\\back',
  keyHint: '…7f3a',
  provider: 'claude',
  modelRequested: 'claude-\u2028line\u0000nul',
  modelAnswered: null,
  mcpMethod: null,
  mcpTool: null,
  status: 200,
  errorCode: null,
  durationMs: 12.34,
  ttfbMs: Number.NaN,
  inputTokens: 25,
  outputTokens: null,
  cacheCreationTokens: 0,
  cacheReadTokens: null,
  cacheStatus: 'MISS',
  metadata: { team: 'search', 'naïve key': 'a\tb' },
  ...over,
});

/** The line without its own `time` (written when the line is) and the child's binding. */
const withoutTime = (line: Record<string, unknown>) => {
  const { time: _time, child: _child, ...rest } = line;
  return rest;
};

describe('the request log line', () => {
  it("is the JSON pino writes for the record's object, written by hand for the gateway's logger", () => {
    const { logger, lines, parsed } = capture();
    const extras = { target: 'claude', upstreamStatus: 200, upstreamMs: 8.123456, upstreamAttempts: 1 };
    logRequest(logger, record(), extras, true);
    // A child logger is not the gateway's own: pino serializes the object.
    logRequest(logger.child({ child: 1 }), record(), extras, true);
    expect(lines).toHaveLength(2);
    const [direct, throughPino] = parsed() as [Record<string, unknown>, Record<string, unknown>];
    expect(throughPino.child).toBe(1);
    expect(withoutTime(direct)).toEqual(withoutTime(throughPino));
    expect(Object.keys(withoutTime(direct))).toEqual(Object.keys(withoutTime(throughPino)));
    expect(direct).toMatchObject({
      level: 30,
      service: 'gateway',
      msg: 'request',
      startedAt: '2025-06-02T10:00:00.000Z',
      userId: 'u_"quoted"\\back',
      keyHint: '…7f3a',
      modelRequested: 'claude-\u2028line\u0000nul',
      ttfbMs: null,
      upstreamMs: 8.12,
      completed: true,
      metadata: { team: 'search', 'naïve key': 'a\tb' },
    });
    expect(direct).not.toHaveProperty('streamIdleTimeout');
    expect(lines[0]?.endsWith('}\n')).toBe(true);
  });

  it('redacts secret-named metadata keys as the logger does for any object one level down', () => {
    const { logger, lines, parsed } = capture();
    logRequest(logger, record({ metadata: { Token: 'tok-123', team: 'red' } }), {}, false);
    expect(parsed()[0]).toMatchObject({ metadata: { Token: '[redacted]', team: 'red' }, completed: false });
    expect(lines.join('')).not.toContain('tok-123');
  });

  it('writes nothing below the info level', () => {
    const { logger, lines } = capture('warn');
    logRequest(logger, record(), {}, true);
    expect(lines).toEqual([]);
  });
});
