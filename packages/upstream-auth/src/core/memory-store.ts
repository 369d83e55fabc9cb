/**
 * An {@link UpstreamConnectionStore} in memory, for tests and single-instance setups: its refresh
 * lock is a real one (a queue per connection), its connection changes are heard in the process.
 */
import type {
  ConnectRequest,
  ConnectRequestUse,
  ConnectionSummary,
  PendingAuthorization,
  RefreshDecision,
  RegisteredClient,
  StoredConnection,
  UpstreamConnectionStore,
} from './store';

function summary(connection: StoredConnection): ConnectionSummary {
  const { accessToken: _a, refreshToken: _r, ...rest } = connection;
  return { ...rest };
}

/** The store in memory (see the module). Nothing is sealed: do not use it with real users' tokens across processes. */
export class MemoryConnectionStore implements UpstreamConnectionStore {
  readonly #connections = new Map<string, StoredConnection>();
  readonly #requests = new Map<string, ConnectRequest & { used: boolean }>();
  readonly #pending = new Map<string, PendingAuthorization>();
  readonly #clients = new Map<string, RegisteredClient>();
  readonly #locks = new Map<string, Promise<void>>();
  readonly #listeners = new Set<(userId: string, server: string) => void>();

  #changed(userId: string, server: string): void {
    for (const listener of this.#listeners) listener(userId, server);
  }

  async getConnection(userId: string, server: string): Promise<StoredConnection | undefined> {
    const found = this.#connections.get(`${userId}\n${server}`);
    return found ? { ...found, scopes: [...found.scopes] } : undefined;
  }

  async saveConnection(connection: StoredConnection): Promise<void> {
    this.#connections.set(`${connection.userId}\n${connection.server}`, { ...connection });
    this.#changed(connection.userId, connection.server);
  }

  async withRefreshLock<T>(
    userId: string,
    server: string,
    work: (current: StoredConnection | undefined) => Promise<RefreshDecision<T>>,
  ): Promise<T> {
    const key = `${userId}\n${server}`;
    const before = this.#locks.get(key) ?? Promise.resolve();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const mine = before.then(() => held);
    this.#locks.set(key, mine);
    await before;
    try {
      const decision = await work(await this.getConnection(userId, server));
      if (decision.remove) await this.deleteConnection(userId, server);
      else if (decision.save) await this.saveConnection({ ...decision.save, userId, server });
      return decision.result;
    } finally {
      release();
      if (this.#locks.get(key) === mine) this.#locks.delete(key);
    }
  }

  async deleteConnection(userId: string, server: string): Promise<StoredConnection | undefined> {
    const key = `${userId}\n${server}`;
    const found = this.#connections.get(key);
    if (!found) return undefined;
    this.#connections.delete(key);
    this.#changed(userId, server);
    return found;
  }

  async deleteUserConnections(userId: string): Promise<StoredConnection[]> {
    const removed = [...this.#connections.values()].filter((c) => c.userId === userId);
    for (const c of removed) await this.deleteConnection(c.userId, c.server);
    return removed;
  }

  async listConnections(server: string, page: { limit: number; after?: string }): Promise<ConnectionSummary[]> {
    return [...this.#connections.values()]
      .filter((c) => c.server === server)
      .sort((a, b) => a.createdAt - b.createdAt || a.userId.localeCompare(b.userId))
      .filter((c, i, all) => page.after === undefined || all.findIndex((x) => x.userId === page.after) < i)
      .slice(0, page.limit)
      .map(summary);
  }

  async listUserConnections(userId: string): Promise<ConnectionSummary[]> {
    return [...this.#connections.values()].filter((c) => c.userId === userId).map(summary);
  }

  async createConnectRequest(request: ConnectRequest): Promise<void> {
    this.#requests.set(request.id, { ...request, used: false });
  }

  async useConnectRequest(id: string, userId: string, now: number): Promise<ConnectRequestUse> {
    const found = this.#requests.get(id);
    if (!found) return { outcome: 'unknown' };
    if (found.used) return { outcome: 'already_used' };
    if (found.expiresAt <= now) return { outcome: 'expired' };
    if (found.userId !== userId) return { outcome: 'user_mismatch' };
    found.used = true;
    const { used: _u, ...request } = found;
    return { outcome: 'used_now', request };
  }

  async savePendingAuthorization(pending: PendingAuthorization): Promise<void> {
    this.#pending.set(pending.state, { ...pending });
  }

  async takePendingAuthorization(state: string, now: number): Promise<PendingAuthorization | undefined> {
    const found = this.#pending.get(state);
    this.#pending.delete(state);
    return found && found.expiresAt > now ? found : undefined;
  }

  async getRegisteredClient(server: string, issuer: string): Promise<RegisteredClient | undefined> {
    return this.#clients.get(`${server}\n${issuer}`);
  }

  async saveRegisteredClient(client: RegisteredClient): Promise<void> {
    this.#clients.set(`${client.server}\n${client.issuer}`, { ...client });
  }

  async onConnectionChange(listener: (userId: string, server: string) => void): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    return async () => {
      this.#listeners.delete(listener);
    };
  }
}
