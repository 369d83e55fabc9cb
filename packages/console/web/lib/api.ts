/**
 * The console's one back end: the admin API through `/console/api/…`, as the signed-in admin.
 * Holds the session the page knows about (its CSRF token and what the gateway offers).
 */
import type { Json } from './dom.js';

/** An answer of the admin API: its status and JSON body. */
export interface Answer {
  status: number;
  body: Json;
}

/** The `error` object of a refused request (CONTRACT section 7). */
export interface ApiError {
  message?: string;
  code?: string;
  param?: string | null;
}

/** What the page knows of its session; `csrfToken` is empty while signed out. */
export const session = {
  csrfToken: '',
  /** The gateway has the "Test" buttons' back end. */
  tests: false,
  /** Who is signed in, as the audit log names them. */
  actor: '',
  /** The signed-in person's role (admin, operator, viewer); admin when the gateway does not say. */
  role: 'admin',
};

/** Fills `session` from a `/console/session` answer. */
export function startSession(body: Json): void {
  session.csrfToken = String(body.csrfToken ?? '');
  session.tests = body.tests === true;
  session.actor = String(body.actor ?? '');
  session.role = typeof body.role === 'string' ? body.role : 'admin';
}

/** Thrown by {@link api} when the session has ended: the sign-in page is showing. */
export class SignedOutError extends Error {}

let onSignedOut: (write: boolean) => void = () => undefined;

/** What to do when an answer says the session has ended (the router shows the sign-in page). */
export function whenSignedOut(handler: (write: boolean) => void): void {
  onSignedOut = handler;
}

/** Calls the admin API; a `401` ends the session on the page and throws {@link SignedOutError}. */
export async function api(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`/console/api${path}`, {
    method,
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrfToken },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401) {
    session.csrfToken = '';
    onSignedOut(method !== 'GET');
    throw new SignedOutError('signed out');
  }
  const text = await res.text();
  let parsed: Json = {};
  try {
    parsed = text ? (JSON.parse(text) as Json) : {};
  } catch {
    parsed = { error: { message: `The gateway answered ${res.status} without JSON.`, code: 'invalid_answer' } };
  }
  return { status: res.status, body: parsed };
}

/** The `data` array of a list answer; empty when the answer is not a list. */
export function dataOf(answer: Answer): Json[] {
  return Array.isArray(answer.body.data) ? (answer.body.data as Json[]) : [];
}

/** The error of a refused answer. */
export function errorOf(answer: Answer): ApiError {
  return (answer.body.error ?? {}) as ApiError;
}
