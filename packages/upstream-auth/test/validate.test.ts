import { inspect } from 'node:util';
import { StaticHeaders, validateUpstreamAuth } from '../src';

const where = 'mcp_servers[0].upstream_auth';

describe('validateUpstreamAuth', () => {
  it('accepts the three types and copies only known fields', () => {
    expect(validateUpstreamAuth({ type: 'oauth', scopes: ['read', 'write'] }, where)).toEqual({
      type: 'oauth',
      scopes: ['read', 'write'],
    });
    expect(
      validateUpstreamAuth(
        {
          type: 'oauth',
          authorization_server: 'https://login.example.com',
          client: { client_id: 'gw', client_secret: 's' },
        },
        where,
      ),
    ).toEqual({
      type: 'oauth',
      authorization_server: 'https://login.example.com',
      client: { client_id: 'gw', client_secret: 's' },
    });
    expect(
      validateUpstreamAuth(
        { type: 'token_exchange', issuer: 'http://127.0.0.1:8080', client: { client_id: 'gw' } },
        where,
      ),
    ).toEqual({ type: 'token_exchange', issuer: 'http://127.0.0.1:8080', client: { client_id: 'gw' } });
    expect(validateUpstreamAuth({ type: 'static', headers: { Authorization: 'Bearer ${CRM_TOKEN}' } }, where)).toEqual({
      type: 'static',
      headers: { Authorization: 'Bearer ${CRM_TOKEN}' },
    });
  });

  it.each([
    [null, /must be an object with a "type"/],
    [{ type: 'basic' }, /"type" must be "oauth", "token_exchange" or "static"; received "basic"/],
    [{ type: 'oauth', scope: ['read'] }, /unknown field "scope"/],
    [{ type: 'oauth', scopes: 'read' }, /"scopes" must be a list/],
    [
      { type: 'oauth', authorization_server: 'http://login.example.com' },
      /"authorization_server" must be an https URL/,
    ],
    [{ type: 'oauth', authorization_server: 'https://u:p@login.example.com' }, /must be an https URL without user/],
    [{ type: 'oauth', client: { client_secret: 's' } }, /"client_id" must be a non-empty string/],
    [
      { type: 'oauth', client: { client_id: 'gw', token_endpoint_auth_method: 'client_secret_post' } },
      /needs a "client_secret"/,
    ],
    [{ type: 'oauth', client: { client_id: 'gw', token_endpoint_auth_method: 'private_key_jwt' } }, /must be one of/],
    [{ type: 'token_exchange' }, /"client" is required/],
    [
      { type: 'token_exchange', client: { client_id: 'gw' }, resource: 'not a url' },
      /"resource" must be an absolute URL/,
    ],
    [{ type: 'static', headers: {} }, /"headers" must be an object of at least one header/],
    [{ type: 'static', headers: { 'Bad Name': 'x' } }, /header name "Bad Name" is not allowed/],
    [{ type: 'static', headers: { Host: 'x' } }, /header name "Host" is not allowed/],
    [{ type: 'static', headers: { 'content-length': '1' } }, /not allowed/],
    [{ type: 'static', headers: { Connection: 'close' } }, /not allowed/],
    [{ type: 'static', headers: { 'Transfer-Encoding': 'chunked' } }, /not allowed/],
    [{ type: 'static', headers: { 'X-Key': 'a\r\nX-Injected: 1' } }, /without line breaks/],
    [{ type: 'static', headers: { 'X-Key': 'a', 'x-key': 'b' } }, /given twice/],
  ])('refuses %j, saying what to write', (value, message) => {
    expect(() => validateUpstreamAuth(value, where)).toThrow(TypeError);
    expect(() => validateUpstreamAuth(value, where)).toThrow(message);
    expect(() => validateUpstreamAuth(value, where)).toThrow(where);
  });
});

describe('StaticHeaders', () => {
  it('holds the validated map and never prints its values', () => {
    const headers = new StaticHeaders({ type: 'static', headers: { Authorization: 'Bearer crm-secret-1234' } });
    expect(headers.headers).toEqual({ Authorization: 'Bearer crm-secret-1234' });
    for (const printed of [JSON.stringify(headers), inspect(headers), String(headers)])
      expect(printed).not.toContain('crm-secret-1234');
    expect(() => new StaticHeaders({ type: 'static', headers: { Host: 'x' } })).toThrow(/not allowed/);
  });
});
