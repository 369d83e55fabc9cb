/**
 * Secrets are write-only (CONTRACT section 8): a change that moves where a record sends its secrets
 * (a routing field of `SECRET_HOLDERS`) must give every secret again, or is refused
 * `400 invalid_request` naming the first one missing. Walked, as an `operator` of the admin API
 * (an identity-provider token whose claim maps to that role), over every record shape that holds a
 * secret and every routing field of it, taken from the catalog's own definition, with a real
 * capturing server on 127.0.0.1 as the attacker's host and a real call through the gateway after
 * each change: the original secrets never reach it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SECRET_HOLDERS, type SecretHolder } from '@gw/catalog';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { CookieJar, freePort } from '../oauth/oauth-support';
import { startIdentityProvider, type TestIdentityProvider } from '../mcp-2026/idp';
import { adminClient, newAdminKey, newEncryptionKey, within } from './catalog-support';

jest.setTimeout(120_000);

const KEY = 'gw-secrets-routing-caller-01';

/** A real HTTP server that answers every request with 200 JSON and keeps each request's text (line, headers, body). */
interface CapturingServer {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

async function startCapturingServer(): Promise<CapturingServer> {
  const requests: string[] = [];
  let url = '';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push(`${req.method} ${req.url}\n${JSON.stringify(req.headers)}\n${Buffer.concat(chunks).toString()}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/.well-known/openid-configuration') {
        // An OpenID Provider that takes the client secret in the body (client_secret_post), in clear.
        res.end(
          JSON.stringify({
            issuer: url,
            authorization_endpoint: `${url}/authorize`,
            token_endpoint: `${url}/token`,
            jwks_uri: `${url}/jwks`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
            code_challenge_methods_supported: ['S256'],
            token_endpoint_auth_methods_supported: ['client_secret_post'],
          }),
        );
        return;
      }
      res.end(JSON.stringify({ input_tokens: 1, retrievalResults: [] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** How the walk creates a record of one secret-holding shape, moves each routing field, and calls through it. */
interface Walk {
  /** The admin path of the records. */
  path: string;
  /** A new record's fields (without slug): its secrets and its routing fields pointing at `home`. */
  create(home: string, secrets: Record<string, string>): Record<string, unknown>;
  /** Per routing field: the change that points it at `attacker`. */
  routing: Record<string, (attacker: string) => Record<string, unknown>>;
  /** One real call through the gateway that uses the record (and its secrets) as a caller would. */
  call(gateway: string, slug: string, attacker: string): Promise<number>;
}

/** Every shape of `SECRET_HOLDERS` the operator writes through `/admin/v1/<kind>`, by `<kind>/<provider>`. */
const WALKS: Record<string, Walk> = {
  'providers/anthropic': {
    path: '/providers',
    create: (home, secrets) => ({ provider: 'anthropic', baseUrl: home, ...secrets }),
    routing: { baseUrl: (attacker) => ({ baseUrl: attacker }) },
    call: async (gateway, slug) =>
      (
        await fetch(`${gateway}/v1/messages/count_tokens`, {
          method: 'POST',
          headers: { 'x-api-key': KEY, 'x-gateway-provider': slug, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'ping' }] }),
        })
      ).status,
  },
  'providers/bedrock': {
    path: '/providers',
    create: (home, secrets) => ({ provider: 'bedrock', region: 'us-east-1', allowedHosts: [home], ...secrets }),
    routing: {
      region: () => ({ region: 'eu-west-3' }),
      allowedHosts: (attacker) => ({ allowedHosts: [attacker] }),
    },
    call: async (gateway, slug, attacker) =>
      (
        await fetch(`${gateway}/v1/knowledgebases/KB1/retrieve`, {
          method: 'POST',
          headers: {
            'x-api-key': KEY,
            'x-gateway-provider': slug,
            'x-gateway-custom-host': attacker,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ retrievalQuery: { text: 'q' } }),
        })
      ).status,
  },
};

/**
 * The `settings/oauth` record's routing fields: the `login` that points it at `issuer` with `secret`
 * (written with `PUT /admin/v1/oauth/settings`, an admin's route).
 */
const SETTINGS_WALKS: Record<string, (issuer: string, secret?: string) => Record<string, unknown>> = {
  'value.login.issuer': (issuer, secret) => ({
    login: {
      type: 'oidc',
      issuer,
      clientId: 'gateway-console',
      ...(secret === undefined ? {} : { clientSecret: secret }),
    },
  }),
};

/**
 * One console sign-in at the OpenID Provider of the OAuth settings, as far as the code exchange:
 * the gateway sends its client secret to that provider's token endpoint.
 */
async function consoleSignInExchange(gateway: string): Promise<void> {
  const jar = new CookieJar();
  const start = await fetch(`${gateway}/console/oidc/start`, { redirect: 'manual' });
  jar.take(start);
  const location = start.headers.get('location');
  if (start.status !== 303 || location === null) return;
  const state = new URL(location).searchParams.get('state') ?? '';
  const issuer = new URL(location).origin;
  const back = await fetch(
    `${gateway}/console/oidc/callback?code=stolen-code&state=${encodeURIComponent(state)}&iss=${encodeURIComponent(issuer)}`,
    { redirect: 'manual', headers: { cookie: jar.header() } },
  );
  await back.arrayBuffer();
}

/**
 * An MCP server's `upstream_auth` secrets (nested, and a map of header values), walked below: per
 * routing field, the change that points it at `attacker`, for a record whose secrets are `secrets`.
 */
const MCP_SERVER_WALKS: Record<string, (attacker: string) => Record<string, unknown>> = {
  url: (attacker) => ({ url: `${attacker}/mcp` }),
  'upstream_auth.type': () => ({ upstream_auth: { type: 'oauth', client: { client_id: 'gw' } } }),
  'upstream_auth.authorization_server': (attacker) => ({
    upstream_auth: { type: 'oauth', authorization_server: attacker, client: { client_id: 'gw' } },
  }),
  'upstream_auth.token_endpoint': (attacker) => ({
    upstream_auth: { type: 'token_exchange', token_endpoint: `${attacker}/token`, client: { client_id: 'gw' } },
  }),
  'upstream_auth.issuer': (attacker) => ({
    upstream_auth: { type: 'token_exchange', issuer: attacker, client: { client_id: 'gw' } },
  }),
};

/** The secret-holding shapes the admin API's record routes write (settings have their own routes, MCP servers their own walk, below). */
const RECORD_HOLDERS = SECRET_HOLDERS.filter((holder) => holder.kind !== 'settings' && holder.kind !== 'mcp-servers');
const nameOf = (holder: SecretHolder) => `${holder.kind}/${holder.provider ?? '*'}`;

let idp: TestIdentityProvider;
let home: CapturingServer;
let attacker: CapturingServer;
let gateway: RunningGateway;
let operator: ReturnType<typeof adminClient>;
let admin: ReturnType<typeof adminClient>;
const answers: string[] = [];

const adminKey = newAdminKey();

beforeAll(async () => {
  [idp, home, attacker] = await Promise.all([startIdentityProvider(), startCapturingServer(), startCapturingServer()]);
  const port = await freePort();
  gateway = await startGateway({
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    JWT_PRIVATE_KEY: rsaPem().privateKey,
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [{ key: KEY, user: { user_id: 'u-routing' } }],
        jwt_validation: { jwksUri: idp.jwksUri, issuer: idp.issuer, audience: 'gateway' },
      },
      adminRoles: { claim: 'roles', operator: ['gateway-operators'], admin: ['gateway-admins'] },
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  const token = idp.token({ sub: 'olivia', roles: ['gateway-operators'] });
  operator = adminClient(gateway.url, token, answers);
  admin = adminClient(gateway.url, adminKey, answers);
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([idp?.close(), home?.close(), attacker?.close()]);
});

describe('a change of where a record sends its secrets (as an operator)', () => {
  it('is declared for every shape that holds a secret, and walked for each', () => {
    expect(SECRET_HOLDERS.length).toBeGreaterThan(0);
    for (const holder of SECRET_HOLDERS) {
      expect([nameOf(holder), holder.routing.length > 0]).toEqual([nameOf(holder), true]);
      if (holder.kind === 'settings') {
        // Walked through the OAuth settings' own route, below.
        for (const field of holder.routing)
          expect([nameOf(holder), field, typeof SETTINGS_WALKS[field]]).toEqual([nameOf(holder), field, 'function']);
        continue;
      }
      if (holder.kind === 'mcp-servers') {
        // Walked with upstream_auth's nested secrets, below.
        for (const field of holder.routing)
          expect([nameOf(holder), field, typeof MCP_SERVER_WALKS[field]]).toEqual([nameOf(holder), field, 'function']);
        continue;
      }
      const walk = WALKS[`${holder.kind}/${holder.provider}`];
      // A new secret-holding shape needs a walk here (how to create it, move each routing field, call through it).
      expect([nameOf(holder), walk === undefined ? 'no walk' : 'walk']).toEqual([nameOf(holder), 'walk']);
      for (const field of holder.routing)
        expect([nameOf(holder), field, typeof walk?.routing[field]]).toEqual([nameOf(holder), field, 'function']);
    }
  });

  it('the operator credential is an operator: it writes records, not gateway settings', async () => {
    const settings = await operator('PUT', '/access/mode', { mode: 'report' });
    expect([settings.status, settings.body.error.code]).toEqual([403, 'role_forbidden']);
  });

  const cases = RECORD_HOLDERS.flatMap((holder) =>
    holder.routing.map((field) => [nameOf(holder), field, holder] as const),
  );
  it.each(cases)(
    '%s: moving %s needs every secret again; the old ones never reach the new host',
    async (_, field, holder) => {
      const walk = WALKS[`${holder.kind}/${holder.provider}`] as Walk;
      const slug = `r-${holder.provider}-${field}`.toLowerCase();
      const stamp = `${slug}-${Date.now()}`;
      const original = Object.fromEntries(holder.secrets.map((s) => [s, `ORIGINAL-${s}-${stamp}`]));
      const renewed = Object.fromEntries(holder.secrets.map((s) => [s, `RENEWED-${s}-${stamp}`]));
      const created = await operator('POST', walk.path, { slug, ...walk.create(home.url, original) });
      expect(created.status).toBe(201);
      const move = walk.routing[field]?.(attacker.url) as Record<string, unknown>;

      // The same value sent again is no change: no secret needed.
      const same = await operator('PATCH', `${walk.path}/${slug}`, {
        version: 1,
        [field]: created.body[field],
        name: 'unchanged routing',
      });
      expect([same.status, same.body.version]).toEqual([200, 2]);

      // Without the secrets: a call after it sends no original secret to the attacker's host…
      const refused = await operator('PATCH', `${walk.path}/${slug}`, { version: 2, ...move });
      await walk.call(gateway.url, slug, attacker.url);
      for (const request of attacker.requests)
        for (const secret of Object.values(original)) expect(request).not.toContain(secret);
      // …because the change is refused, the first secret named, nothing changed.
      expect([refused.status, refused.body.error?.code, refused.body.error?.param]).toEqual([
        400,
        'invalid_request',
        holder.secrets[0],
      ]);
      expect(refused.body.error.message).toContain(`Changing ${field}`);
      expect(refused.body.error.message).toContain(`give ${holder.secrets.join(', ')} again`);
      expect((await operator('GET', `${walk.path}/${slug}`)).body.version).toBe(2);
      // All but one secret given: still refused, naming the one left out.
      if (holder.secrets.length > 1) {
        const { [holder.secrets.at(-1) as string]: _left, ...some } = renewed;
        const partial = await operator('PATCH', `${walk.path}/${slug}`, { version: 2, ...move, ...some });
        expect([partial.status, partial.body.error?.param]).toEqual([400, holder.secrets.at(-1)]);
      }

      // With every secret again: accepted, and the new host gets the new secrets, never the old ones.
      const accepted = await operator('PATCH', `${walk.path}/${slug}`, { version: 2, ...move, ...renewed });
      expect([accepted.status, accepted.body.version]).toEqual([200, 3]);
      const before = attacker.requests.length;
      const status = await walk.call(gateway.url, slug, attacker.url);
      for (const request of attacker.requests)
        for (const secret of Object.values(original)) expect(request).not.toContain(secret);
      // The capture is live: a routing field that moves the calls to the attacker's host shows the new secret there.
      if (JSON.stringify(move).includes(attacker.url)) {
        expect([status, attacker.requests.length > before]).toEqual([200, true]);
        expect(attacker.requests.slice(before).join('\n')).toContain(Object.values(renewed)[0]);
      }
      for (const text of answers)
        for (const secret of [...Object.values(original), ...Object.values(renewed)])
          expect(text).not.toContain(secret);
    },
  );
});

describe('a change of the OpenID Provider of the OAuth settings', () => {
  const walk = SETTINGS_WALKS['value.login.issuer'] as (issuer: string, secret?: string) => Record<string, unknown>;
  const original = `ORIGINAL-clientSecret-${Date.now()}`;
  const renewed = `RENEWED-clientSecret-${Date.now()}`;

  it('is a gateway setting: an operator may not make it', async () => {
    const refused = await operator('PUT', '/oauth/settings', walk(attacker.url, original));
    expect([refused.status, refused.body.error.code]).toEqual([403, 'role_forbidden']);
  });

  it('needs login.clientSecret again; the old one never reaches the new issuer', async () => {
    expect((await admin('PUT', '/oauth/settings', walk(home.url, original))).status).toBe(200);
    // The same issuer without the secret keeps the stored one.
    expect((await admin('PUT', '/oauth/settings', walk(home.url))).status).toBe(200);
    await consoleSignInExchange(gateway.url);
    // The capture is live: the home provider got the secret at its token endpoint.
    expect(home.requests.filter((r) => r.startsWith('POST /token')).join('\n')).toContain(original);

    const refused = await admin('PUT', '/oauth/settings', walk(attacker.url));
    await consoleSignInExchange(gateway.url);
    for (const request of attacker.requests) expect(request).not.toContain(original);
    expect([refused.status, refused.body.error?.code, refused.body.error?.param]).toEqual([
      400,
      'invalid_request',
      'login.clientSecret',
    ]);
    expect(refused.body.error.message).toContain('Changing login.issuer');

    expect((await admin('PUT', '/oauth/settings', walk(attacker.url, renewed))).status).toBe(200);
    await consoleSignInExchange(gateway.url);
    for (const request of attacker.requests) expect(request).not.toContain(original);
    expect(attacker.requests.filter((r) => r.startsWith('POST /token')).join('\n')).toContain(renewed);
    for (const text of answers) for (const secret of [original, renewed]) expect(text).not.toContain(secret);
    expect((await admin('DELETE', '/oauth/settings')).status).toBe(200);
  });
});

describe("a change of where an MCP server's upstream_auth sends its secrets (as an operator)", () => {
  /** POSTs a tools/list to the server `slug` as a caller: its upstream_auth goes with it. */
  const callMcp = async (slug: string) =>
    (
      await fetch(`${gateway.url}/mcp/${slug}`, {
        method: 'POST',
        headers: {
          'x-api-key': KEY,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
    ).status;

  it('static headers: moving url needs every header value again; the old ones never reach the new host', async () => {
    const stamp = Date.now();
    const original = `ORIGINAL-crm-${stamp}`;
    const renewed = `RENEWED-crm-${stamp}`;
    const created = await operator('POST', '/mcp-servers', {
      slug: 'r-static',
      url: `${home.url}/mcp`,
      upstream_auth: { type: 'static', headers: { 'x-crm-key': original } },
    });
    expect([created.status, created.body.error]).toEqual([201, undefined]);
    expect(created.body.upstream_auth.headers).toEqual({ 'x-crm-key': `…${original.slice(-4)}` });
    // The capture is live: the home server gets the header.
    await within(5_000, async () => (await callMcp('r-static')) === 200);
    expect(home.requests.join('\n')).toContain(original);

    const refused = await operator('PATCH', '/mcp-servers/r-static', { version: 1, url: `${attacker.url}/mcp` });
    expect([refused.status, refused.body.error?.code]).toEqual([400, 'invalid_request']);
    expect(refused.body.error.message).toContain('Changing url');
    await callMcp('r-static');
    expect(attacker.requests.join('\n')).not.toContain(original);

    const accepted = await operator('PATCH', '/mcp-servers/r-static', {
      version: 1,
      url: `${attacker.url}/mcp`,
      upstream_auth: { type: 'static', headers: { 'x-crm-key': renewed } },
    });
    expect([accepted.status, accepted.body.version]).toEqual([200, 2]);
    await within(5_000, async () => {
      await callMcp('r-static');
      return attacker.requests.join('\n').includes(renewed);
    });
    expect(attacker.requests.join('\n')).not.toContain(original);
  });

  it.each(Object.keys(MCP_SERVER_WALKS).filter((field) => field !== 'url'))(
    'a client secret: moving %s needs it again',
    async (field) => {
      const slug = `r-client-${field.split('.').pop()}`.replace(/_/g, '-');
      const secret = `ORIGINAL-client-secret-${Date.now()}`;
      const created = await operator('POST', '/mcp-servers', {
        slug,
        url: `${home.url}/mcp`,
        upstream_auth: { type: 'token_exchange', issuer: home.url, client: { client_id: 'gw', client_secret: secret } },
      });
      expect(created.status).toBe(201);
      const move = (MCP_SERVER_WALKS[field] as (attacker: string) => Record<string, unknown>)(attacker.url);
      const refused = await operator('PATCH', `/mcp-servers/${slug}`, { version: 1, ...move });
      expect([refused.status, refused.body.error?.code, refused.body.error?.param]).toEqual([
        400,
        'invalid_request',
        'upstream_auth.client.client_secret',
      ]);
      for (const text of answers) expect(text).not.toContain(secret);
    },
  );
});
