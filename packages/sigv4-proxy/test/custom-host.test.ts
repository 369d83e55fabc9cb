import { inspect } from 'node:util';
import fc from 'fast-check';
import { resolveCustomHost, resolveIntegration, CustomHostNotAllowedError } from '../src';
import { CREDENTIALS, gatewayWith, integration, mockBedrock } from './support';

const kb = resolveIntegration({
  slug: 'kb',
  ...CREDENTIALS,
  region: 'eu-west-1',
  allowedHosts: ['http://127.0.0.1:9100', 'https://vpce-1.bedrock.example.com'],
});

describe('resolveCustomHost', () => {
  it.each([
    ['bedrock-agent.us-east-1.amazonaws.com', 'https://bedrock-agent.us-east-1.amazonaws.com', 'us-east-1'],
    [
      'bedrock-agent-runtime.eu-central-1.amazonaws.com',
      'https://bedrock-agent-runtime.eu-central-1.amazonaws.com',
      'eu-central-1',
    ],
    [
      'https://bedrock-agent-runtime-fips.us-gov-west-1.amazonaws.com',
      'https://bedrock-agent-runtime-fips.us-gov-west-1.amazonaws.com',
      'us-gov-west-1',
    ],
    [
      'https://bedrock-agent.cn-north-1.amazonaws.com.cn/',
      'https://bedrock-agent.cn-north-1.amazonaws.com.cn',
      'cn-north-1',
    ],
    ['BEDROCK-AGENT.US-EAST-1.AMAZONAWS.COM', 'https://bedrock-agent.us-east-1.amazonaws.com', 'us-east-1'],
    ['https://bedrock-agent.us-east-1.amazonaws.com:443', 'https://bedrock-agent.us-east-1.amazonaws.com', 'us-east-1'],
    ['http://127.0.0.1:9100', 'http://127.0.0.1:9100', 'eu-west-1'],
    // The URL parser normalises the address; the normalised origin is what is compared, signed and dialled.
    ['http://2130706433:9100', 'http://127.0.0.1:9100', 'eu-west-1'],
    ['https://vpce-1.bedrock.example.com', 'https://vpce-1.bedrock.example.com', 'eu-west-1'],
  ])('allows %s (dials %s, signs for %s)', (host, origin, region) => {
    const target = resolveCustomHost(host, kb);
    expect(target.origin.origin).toBe(origin);
    expect(target.region).toBe(region);
  });

  it.each([
    'http://bedrock-agent.us-east-1.amazonaws.com',
    'https://bedrock-agent.us-east-1.amazonaws.com:8443',
    'bedrock-agent.us-east-1.amazonaws.com.',
    'bedrock-agent.us-east-1.amazonaws.com.evil.com',
    'evil.com#.bedrock-agent.us-east-1.amazonaws.com',
    'evil.com?.bedrock-agent.us-east-1.amazonaws.com',
    'https://bedrock-agent.us-east-1.amazonaws.com@evil.com',
    'https://x@bedrock-agent.us-east-1.amazonaws.com',
    'https://bedrock-agent.us-east-1.amazonaws.com/path',
    'https://bedrock-agent.us-east-1.amazonaws.com?x=1',
    'https://bedrock-agent.us-east-1.amazonaws.com\\@evil.com',
    'bedrock-agent.us_east_1.amazonaws.com',
    'bedrock-agent.useast1.amazonaws.com',
    'bedrock-runtime.us-east-1.amazonaws.com',
    's3.us-east-1.amazonaws.com',
    'bedrock-agent.us-east-1.amazonaws.com.cn.evil.com',
    'xbedrock-agent.us-east-1.amazonaws.com',
    'http://127.0.0.1:9101',
    'https://127.0.0.1:9100',
    'http://127.0.0.1:9100/x',
    'http://[::1]:9100',
    'file:///etc/passwd',
    'https://%62edrock-agent.us-east-1.amazonaws.com.evil.com',
    '',
    'bedrock-agent.us-east-1.amazonaws.com evil.com',
  ])('refuses %s', (host) => {
    expect(() => resolveCustomHost(host, kb)).toThrow(CustomHostNotAllowedError);
  });

  it('never allows a host outside the Bedrock agent pattern or the allowed origins (property)', () => {
    fc.assert(
      fc.property(fc.webUrl({ withFragments: true, withQueryParameters: true }), (url) => {
        let target;
        try {
          target = resolveCustomHost(url, kb);
        } catch (error) {
          expect(error).toBeInstanceOf(CustomHostNotAllowedError);
          return;
        }
        const allowed =
          kb.allowedOrigins.has(target.origin.origin) ||
          (target.origin.protocol === 'https:' &&
            target.origin.port === '' &&
            /^bedrock-agent(-runtime)?(-fips)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(target.origin.hostname));
        expect(allowed).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps the signed host and the dialled host the same string (property over host spellings)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('bedrock-agent', 'bedrock-agent-runtime', 'bedrock-agent-runtime-fips'),
        fc.constantFrom('us-east-1', 'ap-southeast-2', 'eu-west-3'),
        fc.boolean(),
        (service, region, upper) => {
          const host = `${service}.${region}.amazonaws.com`;
          const target = resolveCustomHost(upper ? host.toUpperCase() : host, kb);
          expect(target.origin.host).toBe(host);
          expect(target.region).toBe(region);
        },
      ),
    );
  });
});

describe('every route that ends in a signed call goes through the host check', () => {
  it.each(['GET', 'PUT', 'POST', 'DELETE', 'PATCH'])(
    '%s on any path with a refused host is never dialled',
    async (method) => {
      const bedrock = await mockBedrock((_req, res) => res.end('{}'));
      const gateway = await gatewayWith({ integrations: [integration(bedrock.origin)] });
      for (const path of [
        '/v1/knowledgebases/',
        '/v1/knowledgebases/KB1/retrieve',
        '/v1/agents/A/agentAliases/B/sessions/C/text',
        '/v1/x/y/z?q=1',
        '/v1/',
      ]) {
        for (const host of [
          '127.0.0.1:' + new URL(bedrock.origin).port,
          `https://127.0.0.1:${new URL(bedrock.origin).port}`,
          'evil.example.com',
        ]) {
          const response = await fetch(`${gateway.origin}${path}`, {
            method,
            headers: { 'x-gateway-provider': '@kb', 'x-gateway-custom-host': host },
            body: method === 'GET' ? undefined : '{}',
          });
          expect(response.status).toBe(400);
          expect(((await response.json()) as { error: { code: string } }).error.code).toBe('custom_host_not_allowed');
        }
      }
      expect(bedrock.connections()).toBe(0);
      await gateway.close();
      await bedrock.close();
    },
  );
});

describe('integration options', () => {
  it.each([
    [{ region: 'us-east' }, 'region must be an AWS region'],
    [{ allowedHosts: ['http://127.0.0.1:9100/path'] }, 'must be an origin only'],
    [{ allowedHosts: ['not a url'] }, 'must be an origin such as'],
    [{ secretAccessKey: '' }, 'secretAccessKey must be a non-empty string'],
  ])('refuses %j when the factory is called', (patch, message) => {
    expect(() => resolveIntegration({ slug: 'kb', ...CREDENTIALS, region: 'us-east-1', ...patch })).toThrow(message);
  });

  it('never prints the secret access key or session token', () => {
    const printed = [String(kb.secretAccessKey), JSON.stringify(kb), inspect(kb)].join('\n');
    expect(printed).not.toContain(CREDENTIALS.secretAccessKey);
    expect(printed).not.toContain(CREDENTIALS.sessionToken);
  });
});
