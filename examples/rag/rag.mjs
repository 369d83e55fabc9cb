// Retrieval-augmented generation through the gateway: retrieve passages from a Bedrock
// knowledge base (signed by the gateway), then ask a model with those passages in the prompt,
// through a client that has no custom host.
//
//   GATEWAY_URL=http://127.0.0.1:8787 GATEWAY_API_KEY=... KB_PROVIDER=@bedrock-kb \
//   KB_ID=KB123 KB_HOST=bedrock-agent-runtime.us-east-1.amazonaws.com \
//   MODEL=@anthropic/claude-sonnet-4-5 node examples/rag/rag.mjs "How long do refunds take?"
import OpenAI from 'openai';

/** Retrieves passages for `question` from the knowledge base, through the gateway. */
export async function retrieve({ gatewayUrl, apiKey, provider, knowledgeBaseId, customHost, question }) {
  const response = await fetch(`${gatewayUrl}/v1/knowledgebases/${encodeURIComponent(knowledgeBaseId)}/retrieve`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': apiKey,
      'x-gateway-provider': provider,
      'x-gateway-custom-host': customHost,
    },
    body: JSON.stringify({ retrievalQuery: { text: question } }),
  });
  if (!response.ok) throw new Error(`retrieve failed with ${response.status}: ${await response.text()}`);
  const { retrievalResults = [] } = await response.json();
  return retrievalResults.map((result) => result.content?.text).filter(Boolean);
}

/** Answers `question` from the knowledge base's passages. */
export async function answer(options) {
  const passages = await retrieve(options);
  const client = new OpenAI({ apiKey: options.apiKey, baseURL: `${options.gatewayUrl}/v1` });
  const completion = await client.chat.completions.create({
    model: options.model,
    max_tokens: 512,
    messages: [
      {
        role: 'system',
        content: `Answer only from these passages:\n\n${passages.map((p, i) => `[${i + 1}] ${p}`).join('\n')}`,
      },
      { role: 'user', content: options.question },
    ],
  });
  return { passages, answer: completion.choices[0]?.message.content ?? '' };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = process.env;
  const result = await answer({
    gatewayUrl: env.GATEWAY_URL ?? 'http://127.0.0.1:8787',
    apiKey: env.GATEWAY_API_KEY,
    provider: env.KB_PROVIDER,
    knowledgeBaseId: env.KB_ID,
    customHost: env.KB_HOST,
    model: env.MODEL,
    question: process.argv[2] ?? 'What does the knowledge base say?',
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
