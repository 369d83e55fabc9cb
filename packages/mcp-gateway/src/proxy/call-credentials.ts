import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { StreamNeedsConnectionError, type GatewayIdentity } from '@gw/identity-forwarding/identity';
import { readMcpRequest, type McpRequestMessages } from '../gate/tool-gate';
import {
  CONNECTION_REQUIRED_CODE,
  credentialErrorAnswer,
  hasJsonRpcForm,
  type UpstreamCredential,
  type UpstreamCredentialSource,
} from '../upstream-credentials/upstream-credentials';
import { locals, type ProxyState } from './proxy-state';

/** Sets a server credential's headers on the upstream request, over any of the same name. */
export function setCredentialHeaders(headers: OutgoingHttpHeaders, credential: UpstreamCredential): void {
  for (const [name, value] of Object.entries(credential.headers)) headers[name.toLowerCase()] = value;
}

/**
 * Sends a call with its server credential: at once when the source holds it, else once it has
 * it; a source's refusal is answered by {@link credentialFailed}.
 */
export function withCredential(
  source: UpstreamCredentialSource,
  identity: GatewayIdentity,
  slug: string,
  req: Request,
  res: Response,
  state: ProxyState,
  send: () => void,
): void {
  const apply = (credential: UpstreamCredential): void => {
    if (res.destroyed) return;
    state.credential = credential;
    setCredentialHeaders(req.headers as OutgoingHttpHeaders, credential);
    send();
  };
  const failed = (error: unknown): void => credentialFailed(error, req, res, state);
  let credential: UpstreamCredential | Promise<UpstreamCredential>;
  try {
    credential = source.credential(identity, slug);
  } catch (error) {
    failed(error);
    return;
  }
  if (typeof (credential as Promise<UpstreamCredential>).then === 'function')
    (credential as Promise<UpstreamCredential>).then(apply, failed);
  else apply(credential as UpstreamCredential);
}

/**
 * Answers a call whose server credential failed: a POST with its JSON-RPC form, one error per
 * request of the body (HTTP 200; `202` for notifications only); a GET or DELETE for want of a
 * connection with `405`; anything else with the error itself.
 */
export function credentialFailed(error: unknown, req: Request, res: ServerResponse, state: ProxyState): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  if (hasJsonRpcForm(error)) {
    if (req.method !== 'POST') {
      state.next(
        error.code === CONNECTION_REQUIRED_CODE
          ? new StreamNeedsConnectionError('Connect this MCP server first: the next request says how.')
          : error,
      );
      return;
    }
    const body = state.body ?? state.readAhead;
    if (body !== undefined) {
      let read: McpRequestMessages;
      try {
        read = readMcpRequest(body);
      } catch (unreadable) {
        state.next(unreadable);
        return;
      }
      const answer = credentialErrorAnswer(read, error.jsonRpc);
      locals(res).upstreamCredentialError = error.code;
      if (answer === undefined) {
        res.statusCode = 202;
        res.end();
        return;
      }
      res.statusCode = 200;
      res.setHeader('content-type', 'application/json');
      res.setHeader('content-length', Buffer.byteLength(answer));
      res.end(answer);
      return;
    }
  }
  state.next(error);
}
