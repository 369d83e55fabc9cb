import { MAX_RECORDED_ERROR_MESSAGE, recordedErrorMessage } from '../src';

describe('recordedErrorMessage: what a request record keeps of an error message', () => {
  it('keeps an ordinary message as it is', () => {
    expect(recordedErrorMessage('The model claude-opus-4-1 is not enabled for @chosen.')).toBe(
      'The model claude-opus-4-1 is not enabled for @chosen.',
    );
    expect(recordedErrorMessage('')).toBeUndefined();
    expect(recordedErrorMessage(42)).toBeUndefined();
  });

  it.each([
    ['an Anthropic key', 'invalid x-api-key: sk-ant-api03-AbCdEfGh1234567890', 'sk-ant-api03-AbCdEfGh1234567890'],
    ['a bearer token', 'Authorization failed for Bearer abc.def-123456', 'abc.def-123456'],
    ['an AWS key id', 'The security token AKIAIOSFODNN7EXAMPLE is invalid', 'AKIAIOSFODNN7EXAMPLE'],
    ['a JWT', 'bad token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln', 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln'],
    ['a named secret', 'request had api_key=hunter2hunter2 in it', 'hunter2hunter2'],
    ['a long random string', `signature ${'Zx9'.repeat(12)} rejected`, 'Zx9'.repeat(12)],
  ])('redacts %s', (_what, message, secret) => {
    const kept = recordedErrorMessage(message) as string;
    expect(kept).not.toContain(secret);
    expect(kept).toContain('[redacted]');
  });

  it('is at most 500 characters, without control characters', () => {
    const kept = recordedErrorMessage(`line one\nline two\u0000 ${'word '.repeat(400)}`) as string;
    expect(kept.length).toBe(MAX_RECORDED_ERROR_MESSAGE);
    // eslint-disable-next-line no-control-regex -- control characters are what is checked
    expect(kept).not.toMatch(/[\u0000-\u001f]/);
  });
});
