import { createHash } from 'node:crypto';

/** The pages' only style sheet, inline and allowed by its hash (no `unsafe-inline`). */
const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}dt{font-weight:600}
dd{margin:0;word-break:break-all}input[type=password]{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
button{font:inherit;padding:.5rem 1.2rem;margin:1rem .5rem 0 0}.error{color:#b00020}code{font-size:.9em}`;
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/**
 * The Content-Security-Policy of every authorization page: nothing but its own style and forms
 * posted to the gateway (and, for the form whose answer redirects to the client, the client's
 * redirect origin); never framed.
 */
export function pageCsp(formTargets: readonly string[] = []): string {
  const targets = ["'self'", ...formTargets].join(' ');
  return `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; img-src 'none'; form-action ${targets}; frame-ancestors 'none'; base-uri 'none'`;
}

/** HTML-escapes text for an element or a double-quoted attribute. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string, head = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="same-origin">${head}<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

function hidden(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('');
}

/** The API-key sign-in page (`login.type: "api_key"`). */
export function signInPage(options: {
  clientName: string;
  action: string;
  fields: Record<string, string>;
  error?: string;
  /** The sign-in is for a page of the gateway itself (named by `clientName`), not for an application. */
  forGatewayPage?: boolean;
}): string {
  const intro = options.forGatewayPage
    ? `Sign in with your gateway API key to open <strong>${escapeHtml(options.clientName)}</strong>; the key is checked once and kept nowhere.`
    : `<strong>${escapeHtml(options.clientName)}</strong> asks to use the gateway on your behalf. Sign in with your gateway API key; it is checked once and never given to the application.`;
  return page(
    'Sign in to the gateway',
    `<h1>Sign in to the gateway</h1><p>${intro}</p>${
      options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>` : ''
    }<form method="post" action="${escapeHtml(options.action)}">${hidden(options.fields)}<label for="api_key">Gateway API key</label><input id="api_key" name="api_key" type="password" autocomplete="off" required><button type="submit">Sign in</button></form>`,
  );
}

/** The consent page: client name, its redirect host, the resource and the scopes. */
export function consentPage(options: {
  clientName: string;
  clientId: string;
  redirectHost: string;
  resource: string;
  scopes: readonly string[];
  user: string;
  action: string;
  fields: Record<string, string>;
}): string {
  return page(
    'Allow access?',
    `<h1>Allow ${escapeHtml(options.clientName)} to use the gateway?</h1><p>Signed in as <strong>${escapeHtml(options.user)}</strong>.</p><dl><dt>Application</dt><dd>${escapeHtml(options.clientName)} <code>${escapeHtml(options.clientId)}</code></dd><dt>Sends you back to</dt><dd>${escapeHtml(options.redirectHost)}</dd><dt>Resource</dt><dd>${escapeHtml(options.resource)}</dd><dt>Scopes</dt><dd>${escapeHtml(options.scopes.join(' ') || '(none)')}</dd></dl><p>It will act as you, with your access, until you or an administrator revoke it.</p><form method="post" action="${escapeHtml(options.action)}">${hidden(options.fields)}<button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button></form>`,
  );
}

/** The gateway's own error page: the request is refused here, never redirected to an unchecked URI. */
export function errorPage(code: string, message: string): string {
  return page(
    'Authorization refused',
    `<h1>Authorization refused</h1><p class="error" role="alert">${escapeHtml(message)}</p><p>Error code: <code>${escapeHtml(code)}</code>. Nothing was sent to the application.</p>`,
  );
}

/** A page of the gateway's own (the connections pages): a title and body HTML the caller escaped. */
export function gatewayPage(title: string, bodyHtml: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1>${bodyHtml}`);
}

/**
 * The page after a sign-in for a page of the gateway: it goes on to `location` (a path of this
 * gateway) at once by a meta refresh, with a link for browsers that do not follow one. A redirect
 * would not do: the sign-in form's Content-Security-Policy (`form-action`) covers every redirect
 * after the form, and the next page may send the browser to another site (an MCP server's
 * authorization server).
 */
export function continuePage(location: string): string {
  const href = escapeHtml(location);
  return page(
    'Signed in',
    `<h1>Signed in</h1><p><a href="${href}">Continue</a></p>`,
    `<meta http-equiv="refresh" content="0;url=${href}">`,
  );
}
