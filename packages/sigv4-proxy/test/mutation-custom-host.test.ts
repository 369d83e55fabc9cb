import { CustomHostNotAllowedError, parseQuery, resolveCustomHost, resolveIntegration } from '../src';
import { CREDENTIALS } from './support';

const BEDROCK = 'bedrock-agent-runtime.us-east-1.amazonaws.com';
/** An allowed origin of exactly 512 characters, and one of 513. */
const origin512 = `https://${'a'.repeat(504)}`;
const origin513 = `https://${'b'.repeat(505)}`;

const kb = resolveIntegration({
  slug: 'kb',
  ...CREDENTIALS,
  region: 'eu-west-1',
  allowedHosts: ['http://127.0.0.1:9100', origin512, origin513],
});

const refused = (host: string) => () => resolveCustomHost(host, kb);

describe('resolveCustomHost, character by character', () => {
  it('tells the caller what to write instead', () => {
    expect(refused('evil.example')).toThrow(
      new CustomHostNotAllowedError(
        "The custom host is not allowed: use an https Bedrock agent endpoint such as bedrock-agent-runtime.us-east-1.amazonaws.com, or one of the integration's allowedHosts.",
      ),
    );
  });

  it('ignores surrounding spaces but refuses whitespace or a backslash the URL parser would drop or reinterpret', () => {
    expect(resolveCustomHost(`  ${BEDROCK}\t`, kb).origin.origin).toBe(`https://${BEDROCK}`);
    // WHATWG URL removes tabs and newlines inside the text and reads a backslash as "/".
    expect(refused('bedrock-agent-runtime.us-east-\n1.amazonaws.com')).toThrow(CustomHostNotAllowedError);
    expect(refused('bedrock-agent-runtime.us-east-1.amazon\taws.com')).toThrow(CustomHostNotAllowedError);
    expect(refused(`${BEDROCK}\\`)).toThrow(CustomHostNotAllowedError);
    expect(refused(`https://${BEDROCK}\\`)).toThrow(CustomHostNotAllowedError);
  });

  it('accepts 512 characters and refuses 513, even for an allowed origin', () => {
    expect(origin512).toHaveLength(512);
    expect(resolveCustomHost(origin512, kb)).toMatchObject({ region: 'eu-west-1' });
    expect(kb.allowedOrigins.has(origin513)).toBe(true);
    expect(refused(origin513)).toThrow(CustomHostNotAllowedError);
  });

  it('refuses an empty query, an empty fragment and empty userinfo, which the parsed URL no longer shows', () => {
    for (const host of [
      `${BEDROCK}?`,
      `https://${BEDROCK}/?`,
      `${BEDROCK}#`,
      `https://${BEDROCK}#`,
      `@${BEDROCK}`,
      `https://@${BEDROCK}`,
      `https://:@${BEDROCK}`,
      'http://127.0.0.1:9100?',
      'http://@127.0.0.1:9100',
    ]) {
      expect(refused(host)).toThrow(CustomHostNotAllowedError);
    }
  });
});

describe('parseQuery', () => {
  const plain = (query: string) => ({ ...parseQuery(query) });

  it('skips empty pairs instead of signing an empty parameter', () => {
    expect(plain('a=1&&b=2&')).toEqual({ a: '1', b: '2' });
    expect(plain('&')).toEqual({});
    expect(plain('')).toEqual({});
  });

  it('reads a name without "=" as a parameter with an empty value, and splits at the first "="', () => {
    expect(plain('flag')).toEqual({ flag: '' });
    expect(plain('flag&x=')).toEqual({ flag: '', x: '' });
    expect(plain('k=v=w')).toEqual({ k: 'v=w' });
    expect(plain('%41%3D=%42')).toEqual({ 'A=': 'B' });
  });

  it('keeps every value of a repeated parameter, in order', () => {
    expect(plain('a=1&a=2&a=3&b=x&a=4')).toEqual({ a: ['1', '2', '3', '4'], b: 'x' });
  });

  it('keeps undecodable percent escapes as they are', () => {
    expect(plain('a=%E0%A4%A&%ZZ=1')).toEqual({ a: '%E0%A4%A', '%ZZ': '1' });
  });
});
