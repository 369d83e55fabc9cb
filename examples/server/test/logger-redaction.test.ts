import { Writable } from 'node:stream';
import { createLogger } from '../src/observability/logger';

/** A logger writing into an array, and the lines it wrote. */
function capture() {
  const lines: string[] = [];
  const logger = createLogger(
    'info',
    new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }),
  );
  return { logger, lines };
}

describe('the redacting logger: API keys, cookies and session tokens', () => {
  it.each([
    ['x-api-key', 'sk-ant-api-key-0001'],
    ['X-Api-Key', 'sk-ant-api-key-0002'],
    ['x-gateway-api-key', 'gw-gateway-key-0003'],
    ['X-Gateway-Api-Key', 'gw-gateway-key-0004'],
    ['cookie', 'session=cookie-value-0005'],
    ['Cookie', 'session=cookie-value-0006'],
    ['sessionToken', 'aws-session-token-0007'],
    ['SessionToken', 'aws-session-token-0008'],
  ])('never writes %s, at the top level or one level down', (field, secret) => {
    const { logger, lines } = capture();
    logger.info({ [field]: secret, route: 'chat' }, 'top level');
    logger.info({ headers: { [field]: `${secret}-nested`, accept: 'application/json' }, route: 'mcp' }, 'nested');
    expect(lines).toHaveLength(2);
    const [top, nested] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(top).toMatchObject({ [field]: '[redacted]', route: 'chat', msg: 'top level' });
    expect(nested).toMatchObject({
      headers: { [field]: '[redacted]', accept: 'application/json' },
      route: 'mcp',
      msg: 'nested',
    });
    expect(lines.join('')).not.toContain(secret);
  });

  it('redacts every secret of one request log line together and keeps the rest', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        headers: {
          'x-api-key': 'sk-a',
          'x-gateway-api-key': 'gw-b',
          cookie: 'c=d',
          'user-agent': 'openai-node',
        },
        integration: { sessionToken: 'st-e', accessKeyId: 'AKIA-visible', region: 'eu-west-2' },
        sessionToken: 'st-f',
        status: 200,
      },
      'request',
    );
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      headers: {
        'x-api-key': '[redacted]',
        'x-gateway-api-key': '[redacted]',
        cookie: '[redacted]',
        'user-agent': 'openai-node',
      },
      integration: { sessionToken: '[redacted]', accessKeyId: 'AKIA-visible', region: 'eu-west-2' },
      sessionToken: '[redacted]',
      status: 200,
    });
    expect(lines.join('')).not.toMatch(/sk-a|gw-b|c=d|st-e|st-f/);
  });
});
