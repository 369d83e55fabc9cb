/**
 * The real OpenID Provider of the sign-in tests (panva's oidc-provider in its own process, see
 * oidc-login-provider.mjs) and a user's browser at it, for the tests of this package.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';

/** A running provider: its issuer URL, and `stop`. */
export interface ProviderProcess {
  issuer: string;
  stop(): Promise<void>;
}

/** Options of oidc-login-provider.mjs (see there). */
export interface ProviderOptions {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  wrongKey?: boolean;
  idTokenClaims?: boolean;
  accessTokenTtls?: Record<string, number>;
  rotateRefreshTokens?: boolean;
}

/** Starts the provider on 127.0.0.1; rejects when it has not started within 15 s. */
export async function startProvider(options: ProviderOptions): Promise<ProviderProcess> {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [join(__dirname, 'oidc-login-provider.mjs'), JSON.stringify(options)],
    { stdio: 'pipe' },
  );
  child.stderr.resume();
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the OpenID Provider did not start within 15 s')), 15_000);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { issuer: string }).issuer);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the OpenID Provider exited with ${String(code)}`));
    });
  });
  return {
    issuer,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        child.kill();
      }),
  };
}

/**
 * Plays the user's browser: follows the provider's redirects with its cookies, signs in as
 * `user` on the development login form and approves the consent form, and stops at the redirect
 * to `redirectUri` (the gateway's callback), which it returns. At most 20 steps.
 */
export async function signInAs(user: string, authorizationUrl: string, redirectUri: string): Promise<URL> {
  const cookies = new Map<string, string>();
  let request: { url: string; init: RequestInit } = { url: authorizationUrl, init: { method: 'GET' } };
  for (let step = 0; step < 20; step++) {
    const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(request.url, {
      ...request.init,
      redirect: 'manual',
      headers: { ...(request.init.headers as Record<string, string>), cookie },
    });
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(set)) cookies.delete(name);
      else cookies.set(name, value);
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.arrayBuffer();
      const next = new URL(location, request.url);
      if (next.href.startsWith(redirectUri)) return next;
      request = { url: next.href, init: { method: 'GET' } };
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action || !prompt)
      throw new Error(`unexpected provider page (${res.status}): ${html.slice(0, 300)}`);
    const form = new URLSearchParams({ prompt });
    if (prompt === 'login') {
      form.set('login', user);
      form.set('password', 'any password');
    }
    request = {
      url: new URL(action.replace(/&amp;/g, '&'), request.url).href,
      init: { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    };
  }
  throw new Error('the sign-in did not reach the callback within 20 steps');
}
