/**
 * Test helpers of @gw/upstream-auth: the real authorization server of
 * fixtures/upstream-authorization-server.mjs as a child process, and a "browser" that follows
 * its redirects with cookies up to the gateway's callback.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';

/** What the fixture prints once listening (see its header). */
export interface UpstreamAuthorizationServer {
  issuer: string;
  resourceUrl: string;
  resourceMetadataUrl: string;
  tokenEndpoint: string;
  revocationEndpoint: string;
  registrationEndpoint: string;
  /** Its counters: token requests, revocations, registrations, exchanges. */
  stats(): Promise<{
    token: { grant_type: string; status: number }[];
    revocations: { token_type_hint?: string; status: number }[];
    registrations: number;
    exchanges: number;
  }>;
  /** A subject token for `sub` signed by the server (for token exchange). */
  subjectToken(sub: string): Promise<string>;
  stop(): Promise<void>;
}

const running: UpstreamAuthorizationServer[] = [];

afterAll(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

/** Starts the fixture with `options` (see its header); stopped after the test file. */
export async function startAuthorizationServer(
  options: Record<string, unknown> = {},
): Promise<UpstreamAuthorizationServer> {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [join(__dirname, 'fixtures', 'upstream-authorization-server.mjs'), JSON.stringify(options)],
    { stdio: 'pipe' },
  );
  child.stderr.resume();
  const printed = await new Promise<Omit<UpstreamAuthorizationServer, 'stop' | 'stats' | 'subjectToken'>>(
    (resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the authorization server did not start within 15 s')), 15_000);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (!out.includes('\n')) return;
        clearTimeout(timer);
        resolve(JSON.parse(out.split('\n')[0]!));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the authorization server exited with ${String(code)}`));
      });
    },
  );
  const server: UpstreamAuthorizationServer = {
    ...printed,
    stats: async () =>
      (await (await fetch(`${printed.issuer}/test/stats`, { signal: AbortSignal.timeout(5000) })).json()) as Awaited<
        ReturnType<UpstreamAuthorizationServer['stats']>
      >,
    subjectToken: async (sub) => {
      const res = await fetch(`${printed.issuer}/test/subject-token`, {
        method: 'POST',
        body: JSON.stringify({ sub }),
        signal: AbortSignal.timeout(5000),
      });
      return ((await res.json()) as { token: string }).token;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        child.kill();
      }),
  };
  running.push(server);
  return server;
}

/**
 * Plays the user's browser: opens `authorizationUrl`, follows redirects with cookies (the
 * fixture's interaction signs in and consents without a page), and returns the redirect to
 * `callbackPrefix` without opening it. At most 20 steps, 5 s each.
 */
export async function browse(authorizationUrl: string, callbackPrefix: string): Promise<URL> {
  const cookies = new Map<string, string>();
  let url = authorizationUrl;
  for (let step = 0; step < 20; step++) {
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      signal: AbortSignal.timeout(5000),
    });
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';');
      const eq = pair!.indexOf('=');
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(set)) cookies.delete(pair!.slice(0, eq).trim());
      else cookies.set(pair!.slice(0, eq).trim(), value);
    }
    const location = res.headers.get('location');
    const text = await res.text();
    if (res.status < 300 || res.status >= 400 || !location)
      throw new Error(`the authorization server answered ${res.status}: ${text.slice(0, 300)}`);
    const next = new URL(location, url);
    if (next.href.startsWith(callbackPrefix)) return next;
    url = next.href;
  }
  throw new Error('the authorization did not reach the callback within 20 steps');
}

/** The payload of a JWT (not verified). */
export function jwtPayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
}

/** The rejection of `promise` (fails the test when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  const outcome = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(outcome instanceof Error)) throw new Error('expected a rejection, got a value');
  return outcome as Error & Record<string, unknown>;
}
