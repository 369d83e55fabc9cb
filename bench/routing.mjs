// Routing across targets and Claude on Bedrock (CONTRACT section 17), each against the request it
// must not cost more than, on the bench's gateway, in the same interleaved rounds as the bare
// node:http proxy (features.mjs `sideBySide`):
// - `fallback`: a chat completion sent with a two-target fallback config whose first target
//   answers (B), against the same chat completion to that provider without a config (A);
// - `bedrock`: the same chat completion to `@<bedrock slug>/<inference profile id>`, answered by
//   the mock's Bedrock Runtime `POST /model/<id>/invoke` (JSON, as Bedrock answers it) (B),
//   against the chat completion to the `anthropic` provider on the mock's `/v1/messages` (A);
// - `same`: the request without a config measured twice in the same rounds (A against itself):
//   how far two identical subjects differ here, the resolution against which the fallback's
//   "no more CPU than without a config" is judged (as the access rows judge theirs).
// Before anything is measured, one request of each subject must be answered as the row says.
import { probe, sideBySide } from './features.mjs';
import { SIDE_BY_SIDE_HEAD, sideBySideLine, sideBySideTarget, spread, times, us } from './side-by-side-rows.mjs';

/** The Bedrock inference profile the Bedrock row names (Claude Sonnet 4.5, US profile). */
export const BEDROCK_MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

/** The text the mock answers every non-streamed Messages call (and Bedrock invoke) with. */
const MOCK_TEXT = 'The quick brown fox jumps over the lazy dog.';

/**
 * The routing rows' two comparisons. `at(path, body, headers)` is a request to the gateway with
 * the bench's API key; `provider` the `anthropic` provider's slug and `secondProvider` another
 * one on the same mock (the fallback's second target, never reached); `bedrockSlug` the `bedrock`
 * record whose `allowedHosts` is the mock. `c`: `{ latency, rounds, warm, cpu, cpuWarm, cpuRounds }`.
 */
export async function routingBenchmarks({ gateway, bare, mock, at, provider, secondProvider, bedrockSlug, c, log }) {
  const json = { 'content-type': 'application/json' };
  const chat = (model) =>
    JSON.stringify({
      model,
      max_tokens: 64,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say something.' },
      ],
    });
  const anthropicBody = JSON.stringify({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [{ role: 'user', content: 'Say something.' }],
  });
  const fallbackConfig = JSON.stringify({
    strategy: { mode: 'fallback' },
    targets: [{ provider: `@${provider}` }, { provider: `@${secondProvider}` }],
  });
  const single = at('/v1/chat/completions', chat(`@${provider}/claude-sonnet-4-5`));
  const withTargets = at('/v1/chat/completions', chat('claude-sonnet-4-5'), { 'x-gateway-config': fallbackConfig });
  const onBedrock = at('/v1/chat/completions', chat(`@${bedrockSlug}/${BEDROCK_MODEL}`));

  // Each subject answers as its row says: the mock's text, the fallback from its first target.
  for (const [name, target] of [
    ['single provider', single],
    ['two-target fallback', withTargets],
    ['Bedrock', onBedrock],
  ]) {
    const answer = await probe(target);
    const text = answer.body?.choices?.[0]?.message?.content;
    if (answer.status !== 200 || text !== MOCK_TEXT)
      throw new Error(
        `routing: the ${name} chat completion answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`,
      );
    if (target === withTargets) {
      const index = answer.headers.get('x-gateway-last-used-option-index');
      const used = answer.headers.get('x-gateway-provider-used');
      if (index !== '0' || used !== provider)
        throw new Error(
          `routing: the fallback was answered by target ${index} (${used}), not its first target (0, ${provider})`,
        );
    }
  }

  const subject = (label, target) => ({ label, pid: gateway.child.pid, target });
  const floor = {
    pid: bare.child.pid,
    target: { port: bare.port, path: '/v1/messages', body: anthropicBody, headers: json },
  };
  const direct = { port: mock.port, path: '/v1/messages', body: anthropicBody, headers: json };
  log('routing: two-target fallback, first target answers; Claude on Bedrock against the anthropic provider');
  return sideBySide(
    [
      {
        name: 'fallback',
        label: '/v1/chat/completions: a two-target fallback config whose first target answers, against no config',
        a: subject(`@${provider}, no config`, single),
        b: subject(`fallback @${provider} → @${secondProvider}`, withTargets),
        floor,
        direct,
      },
      {
        name: 'bedrock',
        label: `/v1/chat/completions: \`@${bedrockSlug}/${BEDROCK_MODEL}\` on a Bedrock Runtime mock (invoke, JSON), against the \`anthropic\` provider`,
        a: subject(`anthropic @${provider}`, single),
        b: subject(`bedrock @${bedrockSlug}`, onBedrock),
        floor,
        direct,
      },
      {
        name: 'same',
        label: '/v1/chat/completions without a config, against itself (the noise)',
        a: subject(`@${provider}, no config`, single),
        b: subject(`@${provider}, no config, again`, single),
        floor,
        direct,
      },
    ],
    c,
  );
}

/**
 * The routing rows of the targets table (issue #43's cost acceptance): CPU per request at 10
 * connections, the subject's over the request it is paired with, round by round (median, min –
 * max), with the added p50 at 1 connection beside it. A ratio whose reference read no CPU tick
 * (smoke counts) is infinite or NaN: the row says it was not measured.
 */
export function routingTargets(routing) {
  if (!routing) return [];
  return [
    fallbackTarget(routing),
    sideBySideTarget(
      'routing: Claude on Bedrock (`invoke`, SigV4), CPU per request against the same chat completion to the `anthropic` provider, 10 connections, same gateway and rounds',
      '≤ 1.10×',
      1.1,
      routing.bedrock,
    ),
  ];
}

/**
 * The fallback row: CPU per request against no config, met at ≤ 1.00× or within the difference of
 * the same request measured twice in the same rounds (`same`), when the run measured it: a ratio of
 * 1.00× cannot be told from the machine's own noise, which that comparison measures.
 */
function fallbackTarget(routing) {
  const same = routing.same;
  const noise = same?.ratio.cpu.median;
  const row = sideBySideTarget(
    'routing: a two-target fallback whose first target answers, CPU per request against the same chat completion without a config, 10 connections, same gateway and rounds',
    Number.isFinite(noise)
      ? '≤ 1.00×, or within the same request’s difference from itself in the same rounds'
      : '≤ 1.00×',
    1,
    routing.fallback,
  );
  if (!Number.isFinite(noise) || row.value === undefined) return row;
  row.measured += `; the same request against itself: ${spread(same.ratio.cpu, times)} CPU (${us(same.cpuMicrosPerRequest.b.median)} against ${us(same.cpuMicrosPerRequest.a.median)})`;
  row.met = row.value <= Math.max(1, noise);
  return row;
}

/** The routing comparisons in full: both subjects and the floor, in the same rounds. */
export function routingSection(report) {
  const r = report.routing;
  if (!r) return [];
  const c = report.counts.routing;
  return [
    `## Routing across targets and Claude on Bedrock (embedded; ${c.rounds} rounds of ${c.latency} requests at 1 connection, ${c.cpuRounds} rounds of ${c.cpu} at 10 connections)`,
    '',
    "Both rows run on the bench's gateway, their two subjects and the bare node:http proxy (the floor) in the same rounds, in rotating order, each round ending with the mock directly; ratios are B over A round by round (median, min – max). The fallback config names two `anthropic` providers on the same mock; the first answers, which the bench checks (`x-gateway-last-used-option-index: 0`) before measuring. The Bedrock mock answers `POST /model/<id>/invoke` with the same message as JSON, as Bedrock Runtime does, after checking the request is SigV4-signed for `bedrock`; the gateway reaches it through the `bedrock` record's `allowedHosts`. The third row measures the request without a config against itself, in the same rounds: the difference two identical subjects show on this machine, within which the fallback's ratio counts as met.",
    '',
    ...SIDE_BY_SIDE_HEAD,
    ...Object.values(r).map(sideBySideLine),
    '',
  ];
}
