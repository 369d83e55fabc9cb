/**
 * The HTML of the connections pages (CONTRACT section 15): the signed-in user's list of servers
 * that need a connection, and the outcome pages of a connect link. Every value is escaped; the
 * pages carry no script and are sent under the authorization pages' CSP (`frame-ancestors 'none'`).
 */
import type { ConnectionSummary } from '@gw/upstream-auth';
import { oauthPackage } from '../oauth/oauth-package';

/** `@gw/oauth`'s page helpers, loaded with it (these pages exist only when OAuth is on). */
const escapeHtml = (value: string) => oauthPackage().escapeHtml(value);
const gatewayPage = (title: string, body: string) => oauthPackage().gatewayPage(title, body);

/** One server of the list: its slug and the user's connection to it, if any. */
export interface ConnectListEntry {
  slug: string;
  connection?: ConnectionSummary;
}

function when(ms: number | undefined): string {
  return ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

/** `GET /connect`: each server with its state and a connect link or a disconnect button. */
export function connectListPage(
  user: string,
  entries: readonly ConnectListEntry[],
  forms: { startToken: string; disconnectToken: string },
): string {
  const rows = entries
    .map(({ slug, connection }) => {
      const name = escapeHtml(slug);
      const path = `/connect/${encodeURIComponent(slug)}`;
      if (connection === undefined)
        return `<dt>${name}</dt><dd>Not connected. <a href="${escapeHtml(`${path}/start?csrf=${encodeURIComponent(forms.startToken)}`)}">Connect</a></dd>`;
      return `<dt>${name}</dt><dd>Connected ${escapeHtml(when(connection.createdAt))}; scopes ${escapeHtml(connection.scopes.join(' ') || '(none)')}; token until ${escapeHtml(when(connection.expiresAt))}.<form method="post" action="${escapeHtml(`${path}/disconnect`)}"><input type="hidden" name="csrf" value="${escapeHtml(forms.disconnectToken)}"><button type="submit">Disconnect</button></form></dd>`;
    })
    .join('');
  const body =
    entries.length === 0
      ? '<p>No MCP server of this gateway needs a connection of your own.</p>'
      : `<p>Signed in as <strong>${escapeHtml(user)}</strong>. These MCP servers act with your own account there; the gateway keeps your tokens sealed and refreshes them.</p><dl>${rows}</dl>`;
  return gatewayPage('Your MCP server connections', body);
}

/** The page after the server's authorization: the connection is made. */
export function connectedPage(slug: string): string {
  return gatewayPage(
    'Connected',
    `<p>The MCP server <strong>${escapeHtml(slug)}</strong> is connected to your account. Go back to your application and try again; you can close this tab.</p><p><a href="/connect">Your connections</a></p>`,
  );
}

/** A refusal of the connections pages: its message and stable code. */
export function connectErrorPage(code: string, message: string): string {
  return gatewayPage(
    'Not connected',
    `<p class="error" role="alert">${escapeHtml(message)}</p><p>Error code: <code>${escapeHtml(code)}</code>. Nothing was connected.</p>`,
  );
}
