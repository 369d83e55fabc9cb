import type { ResolvedMember } from './config';

/** A member left out of a merged list, as the host's warning and metric need it. */
export interface MemberUnavailable {
  /** The member's server slug (the metric's `server` label). */
  server: string;
  /** `timeout`: no answer within the member's `timeout_ms`; `error`: it failed. */
  reason: 'timeout' | 'error';
  /** What the member's request failed with (`reason: "error"`). Never shown to clients. */
  error?: unknown;
}

/** Asks one member; `signal` aborts when the member's time is up. */
export type AskMember<T> = (server: string, signal: AbortSignal) => Promise<T>;

/**
 * Asks every member at once and waits for all of them, each for at most its `timeoutMs`: the
 * answers in member order, `undefined` for a member that failed or did not answer in time (its
 * request is aborted, and `onUnavailable` is told). Never rejects.
 */
export function askMembers<T>(
  members: readonly ResolvedMember[],
  ask: AskMember<T>,
  onUnavailable?: (unavailable: MemberUnavailable) => void,
): Promise<(T | undefined)[]> {
  return Promise.all(
    members.map(
      (member) =>
        new Promise<T | undefined>((resolve) => {
          const controller = new AbortController();
          let settled = false;
          const leaveOut = (reason: MemberUnavailable['reason'], error?: unknown) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            if (reason === 'timeout') controller.abort(new Error(`${member.server} did not answer in time.`));
            onUnavailable?.(
              reason === 'error' ? { server: member.server, reason, error } : { server: member.server, reason },
            );
            resolve(undefined);
          };
          const timer = setTimeout(() => leaveOut('timeout'), member.timeoutMs);
          let asked: Promise<T>;
          try {
            asked = ask(member.server, controller.signal);
          } catch (error) {
            leaveOut('error', error);
            return;
          }
          Promise.resolve(asked).then(
            (answer) => {
              if (settled) return;
              settled = true;
              clearTimeout(timer);
              resolve(answer);
            },
            (error: unknown) => leaveOut('error', error),
          );
        }),
    ),
  );
}
