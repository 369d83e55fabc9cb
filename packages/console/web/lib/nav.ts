/** Moving between pages: the hash names the page (`#/keys`) and its parameters (`#/requests?user=u-1`). */

let renderer: () => Promise<void> = async () => undefined;

/** Sets what draws the page of the current hash (the router). */
export function setRenderer(render: () => Promise<void>): void {
  renderer = render;
}

/** Draws the current page again, with fresh data. */
export function rerender(): Promise<void> {
  return renderer();
}

/** Shows `hash`'s page, also when it is the one already in the address bar. */
export function navigate(hash: string): void {
  if (window.location.hash === hash) void renderer();
  else window.location.hash = hash;
}

/** The current page's name: `keys` for `#/keys?x=1`. */
export function pageName(): string {
  return window.location.hash.replace(/^#\/?/, '').split('?')[0] ?? '';
}

/** The current hash's parameters. */
export function hashParams(): URLSearchParams {
  return new URLSearchParams(window.location.hash.split('?')[1] ?? '');
}
