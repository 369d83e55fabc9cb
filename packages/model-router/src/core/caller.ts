import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * Who is calling, as the host's authentication established it: a string unique to the caller, or
 * undefined. Default {@link defaultCallerId}.
 */
export type CallerIdResolver = (req: IncomingMessage) => string | undefined;

/** Reads `req.callerIdentity.subject`, which `@gw/identity-forwarding`'s `authenticate` sets. */
export const defaultCallerId: CallerIdResolver = (req) => {
  const subject = (req as IncomingMessage & { callerIdentity?: { subject?: unknown } }).callerIdentity?.subject;
  return typeof subject === 'string' ? subject : undefined;
};

/**
 * The `metadata.user_id` the provider sees for a request's end-user label: an opaque digest of
 * the authenticated caller and the label, so a caller can name its own end-users but can never
 * report itself as another caller's user.
 */
export function providerUserId(callerId: string | undefined, label: string): string {
  return createHash('sha256')
    .update(`${callerId ?? ''}\n${label}`)
    .digest('hex')
    .slice(0, 32);
}
