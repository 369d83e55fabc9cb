/**
 * The router: draws the page the hash names, with the access mode banner, after making sure the
 * session is alive. When the session ends, the sign-in page shows in place (the address stays), so
 * signing in again returns to the same page, with an unsent form as it was.
 */
import { SignedOutError, session, startSession, whenSignedOut } from './api.js';
import { draftHash, keepDraft, restoreDraft } from './drafts.js';
import { el, heading, main } from './dom.js';
import { formOf, showError, submitting } from './forms.js';
import { accessModeBanner } from './mode.js';
import { navigate, pageName, setRenderer } from './nav.js';

/** A page: its elements, built from the admin API's answers. */
export type Page = () => Promise<HTMLElement[]>;

const nav = document.getElementById('nav') as HTMLElement;
const FIRST_PAGE = 'models';

let pages = new Map<string, Page>();
let generation = 0;
/** The session ended while the page was open (rather than a first visit). */
let expired = false;

/** Starts the console: `routes` maps each page name (`#/<name>`) to its page. */
export function startRouter(routes: Map<string, Page>): void {
  pages = routes;
  setRenderer(render);
  whenSignedOut((write) => {
    expired = true;
    if (write && submitting) keepDraft(submitting, window.location.hash);
    showSignIn();
  });
  (document.getElementById('sign-out') as HTMLButtonElement).addEventListener('click', () => {
    void fetch('/console/session', {
      method: 'DELETE',
      credentials: 'same-origin',
      headers: { 'x-csrf-token': session.csrfToken },
    }).then(() => {
      session.csrfToken = '';
      navigate('#/sign-in');
    });
  });
  window.addEventListener('hashchange', () => void render());
  void render();
}

async function render(): Promise<void> {
  const mine = ++generation;
  const name = pageName() || FIRST_PAGE;
  if (!session.csrfToken) {
    if (!(await restoreSession())) {
      if (mine === generation) showSignIn();
      return;
    }
    // Back from the OpenID Provider (the callback opens /console/): to the page the person left.
    const back = returnHash();
    if (back !== undefined && (name === FIRST_PAGE || name === 'sign-in') && back !== window.location.hash) {
      navigate(back);
      return;
    }
  }
  if (name === 'sign-in') {
    navigate(`#/${FIRST_PAGE}`);
    return;
  }
  const page = pages.get(name) ?? (pages.get(FIRST_PAGE) as Page);
  nav.hidden = false;
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  try {
    const [banner, content] = await Promise.all([accessModeBanner(), page()]);
    if (mine !== generation) return;
    const [first, ...rest] = content;
    main.replaceChildren(...(first ? [first] : []), ...(banner ? [banner] : []), ...rest);
    document.title = `${main.querySelector('h1')?.textContent ?? 'Console'} · Gateway console`;
    main.focus();
    const hash = window.location.hash;
    if (draftHash() === hash) await restoreDraft(hash);
  } catch (failure) {
    if (failure instanceof SignedOutError) return; // the sign-in page is showing
    if (mine === generation)
      main.replaceChildren(
        heading('Gateway console'),
        el('p', { class: 'error', role: 'alert', text: 'This page could not be shown: reload to try again.' }),
      );
  }
}

async function restoreSession(): Promise<boolean> {
  const res = await fetch('/console/session', { credentials: 'same-origin' });
  if (!res.ok) return false;
  startSession((await res.json()) as Record<string, unknown>);
  return true;
}

/** The sign-in page, in place of the current page; the navigation is hidden while signed out. */
function showSignIn(): void {
  nav.hidden = true;
  const form = formOf(
    'Sign in',
    [
      {
        name: 'credential',
        label: 'Admin key',
        type: 'password',
        required: true,
        autocomplete: 'current-password',
        hint: 'GATEWAY_ADMIN_KEY, or an identity-provider token with the admin claim.',
      },
    ],
    'Sign in',
    async (f) => {
      const res = await fetch('/console/session', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ credential: (f.elements.namedItem('credential') as HTMLInputElement).value }),
      });
      const body = (await res.json()) as Record<string, unknown>;
      if (!res.ok) {
        showError(f, { status: res.status, body });
        return;
      }
      startSession(body);
      const here = pageName();
      navigate(here === '' || here === 'sign-in' ? `#/${FIRST_PAGE}` : window.location.hash);
    },
  );
  const returning = expired && pageName() !== '' && pageName() !== 'sign-in';
  const provider = el('div', { id: 'oidc-sign-in' });
  main.replaceChildren(
    heading('Gateway console'),
    ...(returning ? [el('p', { class: 'hint', text: 'Your session has ended: sign in to return to this page.' })] : []),
    provider,
    form,
  );
  document.title = 'Sign in · Gateway console';
  void offerProviderSignIn(provider);
}

/** Where the page was when the person left to sign in at the OpenID Provider (this tab only). */
const RETURN_KEY = 'gw-console-return';

/**
 * "Sign in with <provider>" above the admin key form, when `GET /console/oidc` says the gateway
 * signs people in at the company's OpenID Provider. The link goes to the fixed
 * `/console/oidc/start`; the provider's callback opens the console signed in, and the page
 * returns to where it was.
 */
async function offerProviderSignIn(slot: HTMLElement): Promise<void> {
  let answer: Record<string, unknown>;
  try {
    const res = await fetch('/console/oidc', { credentials: 'same-origin' });
    if (!res.ok) return;
    answer = (await res.json()) as Record<string, unknown>;
  } catch {
    return; // no provider sign-in: the admin key form stays alone
  }
  if (answer.enabled !== true || typeof answer.name !== 'string' || !slot.isConnected) return;
  const link = el('a', { class: 'button primary', href: '/console/oidc/start', text: `Sign in with ${answer.name}` });
  link.addEventListener('click', () => {
    const here = pageName();
    if (here !== '' && here !== 'sign-in') sessionStorage.setItem(RETURN_KEY, window.location.hash);
  });
  slot.replaceChildren(
    el('p', {}, link),
    el('p', { class: 'hint', text: 'Or sign in with the admin key (for automation and the first start):' }),
  );
}

/** The page to return to after signing in at the OpenID Provider (read once), or undefined. */
function returnHash(): string | undefined {
  const hash = sessionStorage.getItem(RETURN_KEY);
  sessionStorage.removeItem(RETURN_KEY);
  return hash !== null && /^#\/[a-z-]{1,32}(\?.{0,2000})?$/.test(hash) ? hash : undefined;
}
