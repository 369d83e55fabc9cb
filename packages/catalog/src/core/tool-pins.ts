import { createHash } from 'node:crypto';
import type { CatalogDatabase } from './database';
import { CatalogError, InvalidRecordError, RecordNotFoundError } from './errors';

/** `409 digest_changed`: an approval named a digest that is not the tool's last seen one; nothing was approved. */
export class DigestChangedError extends CatalogError {
  readonly code = 'digest_changed';
  readonly status = 409;
  constructor(message: string) {
    super(message, 'digest');
  }
}

/**
 * An MCP tool as a server lists it (`tools/list`), as clients see it: the digest covers every
 * field (name, title, description, inputSchema, outputSchema, annotations, `_meta`, and any other).
 */
export interface ListedTool {
  name: string;
  description?: unknown;
  inputSchema?: unknown;
  [field: string]: unknown;
}

/** Whether a tool may be used under pinning. */
export type PinVerdict = 'approved' | 'held';

/** A pinned tool as the admin API answers it. */
export interface ToolPinView {
  name: string;
  /** `held` while the tool was never approved or changed since it was. */
  status: PinVerdict;
  /** Digest of the whole tool as last seen (see {@link toolDigest}). */
  currentDigest: string;
  currentDescription: string | null;
  /** Digest an admin approved; null for a tool never approved. */
  approvedDigest: string | null;
  approvedDescription: string | null;
  firstSeenAt: string;
  seenAt: string;
  approvedAt: string | null;
  approvedBy: string | null;
}

interface Pin {
  seen: string;
  approved: string | null;
}

interface PinRow {
  server: string;
  name: string;
  seen_digest: string;
  seen_description: string | null;
  approved_digest: string | null;
  approved_description: string | null;
  first_seen_at: Date | string;
  seen_at: Date | string;
  approved_at: Date | string | null;
  approved_by: string | null;
}

/** Longest description kept, in characters. */
const MAX_DESCRIPTION = 20_000;
/** Most tools remembered per server; tools past it are held and not recorded. */
export const MAX_PINNED_TOOLS_PER_SERVER = 10_000;
/** Most sightings waiting to be written. */
const MAX_PENDING_WRITES = 10_000;
/** Deepest nesting whose keys a digest sorts; deeper values are digested as received (still covered, never skipped). */
const MAX_DIGEST_DEPTH = 64;

/**
 * The prefix of a digest of the whole tool. Digests of earlier gateways (`sha256:`, over the
 * description and input schema only) never approve a tool: their tools are held until approved again.
 */
export const TOOL_DIGEST_PREFIX = 'sha256-tool:';

/** Whether `digest` is of the whole tool (this gateway's form), so an approval of it may count. */
function currentForm(digest: string | null | undefined): digest is string {
  return typeof digest === 'string' && digest.startsWith(TOOL_DIGEST_PREFIX);
}

/**
 * JSON with object keys sorted, so equal values have one text whatever their key order. Below
 * {@link MAX_DIGEST_DEPTH} a value is written as received (key order then counts: a difference
 * there holds the tool rather than hiding it).
 */
function canonical(value: unknown, depth = 0): string {
  if (depth > MAX_DIGEST_DEPTH) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v, depth + 1)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k], depth + 1)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * `sha256-tool:<hex>` of the whole tool as clients see it: every field (name, title, description,
 * inputSchema, outputSchema, annotations, `_meta`, any other), as canonical JSON (object keys
 * sorted at every level, so key order does not change the digest).
 */
export function toolDigest(tool: ListedTool): string {
  return `${TOOL_DIGEST_PREFIX}${createHash('sha256').update(canonical(tool)).digest('hex')}`;
}

function iso(value: Date | string | null): string | null {
  if (value === null) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/**
 * Tool pinning (CONTRACT section 10): every tool of a pinned MCP server is recorded with a digest
 * of the whole tool ({@link toolDigest}) the first time the gateway sees it; a tool that is new or
 * whose digest changed is held until an admin approves it. The request path asks
 * {@link ToolPins.listed} and {@link ToolPins.called}, which read memory only; sightings are
 * written to the database in the background, and the memory is reloaded from it every
 * `reloadIntervalMs` (other instances' approvals) and at once after an approval here.
 */
export class ToolPins {
  private pins = new Map<string, Map<string, Pin>>();
  private readonly pending = new Map<string, { server: string; tool: ListedTool; digest: string }>();
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** `onWriteError`: called when a sighting cannot be written (it is tried again at the next sighting). Default: none. */
  constructor(
    private readonly db: CatalogDatabase,
    private readonly onWriteError?: (error: unknown) => void,
  ) {}

  /** Loads every pin, then reloads every `reloadIntervalMs` (0: never). */
  async start(reloadIntervalMs: number): Promise<void> {
    await this.load();
    if (reloadIntervalMs > 0) {
      this.timer = setInterval(() => void this.load().catch(() => undefined), reloadIntervalMs);
      this.timer.unref();
    }
  }

  /** Stops reloading and waits for the writes under way. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.writing;
  }

  /** Reads every pin from the database into memory (swapped whole). */
  async load(): Promise<void> {
    const rows = await this.db.query<PinRow>('SELECT server, name, seen_digest, approved_digest FROM gw_mcp_tools');
    const next = new Map<string, Map<string, Pin>>();
    for (const row of rows) {
      let tools = next.get(row.server);
      if (!tools) next.set(row.server, (tools = new Map()));
      tools.set(row.name, { seen: row.seen_digest, approved: row.approved_digest });
    }
    // Sightings not written yet stay visible.
    for (const { server, tool, digest } of this.pending.values()) {
      let tools = next.get(server);
      if (!tools) next.set(server, (tools = new Map()));
      tools.set(tool.name, { seen: digest, approved: tools.get(tool.name)?.approved ?? null });
    }
    this.pins = next;
  }

  /**
   * The verdict on a tool a pinned server just listed, recording the sighting when the tool is new
   * or changed. Never waits.
   */
  listed(server: string, tool: ListedTool): PinVerdict {
    const digest = toolDigest(tool);
    let tools = this.pins.get(server);
    const pin = tools?.get(tool.name);
    if (pin === undefined || pin.seen !== digest) {
      if (!tools) this.pins.set(server, (tools = new Map()));
      if (pin !== undefined || tools.size < MAX_PINNED_TOOLS_PER_SERVER) {
        tools.set(tool.name, { seen: digest, approved: pin?.approved ?? null });
        this.record(server, tool, digest);
      }
    }
    return pin?.approved === digest ? 'approved' : 'held';
  }

  /** The verdict on a call of tool `name` of a pinned server: approved only when its latest listing was approved. */
  called(server: string, name: string): PinVerdict {
    const pin = this.pins.get(server)?.get(name);
    return pin !== undefined && currentForm(pin.approved) && pin.approved === pin.seen ? 'approved' : 'held';
  }

  private record(server: string, tool: ListedTool, digest: string): void {
    const key = `${server}\u0000${tool.name}`;
    if (!this.pending.has(key) && this.pending.size >= MAX_PENDING_WRITES) return;
    this.pending.set(key, { server, tool, digest });
    this.writing ??= this.flush().finally(() => {
      this.writing = undefined;
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.size > 0) {
      const [key, entry] = this.pending.entries().next().value as [
        string,
        { server: string; tool: ListedTool; digest: string },
      ];
      const description =
        typeof entry.tool.description === 'string' ? entry.tool.description.slice(0, MAX_DESCRIPTION) : null;
      try {
        await this.db.query(
          `INSERT INTO gw_mcp_tools (server, name, seen_digest, seen_description, first_seen_at, seen_at)
           VALUES ($1, $2, $3, $4, now(), now())
           ON CONFLICT (server, name) DO UPDATE SET seen_digest = EXCLUDED.seen_digest,
             seen_description = EXCLUDED.seen_description, seen_at = now()`,
          [entry.server, entry.tool.name, entry.digest, description],
        );
      } catch (error) {
        this.onWriteError?.(error);
      }
      if (this.pending.get(key) === entry) this.pending.delete(key);
    }
  }

  /** Every tool recorded for `server`, held first, then by name. */
  async list(server: string): Promise<ToolPinView[]> {
    await this.writing;
    const rows = await this.db.query<PinRow>('SELECT * FROM gw_mcp_tools WHERE server = $1 ORDER BY name', [server]);
    const views = rows.map(view);
    return [...views.filter((v) => v.status === 'held'), ...views.filter((v) => v.status === 'approved')];
  }

  /**
   * Approves the tool as reviewed: `digest` is the digest the admin was shown (`currentDigest`).
   * Only when it is still the digest last seen is the tool approved (the next request on this
   * instance sees it) and an audit line written naming the approver, the tool and the digest.
   * Throws `400 invalid_request` (param `digest`) without a digest, `404 not_found` for an unknown
   * tool, and `409 digest_changed` when the tool changed since it was reviewed (nothing approved).
   */
  async approve(server: string, name: string, digest: string, actor: string): Promise<ToolPinView> {
    if (typeof digest !== 'string' || digest === '' || digest.length > 200) {
      throw new InvalidRecordError(
        'digest is required: the currentDigest of the tool as reviewed (GET /admin/v1/mcp-servers/<slug>/tools).',
        'digest',
      );
    }
    await this.writing;
    const row = await this.db.transaction(async (tx) => {
      const [updated] = await tx.query<PinRow>(
        `UPDATE gw_mcp_tools SET approved_digest = seen_digest, approved_description = seen_description,
           approved_at = now(), approved_by = $3 WHERE server = $1 AND name = $2 AND seen_digest = $4 RETURNING *`,
        [server, name, actor, digest],
      );
      if (!updated) {
        const [existing] = await tx.query<PinRow>(
          'SELECT seen_digest FROM gw_mcp_tools WHERE server = $1 AND name = $2',
          [server, name],
        );
        if (!existing)
          throw new RecordNotFoundError(
            `MCP server "${server.slice(0, 64)}" has no tool "${name.slice(0, 128)}" on record.`,
          );
        throw new DigestChangedError(
          `The tool "${name.slice(0, 128)}" changed since it was reviewed: its digest is now ${existing.seen_digest}. Review it again; nothing was approved.`,
        );
      }
      await tx.query('INSERT INTO gw_audit (actor, action, kind, slug, fields) VALUES ($1, $2, $3, $4, $5)', [
        actor,
        'approve_tool',
        'mcp-servers',
        server,
        JSON.stringify([`tools.${name}@${updated.seen_digest}`]),
      ]);
      return updated;
    });
    let tools = this.pins.get(server);
    if (!tools) this.pins.set(server, (tools = new Map()));
    tools.set(name, { seen: row.seen_digest, approved: row.approved_digest });
    return view(row);
  }
}

function view(row: PinRow): ToolPinView {
  return {
    name: row.name,
    status: currentForm(row.approved_digest) && row.approved_digest === row.seen_digest ? 'approved' : 'held',
    currentDigest: row.seen_digest,
    currentDescription: row.seen_description,
    approvedDigest: row.approved_digest,
    approvedDescription: row.approved_description,
    firstSeenAt: iso(row.first_seen_at) as string,
    seenAt: iso(row.seen_at) as string,
    approvedAt: iso(row.approved_at),
    approvedBy: row.approved_by,
  };
}
