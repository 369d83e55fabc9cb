import { z } from 'zod';

/**
 * What the Anthropic Messages API accepts, as far as the conversion produces it: the shapes, and
 * the rules between fields the API enforces (sampling ranges, thinking budgets and what thinking
 * excludes, forced tools that exist, stop sequences with non-whitespace).
 */
const text = z.strictObject({
  type: z.literal('text'),
  text: z.string(),
  cache_control: z.object({ type: z.literal('ephemeral') }).optional(),
});
const block = z.union([
  text,
  z.strictObject({
    type: z.literal('image'),
    source: z.strictObject({
      type: z.literal('base64'),
      media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
      data: z.string(),
    }),
  }),
  z.strictObject({
    type: z.literal('tool_use'),
    id: z.string(),
    name: z.string(),
    input: z.record(z.string(), z.unknown()),
  }),
  z.strictObject({
    type: z.literal('tool_result'),
    tool_use_id: z.string(),
    content: z.union([z.string(), z.array(text)]),
  }),
  z.strictObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.strictObject({ type: z.literal('redacted_thinking'), data: z.string() }),
]);
const requestShape = z.strictObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z
    .array(z.strictObject({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(block)]) }))
    .min(1),
  system: z.array(text).min(1).optional(),
  stream: z.literal(true).optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.strictObject({ user_id: z.string() }).optional(),
  tools: z
    .array(
      z.strictObject({
        name: z.string(),
        description: z.string().optional(),
        input_schema: z.looseObject({ type: z.literal('object') }),
        cache_control: z.object({ type: z.literal('ephemeral') }).optional(),
      }),
    )
    .optional(),
  tool_choice: z
    .strictObject({
      type: z.enum(['auto', 'any', 'none', 'tool']),
      name: z.string().optional(),
      disable_parallel_tool_use: z.literal(true).optional(),
    })
    .optional(),
  top_k: z.number().optional(),
  thinking: z
    .union([
      z.strictObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024) }),
      z.strictObject({ type: z.literal('disabled') }),
    ])
    .optional(),
});

export const anthropicRequest = requestShape.superRefine((request, ctx) => {
  const problem = (message: string) => ctx.addIssue({ code: 'custom', message });
  if (request.temperature !== undefined && (request.temperature < 0 || request.temperature > 1))
    problem('temperature outside 0–1');
  if (request.top_p !== undefined && (request.top_p < 0 || request.top_p > 1)) problem('top_p outside 0–1');
  if (request.temperature !== undefined && request.top_p !== undefined) problem('temperature and top_p together');
  if (request.stop_sequences?.some((s) => s.trim() === '')) problem('a blank stop sequence');
  const choice = request.tool_choice;
  if (choice?.type === 'tool' && !request.tools?.some((tool) => tool.name === choice.name))
    problem('tool_choice names no tool');
  if (request.thinking?.type === 'enabled') {
    if (request.thinking.budget_tokens >= request.max_tokens) problem('thinking budget not under max_tokens');
    if (request.temperature !== undefined && request.temperature !== 1)
      problem('temperature other than 1 with thinking');
    if (request.top_p !== undefined && request.top_p < 0.95) problem('top_p under 0.95 with thinking');
    if (request.top_k !== undefined) problem('top_k with thinking');
    if (choice?.type === 'any' || choice?.type === 'tool') problem('a forced tool with thinking');
  }
});
