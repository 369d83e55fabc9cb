/**
 * Client ID metadata documents fetched from real http and https servers of the test on
 * 127.0.0.1 (the https one with a self-signed certificate made by openssl for this run).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ClientMetadataCache,
  ClientMetadataError,
  fetchClientMetadata,
  isForbiddenClientAddress,
  redirectUriAllowed,
  type FetchClientMetadataOptions,
  usableAddresses,
  type ResolvedAddress,
} from '../src';

type Handler = (req: IncomingMessage, res: ServerResponse, origin: string) => void;

/** An http or https server on 127.0.0.1 whose paths answer as the test says, counting requests. */
interface DocumentServer {
  origin: string;
  routes: Map<string, Handler>;
  hits: Map<string, number>;
  server: Server;
}

const servers: (Server | NetServer)[] = [];
const sockets = new Set<Socket>();
let tlsDir: string;
let certificate: Buffer;
let http: DocumentServer;
let https: DocumentServer;

function listen(server: Server, scheme: 'http' | 'https'): Promise<DocumentServer> {
  const routes = new Map<string, Handler>();
  const hits = new Map<string, number>();
  servers.push(server);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      const origin = `${scheme}://127.0.0.1:${port}`;
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        const path = req.url ?? '/';
        hits.set(path, (hits.get(path) ?? 0) + 1);
        const handler = routes.get(path);
        if (handler) handler(req, res, origin);
        else res.writeHead(404).end();
      });
      resolve({ origin, routes, hits, server });
    }),
  );
}

function json(body: unknown, headers: Record<string, string> = {}): Handler {
  return (_req, res) => {
    const text = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };
}

/** A document that is right for the URL it is served at. */
function documentFor(clientId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: 'Test client',
    redirect_uris: ['http://127.0.0.1/callback', 'https://app.example.com/oauth/callback'],
    ...extra,
  };
}

/** Serves the right document at `path` and returns its client_id. */
function serveDocument(
  target: DocumentServer,
  path: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): string {
  const clientId = `${target.origin}${path}`;
  target.routes.set(path, json(documentFor(clientId, extra), headers));
  return clientId;
}

async function refusal(promise: Promise<unknown>): Promise<ClientMetadataError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ClientMetadataError);
  expect((err as ClientMetadataError).status).toBe(400);
  return err as ClientMetadataError;
}

/** A lookup that answers `addresses` and counts its calls. */
function fixedLookup(...addresses: string[]): FetchClientMetadataOptions['lookup'] & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (host: string): Promise<ResolvedAddress[]> => {
    calls.push(host);
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(lookup, { calls });
}

beforeAll(async () => {
  tlsDir = mkdtempSync(join(tmpdir(), 'client-metadata-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(tlsDir, 'key.pem'),
      '-out',
      join(tlsDir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  certificate = readFileSync(join(tlsDir, 'cert.pem'));
  http = await listen(createHttpServer(), 'http');
  https = await listen(createHttpsServer({ key: readFileSync(join(tlsDir, 'key.pem')), cert: certificate }), 'https');
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  rmSync(tlsDir, { recursive: true, force: true });
});

describe('fetchClientMetadata over https', () => {
  it('fetches and checks a document from an allowed https origin', async () => {
    const clientId = serveDocument(https, '/clients/good.json');
    const document = await fetchClientMetadata(clientId, {
      allowedClientHosts: [https.origin],
      ca: certificate,
      cache: false,
    });
    expect(document).toMatchObject({ client_id: clientId, client_name: 'Test client' });
    expect(document.redirect_uris).toEqual(['http://127.0.0.1/callback', 'https://app.example.com/oauth/callback']);
  });

  it('refuses a loopback https host that is not listed, without sending it a request', async () => {
    const clientId = serveDocument(https, '/clients/unlisted.json');
    const err = await refusal(fetchClientMetadata(clientId, { ca: certificate, cache: false }));
    expect(err.code).toBe('client_metadata_forbidden_address');
    expect(https.hits.get('/clients/unlisted.json')).toBeUndefined();
  });

  it('refuses an https certificate the gateway does not trust', async () => {
    const clientId = serveDocument(https, '/clients/untrusted.json');
    const err = await refusal(fetchClientMetadata(clientId, { allowedClientHosts: [https.origin], cache: false }));
    expect(err.code).toBe('client_metadata_unreachable');
  });
});

describe('fetchClientMetadata rules', () => {
  it('refuses an http client_id unless its origin is listed', async () => {
    const clientId = serveDocument(http, '/clients/plain.json');
    expect((await refusal(fetchClientMetadata(clientId, { cache: false }))).code).toBe('client_id_invalid');
    expect(http.hits.get('/clients/plain.json')).toBeUndefined();
    await expect(
      fetchClientMetadata(clientId, { allowedClientHosts: [http.origin], cache: false }),
    ).resolves.toMatchObject({ client_id: clientId });
  });

  it('refuses a document whose client_id is not exactly its URL', async () => {
    const path = '/clients/other.json';
    const clientId = `${http.origin}${path}`;
    const options = { allowedClientHosts: [http.origin], cache: false } as const;
    for (const other of [
      `${clientId}/`,
      `${http.origin}/clients/OTHER.json`,
      `https://app.example.com${path}`,
      undefined,
    ]) {
      http.routes.set(path, json(documentFor(clientId, { client_id: other })));
      expect((await refusal(fetchClientMetadata(clientId, options))).code).toBe('client_id_mismatch');
    }
  });

  it('refuses a redirect and never follows it', async () => {
    serveDocument(http, '/clients/target.json');
    http.routes.set('/clients/moved.json', (_req, res, origin) => {
      res.writeHead(302, { location: `${origin}/clients/target.json` }).end();
    });
    for (const status of [301, 302, 303, 307, 308]) {
      http.routes.set('/clients/moved.json', (_req, res, origin) =>
        res.writeHead(status, { location: `${origin}/clients/target.json` }).end(),
      );
      const err = await refusal(
        fetchClientMetadata(`${http.origin}/clients/moved.json`, { allowedClientHosts: [http.origin], cache: false }),
      );
      expect(err.code).toBe('client_metadata_redirect');
    }
    expect(http.hits.get('/clients/target.json')).toBeUndefined();
  });

  it('refuses a document over the size limit that says so in content-length, before reading it', async () => {
    const clientId = serveDocument(http, '/clients/big.json', { padding: 'x'.repeat(70_000) });
    const err = await refusal(fetchClientMetadata(clientId, { allowedClientHosts: [http.origin], cache: false }));
    expect(err.code).toBe('client_metadata_too_large');
    // Declares 70,000 bytes and sends almost none: refused on the header, not after the deadline.
    http.routes.set('/clients/declared.json', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '70000' });
      res.write('{');
    });
    const started = Date.now();
    const declared = await refusal(
      fetchClientMetadata(`${http.origin}/clients/declared.json`, {
        allowedClientHosts: [http.origin],
        timeoutMs: 2000,
        cache: false,
      }),
    );
    expect(declared.code).toBe('client_metadata_too_large');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('counts the bytes while reading: a chunked body without content-length is cut at the limit', async () => {
    let written = 0;
    let closedEarly = false;
    http.routes.set('/clients/endless.json', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.on('close', () => (closedEarly = !res.writableFinished));
      const chunk = Buffer.alloc(16_384, 0x20);
      const pump = () => {
        while (written < 20_000_000 && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const err = await refusal(
      fetchClientMetadata(`${http.origin}/clients/endless.json`, {
        allowedClientHosts: [http.origin],
        maxBytes: 65_536,
        cache: false,
      }),
    );
    expect(err.code).toBe('client_metadata_too_large');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closedEarly).toBe(true);
    expect(written).toBeLessThan(20_000_000);
  });

  it('counts the bytes while reading: a content-length that lies low does not let more through, one that is absent (read to close) is counted', async () => {
    // A raw server: declares nothing and streams until the gateway hangs up.
    const raw = createNetServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n');
        const filler = Buffer.alloc(8192, 0x20);
        const timer = setInterval(() => {
          if (socket.destroyed) clearInterval(timer);
          else socket.write(filler);
        }, 1);
        socket.on('close', () => clearInterval(timer));
      });
    });
    servers.push(raw);
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(raw.address() as { port: number }).port}`;
    const err = await refusal(
      fetchClientMetadata(`${origin}/client.json`, { allowedClientHosts: [origin], maxBytes: 32_768, cache: false }),
    );
    expect(err.code).toBe('client_metadata_too_large');

    // content-length 20 for a 70 KB document: only the declared 20 bytes are read (and are not JSON).
    const clientId = `${http.origin}/clients/liar.json`;
    http.routes.set('/clients/liar.json', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '20' });
      res.socket?.write(JSON.stringify(documentFor(clientId, { padding: 'x'.repeat(70_000) })));
      res.socket?.end();
    });
    const liar = await refusal(fetchClientMetadata(clientId, { allowedClientHosts: [http.origin], cache: false }));
    expect(['client_metadata_invalid', 'client_metadata_unreachable']).toContain(liar.code);
  });

  it.each([
    ['never answers', (_req: IncomingMessage, _res: ServerResponse) => undefined],
    [
      'trickles its body slower than the deadline',
      (_req: IncomingMessage, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(' ');
        const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 50);
        res.on('close', () => clearInterval(timer));
      },
    ],
  ])('gives up within the timeout on a server that %s', async (name, handler) => {
    const path = `/clients/slow-${name.length}.json`;
    http.routes.set(path, handler);
    const started = Date.now();
    const guard = new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 3 s')), 3000).unref());
    const err = await refusal(
      Promise.race([
        fetchClientMetadata(`${http.origin}${path}`, {
          allowedClientHosts: [http.origin],
          timeoutMs: 400,
          cache: false,
        }),
        guard,
      ]),
    );
    expect(err.code).toBe('client_metadata_unreachable');
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('refuses answers that are not a JSON client document', async () => {
    const options = { allowedClientHosts: [http.origin], cache: false } as const;
    const cases: [string, Handler, string][] = [
      [
        'html',
        (_q, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'),
        'client_metadata_invalid',
      ],
      [
        'broken',
        (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"client_id":'),
        'client_metadata_invalid',
      ],
      [
        'array',
        (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('[]'),
        'client_metadata_invalid',
      ],
      ['missing', (_q, res) => res.writeHead(404).end(), 'client_metadata_unreachable'],
    ];
    for (const [name, handler, code] of cases) {
      http.routes.set(`/clients/${name}.json`, handler);
      expect((await refusal(fetchClientMetadata(`${http.origin}/clients/${name}.json`, options))).code).toBe(code);
    }
    const bad: Record<string, unknown>[] = [
      { redirect_uris: undefined },
      { redirect_uris: [] },
      { redirect_uris: ['http://app.example.com/callback'] },
      { redirect_uris: ['https://app.example.com/callback#x'] },
      { redirect_uris: ['javascript:alert(1)'] },
      { client_secret: 'shh' },
      { token_endpoint_auth_method: 'client_secret_basic' },
      { client_name: 42 },
    ];
    for (const [i, extra] of bad.entries()) {
      const clientId = serveDocument(http, `/clients/bad-${i}.json`, extra);
      expect([i, (await refusal(fetchClientMetadata(clientId, options))).code]).toEqual([i, 'client_metadata_invalid']);
    }
  });

  it.each([
    ['a fragment', 'https://app.example.com/client.json#x'],
    ['a user name', 'https://user@app.example.com/client.json'],
    ['a dot segment', 'https://app.example.com/a/../client.json'],
    ['no path', 'https://app.example.com'],
    ['only the root path', 'https://app.example.com/'],
    ['an upper-case host', 'https://APP.example.com/client.json'],
    ['not a URL', 'my-client'],
    ['another scheme', 'ftp://app.example.com/client.json'],
  ])('refuses a client_id with %s before any lookup', async (_name, clientId) => {
    const lookup = fixedLookup('127.0.0.1');
    expect((await refusal(fetchClientMetadata(clientId, { lookup, cache: false }))).code).toBe('client_id_invalid');
    expect(lookup.calls).toEqual([]);
  });
});

// Every address these tests resolve to is on this machine (127.0.0.0/8, ::1): a check that
// failed would connect here, never to another network.
describe('fetchClientMetadata addresses', () => {
  /** A client_id on a name that the test's lookup resolves to the https server's port. */
  function onTestName(path: string): string {
    const { port } = https.server.address() as { port: number };
    serveDocument(https, path);
    return `https://doc.test:${port}${path}`;
  }

  it.each([['127.0.0.1'], ['::1'], ['127.0.0.1', '::1']])(
    'refuses a host name that resolves to a loopback address (%s) when its origin is not listed, without a request',
    async (...answer) => {
      const clientId = onTestName('/clients/loopback-name.json');
      const lookup = fixedLookup(...answer);
      const err = await refusal(fetchClientMetadata(clientId, { lookup, ca: certificate, cache: false }));
      expect(err.code).toBe('client_metadata_forbidden_address');
      expect(lookup.calls).toEqual(['doc.test']);
      expect(https.hits.get('/clients/loopback-name.json')).toBeUndefined();
    },
  );

  // Decided on the answer alone, with no request: a check that failed here must not connect to
  // the public address of the answer.
  it('refuses a DNS answer that mixes a public and a private address', () => {
    for (const answer of [
      ['127.0.0.1', '93.184.216.34'],
      ['93.184.216.34', '10.0.0.5'],
      ['2606:2800:220:1::1', 'fd00:ec2::254'],
    ]) {
      const resolved = answer.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
      expect(usableAddresses(resolved, false)).toBeUndefined();
      expect(usableAddresses(resolved, true)).toEqual(resolved);
    }
    expect(usableAddresses([{ address: '93.184.216.34', family: 4 }], false)).toEqual([
      { address: '93.184.216.34', family: 4 },
    ]);
  });

  it('refuses the cloud metadata host by name, before any lookup', async () => {
    const lookup = fixedLookup('127.0.0.1');
    for (const clientId of [
      'https://metadata.google.internal/computeMetadata/v1/',
      'https://metadata.google.internal./computeMetadata/v1/',
    ]) {
      expect((await refusal(fetchClientMetadata(clientId, { lookup, cache: false }))).code).toBe(
        'client_metadata_forbidden_address',
      );
    }
    expect(lookup.calls).toEqual([]);
  });

  it.each([
    '10.0.0.5',
    '172.16.3.4',
    '192.168.1.1',
    '100.64.0.1',
    '100.127.255.255',
    '127.0.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '::1',
    '::',
    'fd00:ec2::254',
    'fc00::1',
    'fe80::1',
    'fe80::1%eth0',
    '::ffff:192.168.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a00:1',
    '2002:a00:1::',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    'ff02::1',
    '2001:db8::1',
    'not-an-ip',
  ])('classifies %s as an address never fetched', (address) => {
    expect(isForbiddenClientAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '93.184.216.34',
    '100.128.0.1',
    '172.32.0.1',
    '172.15.255.255',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ])('classifies %s as a public address', (address) => {
    expect(isForbiddenClientAddress(address)).toBe(false);
  });

  it('connects to the address it checked: an allowed host name resolved once, a second answer never used', async () => {
    const { port } = http.server.address() as { port: number };
    const origin = `http://client.test:${port}`;
    const clientId = `${origin}/clients/pinned.json`;
    http.routes.set('/clients/pinned.json', json(documentFor(clientId)));
    const calls: string[] = [];
    // The first answer is the server; any later one (a rebinding) points where nothing listens.
    const lookup = async (host: string): Promise<ResolvedAddress[]> => {
      calls.push(host);
      return [{ address: calls.length === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    };
    await expect(
      fetchClientMetadata(clientId, { allowedClientHosts: [origin], lookup, cache: false }),
    ).resolves.toMatchObject({ client_id: clientId });
    expect(calls).toEqual(['client.test']);
  });
});

describe('redirectUriAllowed', () => {
  const document = {
    redirect_uris: [
      'https://app.example.com/oauth/callback',
      'http://127.0.0.1/callback',
      'http://[::1]:3000/cb',
      'http://localhost:8080/done?x=1',
    ],
  };

  it('matches a redirect URI exactly', () => {
    expect(redirectUriAllowed(document, 'https://app.example.com/oauth/callback')).toBe(true);
    for (const near of [
      'https://app.example.com/oauth/callback/',
      'https://app.example.com/oauth/callback?x=1',
      'https://app.example.com/oauth/callbackx',
      'https://app.example.com:8443/oauth/callback',
      'https://APP.example.com/oauth/callback',
      'http://app.example.com/oauth/callback',
      'https://app.example.com/oauth/callback#f',
      'https://evil.example/oauth/callback',
    ])
      expect([near, redirectUriAllowed(document, near)]).toEqual([near, false]);
  });

  it('allows any port for a loopback http redirect URI (RFC 8252), and nothing else about it', () => {
    for (const ok of [
      'http://127.0.0.1:51234/callback',
      'http://127.0.0.1/callback',
      'http://[::1]:41000/cb',
      'http://localhost:1/done?x=1',
    ])
      expect([ok, redirectUriAllowed(document, ok)]).toEqual([ok, true]);
    for (const bad of [
      'http://127.0.0.1:51234/callback/x',
      'http://127.0.0.2:51234/callback',
      'http://localhost:51234/callback',
      'https://127.0.0.1:51234/callback',
      'http://localhost:1/done?x=2',
      'http://127.0.0.1:51234/callback#a',
    ])
      expect([bad, redirectUriAllowed(document, bad)]).toEqual([bad, false]);
  });
});

describe('fetchClientMetadata cache', () => {
  it('keeps a document for its max-age and fetches again after it', async () => {
    const cache = new ClientMetadataCache();
    const clientId = serveDocument(http, '/clients/cached.json', {}, { 'cache-control': 'max-age=30' });
    const options = { allowedClientHosts: [http.origin], cache };
    await fetchClientMetadata(clientId, options);
    await fetchClientMetadata(clientId, options);
    expect(http.hits.get('/clients/cached.json')).toBe(1);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 31_000);
    try {
      await fetchClientMetadata(clientId, options);
    } finally {
      clock.mockRestore();
    }
    expect(http.hits.get('/clients/cached.json')).toBe(2);
  });

  it('keeps nothing marked no-store, at most 5 minutes of a long max-age, and a bounded number of documents', async () => {
    const cache = new ClientMetadataCache(2);
    const options = { allowedClientHosts: [http.origin], cache };
    const noStore = serveDocument(http, '/clients/no-store.json', {}, { 'cache-control': 'no-store' });
    await fetchClientMetadata(noStore, options);
    await fetchClientMetadata(noStore, options);
    expect(http.hits.get('/clients/no-store.json')).toBe(2);

    const long = serveDocument(http, '/clients/long.json', {}, { 'cache-control': 'public, max-age=86400' });
    await fetchClientMetadata(long, options);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 301_000);
    try {
      await fetchClientMetadata(long, options);
    } finally {
      clock.mockRestore();
    }
    expect(http.hits.get('/clients/long.json')).toBe(2);

    for (const n of [1, 2, 3]) await fetchClientMetadata(serveDocument(http, `/clients/many-${n}.json`), options);
    expect(cache.size).toBe(2);
  });

  it('does not hand a document fetched under a wider allowed list to a caller with a narrower one', async () => {
    const cache = new ClientMetadataCache();
    const clientId = serveDocument(https, '/clients/scoped.json');
    await fetchClientMetadata(clientId, { allowedClientHosts: [https.origin], ca: certificate, cache });
    expect((await refusal(fetchClientMetadata(clientId, { ca: certificate, cache }))).code).toBe(
      'client_metadata_forbidden_address',
    );
    expect(https.hits.get('/clients/scoped.json')).toBe(1);
  });
});

describe('fetchClientMetadata under load', () => {
  it('keeps a refusal for 30 seconds: one bad client_id repeated makes one fetch', async () => {
    const cache = new ClientMetadataCache();
    const options = { allowedClientHosts: [http.origin], cache };
    const missing = `${http.origin}/clients/refused-once.json`;
    for (let i = 0; i < 5; i++) await refusal(fetchClientMetadata(missing, options));
    expect(http.hits.get('/clients/refused-once.json')).toBe(1);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 31_000);
    try {
      await refusal(fetchClientMetadata(missing, options));
    } finally {
      clock.mockRestore();
    }
    expect(http.hits.get('/clients/refused-once.json')).toBe(2);
  });

  it('fetches a document once however many requests name it at the same time', async () => {
    const cache = new ClientMetadataCache();
    const clientId = `${http.origin}/clients/slow-once.json`;
    http.routes.set('/clients/slow-once.json', (req, res, origin) =>
      setTimeout(() => json(documentFor(`${origin}/clients/slow-once.json`))(req, res, origin), 200),
    );
    const options = { allowedClientHosts: [http.origin], cache };
    const documents = await Promise.all(Array.from({ length: 20 }, () => fetchClientMetadata(clientId, options)));
    expect(documents.every((d) => d.client_id === clientId)).toBe(true);
    expect(http.hits.get('/clients/slow-once.json')).toBe(1);
  });

  it('fetches at most maxConcurrentFetches documents at once; past it a new one is refused client_metadata_busy', async () => {
    const cache = new ClientMetadataCache(1000, 3);
    let open = 0;
    let mostOpen = 0;
    for (let n = 0; n < 10; n++)
      http.routes.set(`/clients/slow-${n}.json`, (req, res, origin) => {
        open++;
        mostOpen = Math.max(mostOpen, open);
        setTimeout(() => {
          open--;
          json(documentFor(`${origin}/clients/slow-${n}.json`))(req, res, origin);
        }, 300);
      });
    const options = { allowedClientHosts: [http.origin], cache };
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, n) => fetchClientMetadata(`${http.origin}/clients/slow-${n}.json`, options)),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
    for (const outcome of outcomes.filter((o) => o.status === 'rejected'))
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'client_metadata_busy' });
    expect(mostOpen).toBeLessThanOrEqual(3);
    expect(cache.fetching).toBe(0);
    expect(() => new ClientMetadataCache(10, 0)).toThrow(/maxConcurrentFetches/);
  });
});

describe('fetchClientMetadata options', () => {
  it.each<[string, FetchClientMetadataOptions, RegExp]>([
    ['an allowed host with a path', { allowedClientHosts: ['http://127.0.0.1:8080/'] }, /entries are origins/],
    ['an allowed host without a scheme', { allowedClientHosts: ['127.0.0.1:8080'] }, /entries are origins/],
    ['a timeout in seconds given as a fraction', { timeoutMs: 0.5 }, /`timeoutMs` must be a whole number/],
    ['a size limit of zero', { maxBytes: 0 }, /`maxBytes` must be a whole number/],
  ])('refuses %s with a message that says what to write', async (_name, options, message) => {
    // The lookup keeps even a broken check on this machine.
    const lookup = fixedLookup('127.0.0.1');
    await expect(fetchClientMetadata('https://app.example.com/client.json', { ...options, lookup })).rejects.toThrow(
      message,
    );
  });
});
