import { Writable } from 'node:stream';
import { createLogger, redactSecrets } from '../src/observability/logger';

describe('the redacting logger', () => {
  it('never writes secret-named fields, at the top level or one level down', () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }),
    );
    logger.info(
      { apiKey: 'sk-1', headers: { Authorization: 'Bearer t-2', accept: 'x' }, secretAccessKey: 's-3', route: 'chat' },
      'request',
    );
    const line = JSON.parse(lines[0] as string);
    expect(line).toMatchObject({
      apiKey: '[redacted]',
      headers: { Authorization: '[redacted]', accept: 'x' },
      secretAccessKey: '[redacted]',
      route: 'chat',
    });
    expect(lines.join('')).not.toMatch(/sk-1|t-2|s-3/);
  });

  it('returns objects without secrets unchanged', () => {
    const object = { route: 'mcp', status: 200 };
    expect(redactSecrets(object)).toBe(object);
  });
});
