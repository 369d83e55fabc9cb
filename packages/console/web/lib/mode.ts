/**
 * The access mode banner shown above every page: the mode in force, where it comes from, a
 * warning when policies exist but are not applied, and (when the mode lives in the catalog and
 * the signed-in person may change it) a control to switch it.
 */
import { api, dataOf, SignedOutError } from './api.js';
import { el, say } from './dom.js';
import { formOf, showError, value } from './forms.js';
import { rerender } from './nav.js';
import { canAdmin } from './records.js';

const MODES: [string, string, string][] = [
  [
    'open',
    'Open',
    'every signed-in caller reaches every provider, MCP server and integration; policies are not applied.',
  ],
  [
    'report',
    'Report',
    'everything is let through, and each request the policies would refuse is marked "would deny" on the Requests page.',
  ],
  ['policies', 'Policies', 'a caller reaches only what the policies naming it allow; everything else is refused.'],
];

/** Where the mode comes from: the `source` of `GET /admin/v1/access/mode`. */
const SOURCES: Record<string, string> = {
  catalog: 'Set in the console (stored in the catalog; every instance follows within a second).',
  default:
    'The default: no mode has been set yet. Switching stores it in the catalog; every instance follows within a second.',
  environment: 'Set by GATEWAY_ACCESS_MODE: it cannot be switched here; change the variable and restart.',
  config: "Set by the config file's access.mode: it cannot be switched here; change the file and restart.",
};

/** The banner, or undefined when the gateway has no access mode route (nothing is shown then). */
export async function accessModeBanner(): Promise<HTMLElement | undefined> {
  let answer;
  try {
    answer = await api('GET', '/access/mode');
  } catch (failure) {
    if (failure instanceof SignedOutError) throw failure;
    return undefined;
  }
  if (answer.status >= 400) return undefined;
  const mode = String(answer.body.mode ?? '');
  const known = MODES.find(([m]) => m === mode);
  if (!known) return undefined;
  const source = String(answer.body.source ?? '');
  let policyCount: number | undefined = typeof answer.body.policies === 'number' ? answer.body.policies : undefined;
  if (policyCount === undefined) {
    const policies = await api('GET', '/policies');
    if (policies.status < 400) policyCount = dataOf(policies).length;
  }
  const banner = el(
    'section',
    { class: `mode-banner mode-${mode}`, 'aria-label': 'Access mode', id: 'access-mode' },
    el('p', {}, el('strong', { text: `Access mode: ${known[1]}` }), ` — ${known[2]}`),
  );
  if (SOURCES[source]) banner.append(el('p', { class: 'hint', text: SOURCES[source] }));
  // `policiesApplied` says whether the policies decide requests (only in `policies` mode).
  const applied = typeof answer.body.policiesApplied === 'boolean' ? answer.body.policiesApplied : mode === 'policies';
  if (policyCount !== undefined && policyCount > 0 && !applied) {
    const some = policyCount === 1 ? '1 policy exists' : `${policyCount} policies exist`;
    banner.append(
      el('p', {
        class: 'warning',
        role: 'note',
        text:
          mode === 'open'
            ? `${some} but ${policyCount === 1 ? 'is' : 'are'} not applied: in open mode every caller reaches everything. Switch to report to see what they would refuse, then to policies to enforce them.`
            : `${some} but ${policyCount === 1 ? 'is' : 'are'} only reported, not enforced: requests ${policyCount === 1 ? 'it' : 'they'} would refuse are let through and marked "would deny".`,
      }),
    );
  }
  if (mode === 'policies' && policyCount === 0) {
    banner.append(el('p', { class: 'warning', role: 'note', text: 'No policy exists: every caller is refused.' }));
  }
  // A mode stored in the catalog (or not set yet) can change; one set by the environment or the
  // config file cannot. Only an admin switches it (an operator gets 403 role_forbidden).
  const changeable =
    typeof answer.body.changeable === 'boolean' ? answer.body.changeable : source === 'catalog' || source === 'default';
  if (changeable && canAdmin()) {
    const form = formOf(
      'Switch access mode',
      [{ name: 'mode', label: 'Access mode', type: 'select', options: MODES.map(([m, l]) => [m, l]), value: mode }],
      'Switch',
      async (f) => {
        const next = value(f, 'mode');
        if (next === mode) return;
        if (
          next === 'policies' &&
          !window.confirm(
            'Switch to policies? Every caller that no policy names is refused at once, on every instance.',
          )
        )
          return;
        const saved = await api('PUT', '/access/mode', { mode: next });
        if (saved.status >= 400) {
          showError(f, saved);
          return;
        }
        say(`Access mode is now ${next}.`);
        await rerender();
      },
    );
    form.classList.add('mode-switch');
    banner.append(form);
  } else if (changeable) {
    banner.append(el('p', { class: 'hint', text: 'Only an admin can switch it.' }));
  }
  return banner;
}
