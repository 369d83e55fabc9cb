/**
 * The hook through which a host gives MCP servers credentials of their own (CONTRACT section 15:
 * a user's OAuth token at the server, a token exchanged at the identity provider, shared service
 * headers). The proxy asks it before each call, sends what it answers, and on the server's `401`
 * asks once more and retries once. What the hook refuses with a JSON-RPC form (a connection the
 * user must make, an exchange the identity provider refused) is answered to each JSON-RPC request
 * of the body, never forwarded.
 */
import type { GatewayIdentity } from '@gw/identity-forwarding/identity';
import type { JsonRpcMessage, McpRequestMessages } from '../gate/tool-gate';

/** The `code` of a credential failure that asks the user to connect the server (`-32042`). */
export const CONNECTION_REQUIRED_CODE = 'connection_required';

/** The headers one call sends to its server, and what to do when the server refuses them. */
export interface UpstreamCredential {
  /** Header name (lower case) → value, set on the upstream request over any the client sent. Secret values. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Called when the server answered `401` to a request that carried {@link headers}: resolves with
   * the credential to retry with, or rejects (an {@link UpstreamCredentialError}: the connection
   * ended, say). `final` is true on the retry's own `401`: the source then ends what it holds and
   * rejects. Absent: a `401` is passed to the client as it is.
   */
  readonly rejected?: (final: boolean) => Promise<UpstreamCredential>;
}

/** A source of server credentials, asked by the proxy for every call to a server it applies to. */
export interface UpstreamCredentialSource {
  /** Whether calls to the server `slug` carry a credential from this source. Must not wait. */
  appliesTo(slug: string): boolean;
  /**
   * The credential of this caller for the server `slug`: returned at once when the source holds it
   * (the common case, which costs no promise), else a promise. Throws or rejects with an
   * {@link UpstreamCredentialError} (or any error with `status` and `code`) when there is none.
   */
  credential(identity: GatewayIdentity, slug: string): UpstreamCredential | Promise<UpstreamCredential>;
}

/** The JSON-RPC error object a credential failure answers each JSON-RPC request with. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * An error of a credential source: `status` and `code` as every gateway error, and `jsonRpc`, the
 * JSON-RPC error a POST of JSON-RPC requests is answered with instead (HTTP 200).
 */
export interface UpstreamCredentialError extends Error {
  readonly status: number;
  readonly code: string;
  readonly jsonRpc?: JsonRpcErrorObject;
}

/** Whether `error` carries a JSON-RPC form ({@link UpstreamCredentialError.jsonRpc}). */
export function hasJsonRpcForm(error: unknown): error is UpstreamCredentialError & { jsonRpc: JsonRpcErrorObject } {
  const form = (error as { jsonRpc?: unknown } | null)?.jsonRpc;
  return (
    typeof form === 'object' &&
    form !== null &&
    typeof (form as JsonRpcErrorObject).code === 'number' &&
    typeof (form as JsonRpcErrorObject).message === 'string'
  );
}

/** A JSON-RPC id as it may be answered: a string, a number or null. */
function answerableId(id: unknown): string | number | null {
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** Whether a message is a JSON-RPC request (a method and an id), which gets an answer. */
function isRequest(message: JsonRpcMessage): boolean {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof message.method === 'string' &&
    Object.hasOwn(message, 'id') &&
    message.id !== null
  );
}

/**
 * The gateway's answer to a body whose server credential failed with `error`: the JSON-RPC error to
 * each request of it (one object, or an array for a batch), or undefined when the body holds no
 * request (notifications and responses only: accepted with `202` and dropped).
 */
export function credentialErrorAnswer(read: McpRequestMessages, error: JsonRpcErrorObject): string | undefined {
  const answers = read.list
    .filter(isRequest)
    .map((message) => ({ jsonrpc: '2.0', id: answerableId(message.id), error }));
  if (answers.length === 0) return undefined;
  return JSON.stringify(read.batch ? answers : answers[0]);
}
