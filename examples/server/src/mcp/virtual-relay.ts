/**
 * The requests a member of a virtual MCP server makes during a call (`elicitation/create`,
 * `sampling/createMessage`), passed to the caller on the call's own event stream, and the caller's
 * answer (a separate `POST` with the session id) passed back (CONTRACT section 16).
 *
 * A call of a caller whose session declared `elicitation` and/or `sampling` (in a revision that has
 * them) reaches its member with a member client of that call only, declaring the same
 * capabilities: every request that client receives belongs to that call. The request goes to the
 * caller under an id of the gateway's own (`gwr1.<instance>.<nonce>.<mac>`), bound by a MAC to the
 * caller's session: a caller cannot answer another caller's or another session's request. Its
 * answer is awaited at most {@link RELAY_TIMEOUT_MS}; meanwhile it is one of at most
 * {@link RELAY_PENDING_MAX} pending requests of the instance. An answer that reaches another
 * instance than the one waiting is passed on by the catalog database's `NOTIFY`, sealed
 * (AES-256-GCM under a key derived from the session key) ({@link RelayAnswerEvents}).
 *
 * Every other caller (no session, no such capability, revision 2026-07-28, whose multi round-trip
 * `input_required` results replace server requests within a call) reaches members with the kept
 * member client, which declares no capability: an SDK member then refuses to ask by itself, and a
 * member that asks anyway gets `-32601` with `data.code: "relay_unavailable"`.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  type ClientCapabilities,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { CatalogDatabase } from '@gw/catalog';
import type { VirtualSession } from './virtual-sessions';

/** How long a relayed request waits for the caller's answer: 120 s; then the member gets `relay_timeout`. */
export const RELAY_TIMEOUT_MS = 120_000;

/** The most relayed requests an instance waits for at once: 1,000; beyond, the member gets `relay_limit`. */
export const RELAY_PENDING_MAX = 1_000;

/** The most relayed requests one session waits for at once: 16; beyond, the member gets `relay_limit`. */
export const RELAY_PENDING_PER_SESSION_MAX = 16;

/**
 * The largest sealed answer passed to another instance: 7,000 characters (PostgreSQL's `NOTIFY`
 * payload is at most 8,000 bytes). A larger answer for a request another instance waits for is
 * refused `413 relay_answer_too_large`.
 */
export const RELAY_NOTIFY_MAX_CHARS = 7_000;

/** The first revision with `elicitation/create` (2025-06-18); `sampling/createMessage` is in every session revision. */
const ELICITATION_REVISION = '2025-06-18';

/** The JSON-RPC error of a member request the gateway does not pass on, with a stable `data.code`. */
export class RelayError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: { code: string; [key: string]: unknown },
  ) {
    super(message);
    this.name = 'RelayError';
  }
}

/** `relay_unavailable` (-32601): the caller of the call cannot receive the member's request. */
export class RelayUnavailableError extends RelayError {
  constructor(method: string, slug: string) {
    super(
      ErrorCode.MethodNotFound,
      `The caller of this call through virtual MCP server "${slug}" cannot receive ${method.slice(0, 64)} ` +
        '(no session that declared the capability, or revision 2026-07-28).',
      { code: 'relay_unavailable', method: method.slice(0, 64) },
    );
  }
}

/** `relay_timeout` (-32001): the caller did not answer a relayed request in time. */
export class RelayTimeoutError extends RelayError {
  constructor(method: string, timeoutMs: number) {
    super(ErrorCode.RequestTimeout, `The caller did not answer ${method} within ${timeoutMs} ms.`, {
      code: 'relay_timeout',
      timeout_ms: timeoutMs,
    });
  }
}

/** `relay_limit` (-32603): too many relayed requests wait for an answer (the session's or the instance's bound). */
export class RelayLimitError extends RelayError {
  constructor(bound: number) {
    super(ErrorCode.InternalError, `Too many requests wait for the caller's answer (${bound}): try again later.`, {
      code: 'relay_limit',
    });
  }
}

/** `relay_cancelled` (-32603): the call ended (the caller went away) before the caller answered. */
export class RelayCancelledError extends RelayError {
  constructor() {
    super(ErrorCode.InternalError, 'The call ended before the caller answered.', { code: 'relay_cancelled' });
  }
}

/** What a relayed request becomes for the member when the caller answered with an error: that error, as it is. */
class CallerError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Passes a caller's answer to the instance that waits for it (and hears the others'). Default: this instance only. */
export interface RelayAnswerEvents {
  /** Tells every instance the sealed answer `sealed` to relayed request `id`. */
  publish(id: string, sealed: string): Promise<void>;
  /** Calls `onAnswer` for each answer any instance publishes; resolves with a function that stops. */
  subscribe(onAnswer: (id: string, sealed: string) => void): Promise<() => Promise<void>>;
}

/** The NOTIFY channel answers to relayed requests are passed on (payload: `<relay id> <sealed answer>`). */
export const RELAY_ANSWER_CHANNEL = 'gw_virtual_relay_answer';

/** {@link RelayAnswerEvents} over the catalog database's `NOTIFY`/`LISTEN`. */
export function relayAnswerEvents(db: Pick<CatalogDatabase, 'query' | 'listen'>): RelayAnswerEvents {
  return {
    publish: async (id, sealed) => {
      await db.query('SELECT pg_notify($1, $2)', [RELAY_ANSWER_CHANNEL, `${id} ${sealed}`]);
    },
    subscribe: (onAnswer) =>
      db.listen(RELAY_ANSWER_CHANNEL, (payload) => {
        const space = payload.indexOf(' ');
        if (space > 0) onAnswer(payload.slice(0, space), payload.slice(space + 1));
      }),
  };
}

/** Options of {@link RelayedRequests}. */
export interface RelayedRequestsOptions {
  /** The session key (32 bytes, the same on every instance); the relay's keys are derived from it. Required. */
  key: Buffer;
  /** How long a relayed request waits for its answer, in ms. Default {@link RELAY_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** The most relayed requests waiting at once. Default {@link RELAY_PENDING_MAX}. */
  max?: number;
  /** The most relayed requests of one session waiting at once. Default {@link RELAY_PENDING_PER_SESSION_MAX}. */
  perSession?: number;
  /** Where answers are passed between instances. Default: none (an answer for another instance is refused `relay_other_instance`). */
  events?: RelayAnswerEvents;
  /** Told of each relayed request that timed out, by its method (for the log). Default: nothing. */
  onTimeout?: (method: string) => void;
}

/** One relayed request waiting for the caller's answer. */
interface Pending {
  sessionId: string;
  settle: (message: JSONRPCMessage) => void;
}

/** The parts of a relay id. */
interface RelayId {
  instance: string;
  nonce: string;
  mac: string;
}

/** The form prefix of relay ids. */
const RELAY_FORM = 'gwr1';

/** The caller's answer to a relayed request: a JSON-RPC response (a `result` or an `error`, no `method`). */
type Answer = {
  jsonrpc: '2.0';
  id: string | number;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
};

/** Whether a message is a JSON-RPC response (the answer to a request the server sent). */
function isAnswer(message: unknown): message is Answer {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return false;
  const m = message as Record<string, unknown>;
  return (
    m.method === undefined && (typeof m.id === 'string' || typeof m.id === 'number') && ('result' in m || 'error' in m)
  );
}

/** The answers a `POST` body holds when it holds answers only (one, or a batch of them); undefined otherwise. */
export function answersIn(body: unknown): Answer[] | undefined {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  if (messages.length === 0 || !messages.every(isAnswer)) return undefined;
  return messages as Answer[];
}

/** Whether a `POST` body is (or a batch holds) a `tools/call`: its answer is then a stream, where member requests can go. */
export function callsTools(body: unknown): boolean {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  return messages.some((message) => (message as { method?: unknown } | null)?.method === 'tools/call');
}

/**
 * The capabilities a call's member client declares for `session`: the caller's `elicitation` (in a
 * revision that has it) and `sampling`, as the caller declared them; undefined when none (the call
 * then uses the kept member client).
 */
export function relayedCapabilities(session: VirtualSession | undefined): ClientCapabilities | undefined {
  if (session === undefined) return undefined;
  const declared = session.clientCapabilities;
  const capabilities: ClientCapabilities = {};
  const object = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (object(declared.elicitation) && session.protocolVersion >= ELICITATION_REVISION)
    capabilities.elicitation = declared.elicitation as ClientCapabilities['elicitation'];
  if (object(declared.sampling)) capabilities.sampling = declared.sampling as ClientCapabilities['sampling'];
  return Object.keys(capabilities).length === 0 ? undefined : capabilities;
}

/** What a call relays through: sends a message on the call's event stream. */
export interface CallChannel {
  /** Sends `message` to the caller on the call's event stream. */
  send(message: JSONRPCMessage): Promise<void>;
  /** Aborted when the call ends (the caller went away). */
  signal: AbortSignal;
}

/** Answers a `POST` holding answers: a JSON-RPC error with a stable `data.code`. */
function refuse(res: ServerResponse, status: number, code: string, message: string, id: string | number | null): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidRequest, message, data: { code } } }));
}

/**
 * The relayed requests of an instance, each waiting for its caller's answer: bounded in number and
 * in time; an answer is taken only from the session the request was sent to.
 */
export class RelayedRequests {
  private readonly pending = new Map<string, Pending>();
  private readonly perSession = new Map<string, number>();
  private readonly idKey: Buffer;
  private readonly sealKey: Buffer;
  /** This instance's name in relay ids (random, 8 bytes). */
  readonly instance = randomBytes(8).toString('base64url');
  readonly timeoutMs: number;
  private readonly max: number;
  private readonly sessionMax: number;
  private readonly events: RelayAnswerEvents | undefined;
  private readonly onTimeout: (method: string) => void;
  private readonly unsubscribe: Promise<(() => Promise<void>) | undefined>;

  constructor(options: RelayedRequestsOptions, onSubscribeError: (error: unknown) => void = () => undefined) {
    this.idKey = createHmac('sha256', options.key).update('gw-virtual-relay-id').digest();
    this.sealKey = createHmac('sha256', options.key).update('gw-virtual-relay-seal').digest();
    this.timeoutMs = options.timeoutMs ?? RELAY_TIMEOUT_MS;
    this.max = options.max ?? RELAY_PENDING_MAX;
    this.sessionMax = options.perSession ?? RELAY_PENDING_PER_SESSION_MAX;
    this.events = options.events;
    this.onTimeout = options.onTimeout ?? (() => undefined);
    this.unsubscribe = (
      this.events?.subscribe((id, sealed) => this.heard(id, sealed)) ?? Promise.resolve(undefined)
    ).catch((error: unknown) => {
      onSubscribeError(error);
      return undefined;
    });
  }

  /** How many relayed requests wait now. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * A member client for one call of `session` (through virtual server `slug`) declaring
   * `capabilities`, whose member requests go to the caller on `channel`.
   */
  clientFor(slug: string, session: VirtualSession, capabilities: ClientCapabilities, channel: CallChannel): Client {
    const client = new Client({ name: `gateway-virtual-${slug}`, version: '1.0.0' }, { capabilities });
    if (capabilities.elicitation !== undefined)
      client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
        this.relay(session.id, request, channel, extra.signal),
      );
    if (capabilities.sampling !== undefined)
      client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
        this.relay(session.id, request, channel, extra.signal),
      );
    client.fallbackRequestHandler = (request) => Promise.reject(new RelayUnavailableError(request.method, slug));
    return client;
  }

  /**
   * Sends `request` to the caller of session `sessionId` on `channel` and resolves with the caller's
   * result (rejects with the caller's error, or a {@link RelayError}).
   */
  private async relay<R>(
    sessionId: string,
    request: { method: string; params?: unknown },
    channel: CallChannel,
    memberSignal: AbortSignal,
  ): Promise<R> {
    if (this.pending.size >= this.max) throw new RelayLimitError(this.max);
    const held = this.perSession.get(sessionId) ?? 0;
    if (held >= this.sessionMax) throw new RelayLimitError(this.sessionMax);
    if (channel.signal.aborted) throw new RelayCancelledError();
    const id = this.newId(sessionId);
    this.perSession.set(sessionId, held + 1);
    let timer: NodeJS.Timeout | undefined;
    let onCallEnd: (() => void) | undefined;
    let onMemberCancel: (() => void) | undefined;
    try {
      const answer = await new Promise<JSONRPCMessage>((resolve, reject) => {
        this.pending.set(id, { sessionId, settle: resolve });
        timer = setTimeout(() => {
          this.onTimeout(request.method);
          reject(new RelayTimeoutError(request.method, this.timeoutMs));
        }, this.timeoutMs);
        timer.unref();
        onCallEnd = () => reject(new RelayCancelledError());
        channel.signal.addEventListener('abort', onCallEnd, { once: true });
        // The member gave up on its request: the caller is told, as a member's own cancellation.
        onMemberCancel = () => {
          reject(new RelayCancelledError());
          void channel
            .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } })
            .catch(() => undefined);
        };
        memberSignal.addEventListener('abort', onMemberCancel, { once: true });
        channel
          .send({ jsonrpc: '2.0', id, method: request.method, params: request.params } as JSONRPCMessage)
          .catch(() => reject(new RelayCancelledError()));
      });
      const reply = answer as Answer;
      if (reply.error !== undefined) {
        const error = reply.error;
        throw new CallerError(
          typeof error.code === 'number' && Number.isSafeInteger(error.code) ? error.code : ErrorCode.InternalError,
          typeof error.message === 'string' ? error.message.slice(0, 1024) : 'The caller answered with an error.',
          error.data,
        );
      }
      return reply.result as R;
    } finally {
      clearTimeout(timer);
      if (onCallEnd !== undefined) channel.signal.removeEventListener('abort', onCallEnd);
      if (onMemberCancel !== undefined) memberSignal.removeEventListener('abort', onMemberCancel);
      this.pending.delete(id);
      const left = (this.perSession.get(sessionId) ?? 1) - 1;
      if (left <= 0) this.perSession.delete(sessionId);
      else this.perSession.set(sessionId, left);
    }
  }

  /**
   * Takes the caller's `answers` (a `POST` of session `session`, already checked) and answers the
   * `POST`: `202` once each is passed to the request waiting for it (here, or on another instance);
   * `404 relayed_request_unknown` when one is not a request of this session waiting (nothing is
   * passed then); `404 relay_other_instance` when another instance waits and none can be told.
   */
  async receive(answers: readonly Answer[], session: VirtualSession, res: ServerResponse): Promise<void> {
    const targets: { answer: Answer; id: RelayId }[] = [];
    for (const answer of answers) {
      const id = typeof answer.id === 'string' ? this.parseId(answer.id, session.id) : undefined;
      const local = id?.instance === this.instance;
      if (id === undefined || (local && this.pending.get(answer.id as string)?.sessionId !== session.id))
        return refuse(
          res,
          404,
          'relayed_request_unknown',
          'No request of this session waits for this answer (another session’s, answered already, or timed out).',
          answer.id,
        );
      if (!local && this.events === undefined)
        return refuse(
          res,
          404,
          'relay_other_instance',
          'The request this answers waits on another instance of the gateway, which this one cannot reach.',
          answer.id,
        );
      targets.push({ answer, id });
    }
    const published: Promise<void>[] = [];
    for (const { answer, id } of targets) {
      const relayId = answer.id as string;
      if (id.instance === this.instance) {
        this.pending.get(relayId)?.settle(answer as JSONRPCMessage);
        continue;
      }
      const sealed = this.seal(relayId, answer);
      if (sealed.length > RELAY_NOTIFY_MAX_CHARS)
        return refuse(
          res,
          413,
          'relay_answer_too_large',
          `The answer is over ${RELAY_NOTIFY_MAX_CHARS} characters sealed, the most passed to another instance.`,
          answer.id,
        );
      published.push(this.events!.publish(relayId, sealed));
    }
    try {
      await Promise.all(published);
    } catch {
      return refuse(
        res,
        503,
        'relay_other_instance',
        'The answer could not be passed to the instance that waits for it: try again.',
        null,
      );
    }
    res.writeHead(202);
    res.end();
  }

  /**
   * Takes a `POST` holding answers only, with session id `sessionId` (checked by `verify`): `400
   * relay_session_required` without one, `404` (-32001, as any request) when it is not a session of
   * this caller; else {@link receive}.
   */
  async receivePost(
    answers: readonly Answer[],
    sessionId: string | string[] | undefined,
    verify: (sessionId: string) => VirtualSession | undefined,
    res: ServerResponse,
  ): Promise<void> {
    if (typeof sessionId !== 'string')
      return refuse(
        res,
        400,
        'relay_session_required',
        'An answer to a relayed request needs the session id (Mcp-Session-Id) of the call that received it.',
        null,
      );
    const session = verify(sessionId);
    if (session === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      return;
    }
    return this.receive(answers, session, res);
  }

  /** Stops hearing other instances' answers (a waiting request ends with its call, or at its timeout). */
  async close(): Promise<void> {
    await (await this.unsubscribe)?.().catch(() => undefined);
  }

  /** An answer another instance passed on: taken if its request waits here. */
  private heard(relayId: string, sealed: string): void {
    const pending = this.pending.get(relayId);
    if (pending === undefined) return;
    const answer = this.open(relayId, sealed);
    if (answer !== undefined && isAnswer(answer) && answer.id === relayId) pending.settle(answer as JSONRPCMessage);
  }

  /** A new relay id for a request of session `sessionId`: this instance, a nonce, and a MAC binding both to the session. */
  private newId(sessionId: string): string {
    const nonce = randomBytes(12).toString('base64url');
    return `${RELAY_FORM}.${this.instance}.${nonce}.${this.mac(sessionId, this.instance, nonce)}`;
  }

  /** The parts of `id` when it is a relay id of session `sessionId` (its MAC checked); undefined otherwise. */
  private parseId(id: string, sessionId: string): RelayId | undefined {
    if (id.length > 128) return undefined;
    const [form, instance, nonce, mac, extra] = id.split('.');
    if (
      form !== RELAY_FORM ||
      instance === undefined ||
      nonce === undefined ||
      mac === undefined ||
      extra !== undefined
    )
      return undefined;
    const expected = Buffer.from(this.mac(sessionId, instance, nonce));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return { instance, nonce, mac };
  }

  private mac(sessionId: string, instance: string, nonce: string): string {
    return createHmac('sha256', this.idKey)
      .update(`${sessionId}\0${instance}\0${nonce}`)
      .digest('base64url')
      .slice(0, 22);
  }

  /** `answer` sealed for another instance: AES-256-GCM, the relay id as associated data. */
  private seal(relayId: string, answer: Answer): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey, iv);
    cipher.setAAD(Buffer.from(relayId));
    const body = Buffer.concat([cipher.update(JSON.stringify(answer)), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  /** The answer `sealed` holds, if it was sealed for `relayId` with this deployment's key. */
  private open(relayId: string, sealed: string): unknown {
    try {
      const bytes = Buffer.from(sealed, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', this.sealKey, bytes.subarray(0, 12));
      decipher.setAAD(Buffer.from(relayId));
      decipher.setAuthTag(bytes.subarray(12, 28));
      return JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8'));
    } catch {
      return undefined;
    }
  }
}

/**
 * The kept member client's refusal of a member's request (the caller cannot receive it): every
 * server-to-client request but `ping` is answered `-32601` with `data.code: "relay_unavailable"`.
 */
export function refuseMemberRequests(client: Client, slug: string): Client {
  client.fallbackRequestHandler = (request) => Promise.reject(new RelayUnavailableError(request.method, slug));
  return client;
}
