import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkServesMessages } from '../providers';
import { InvalidRequestError, ItemNotFoundError, ResponseNotFoundError } from '../core/errors';
import { requestConfig, runAcrossTargets } from './targets';
import { receivedBodyBytes } from '../core/json-body';
import type { RawStringPolicy } from '../core/json-reader';
import type { ReasoningSeal } from '../core/reasoning-seal';
import { responseOwner, type ResponsesStore, type StoredResponse } from '../core/responses-store';
import { MessageAssembler, messageEvents } from '../core/cache/answer';
import { IGNORED_PARAMS_HEADER, toAnthropicConversion } from '../providers/anthropic';
import {
  includesEncryptedReasoning,
  lowerResponsesRequest,
  readReasoningSummary,
  refuseUnsupportedResponsesFields,
  renameParam,
  responsesParam,
} from '../providers/anthropic/responses-request';
import { ResponsesStreamTranslator, responseIdOfItem, responseIdPart } from '../providers/anthropic/responses-stream';
import { MAX_CACHED_ANSWER_BYTES, lookUp, planCache, remember } from './cache-flow';
import { answerUpstreamError, callAnthropicMessages, startEventStream, type ChatContext } from './chat-completions';
import { anthropicUsage, gatewayLocals, sendJson } from './respond';
import { StreamWriter } from './stream-writer';
import { readUpstreamJson, startStreamSpan } from './upstream-call';
import { drainUpstream, pumpUpstreamEvents } from './upstream-events';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown): boolean => v !== undefined && v !== null;

/** What the Responses routes need besides the chat context. */
export interface ResponsesContext extends ChatContext {
  responses: ResponsesStore;
  seal: ReasoningSeal;
  /** Called with a failure to store a response (the answer is still given), for the host's log. */
  onStoreError?: (error: unknown) => void;
}

/**
 * The strings of a Responses body read raw when large (see `readJsonBody`): an `input_image`'s
 * `image_url` and an `input_file`'s `file_data`, where images and PDFs come as base64.
 */
export const RESPONSES_RAW_STRINGS: RawStringPolicy = (path) =>
  path.length === 5 &&
  path[0] === 'input' &&
  typeof path[1] === 'number' &&
  path[2] === 'content' &&
  typeof path[3] === 'number' &&
  (path[4] === 'image_url' || path[4] === 'file_data');

/** A response id as the gateway makes them. */
const RESPONSE_ID = /^resp_[0-9a-f]{32}$/;
/** Most stored responses one request's `item_reference`s may name. */
const MAX_REFERENCED_RESPONSES = 64;

function notFound(id: string, param: string | null): never {
  throw new ResponseNotFoundError(
    `No stored response ${id.slice(0, 64)} of this caller (unknown, deleted or expired).`,
    {
      param,
    },
  );
}

/** `input` with every `item_reference` replaced by the stored output item it names. */
async function resolveReferences(context: ResponsesContext, owner: string, input: unknown): Promise<unknown> {
  if (!Array.isArray(input) || !input.some((item) => isObject(item) && item.type === 'item_reference')) return input;
  const loaded = new Map<string, StoredResponse | undefined>();
  const resolved: unknown[] = [];
  for (const [index, item] of input.entries()) {
    if (!isObject(item) || item.type !== 'item_reference') {
      resolved.push(item);
      continue;
    }
    const param = `input[${index}].id`;
    const responseId = responseIdOfItem(item.id);
    if (responseId === undefined)
      throw new ItemNotFoundError('item_reference names no item this gateway gave out.', { param });
    if (!loaded.has(responseId)) {
      if (loaded.size >= MAX_REFERENCED_RESPONSES)
        throw new InvalidRequestError(
          `item_reference items may name items of at most ${MAX_REFERENCED_RESPONSES} responses.`,
          { param },
        );
      loaded.set(responseId, await context.responses.get(owner, responseId));
    }
    const found = loaded.get(responseId)?.items.find((stored) => stored.id === item.id);
    if (found === undefined)
      throw new ItemNotFoundError('item_reference names no item of a stored response of this caller.', { param });
    resolved.push(found);
  }
  return resolved;
}

/** The request's fields a response object repeats. */
function echoOf(body: Json, store: boolean): Json {
  const reasoning = isObject(body.reasoning) ? body.reasoning : {};
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: isObject(body.metadata) ? body.metadata : {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    store,
    temperature: body.temperature ?? null,
    text: isObject(body.text) ? body.text : { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_p: body.top_p ?? null,
    user: body.user ?? null,
  };
}

/** Runs `POST /v1/responses`, streamed or not. */
export async function runCreateResponse(
  context: ResponsesContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  if (!isObject(body)) throw new InvalidRequestError('The request body must be a JSON object.', { param: 'body' });
  refuseUnsupportedResponsesFields(body);
  const config = requestConfig(context, req);
  if (present(body.store) && typeof body.store !== 'boolean')
    throw new InvalidRequestError('store must be a boolean.', { param: 'store' });
  const store = body.store !== false;
  const owner = responseOwner(req, context.callerId);
  const caller = owner;
  let previousItems: Json[] = [];
  if (present(body.previous_response_id)) {
    const id = body.previous_response_id;
    if (typeof id !== 'string')
      throw new InvalidRequestError('previous_response_id must be a string.', { param: 'previous_response_id' });
    const previous = RESPONSE_ID.test(id) ? await context.responses.get(owner, id) : undefined;
    if (previous === undefined) notFound(id, 'previous_response_id');
    previousItems = previous.items;
  }
  const input = await resolveReferences(context, owner, body.input);
  // The stored items go to the provider with the body: the limits count them too.
  const storedBytes =
    (previousItems.length > 0 ? Buffer.byteLength(JSON.stringify(previousItems)) : 0) +
    (input !== body.input ? Buffer.byteLength(JSON.stringify(input)) : 0);
  const ignored: string[] = [];
  const includeEncrypted = includesEncryptedReasoning(body, ignored);
  const id = `resp_${randomBytes(16).toString('hex')}`;
  const createdAt = Math.floor(Date.now() / 1000);
  const newItems: Json[] =
    typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : (input as Json[]);
  /** The translator of the answer of `model` (the target that answers). */
  const translatorFor = (
    model: string,
    jsonTool: Awaited<ReturnType<typeof toAnthropicConversion>>['jsonTool'],
    stream: boolean,
  ) =>
    new ResponsesStreamTranslator({
      id,
      createdAt,
      model,
      jsonTool,
      includeEncrypted,
      summary: readReasoningSummary(body),
      seal: (blocks) => context.seal.seal(blocks, caller),
      echo: echoOf(body, store),
      frames: stream,
    });
  /** Keeps the finished response for `GET` and `previous_response_id`; a failure is reported, not answered. */
  const keep = async (translator: ResponsesStreamTranslator) => {
    if (!store || !translator.completed) return;
    try {
      await context.responses.put(owner, id, {
        response: translator.response(),
        items: [...previousItems, ...newItems, ...translator.storedOutput],
      });
    } catch (error) {
      context.onStoreError?.(error);
    }
  };
  let plan: ReturnType<typeof planCache>;
  const answering = await runAcrossTargets(context, req, res, body, config, {
    async prepare({ provider, model, body: targetBody }) {
      checkServesMessages(provider, model, 'responses');
      const lowered = lowerResponsesRequest(
        { ...(targetBody as Record<string, unknown>), input },
        { previousItems, openReasoning: (sealed, param) => context.seal.open(sealed, caller, param) },
      );
      let conversion;
      try {
        conversion = await toAnthropicConversion(lowered.chatBody, {
          model,
          callerId: context.callerId(req),
          defaultMaxTokens: provider.defaultMaxTokens,
        });
      } catch (error) {
        throw renameParam(error, lowered.messageParams);
      }
      const ignoredParams = [
        ...lowered.ignoredParams,
        ...ignored,
        ...conversion.ignoredParams.map((p) => responsesParam(p, lowered.messageParams)),
      ];
      if (ignoredParams.length > 0) res.setHeader(IGNORED_PARAMS_HEADER, ignoredParams.join(', '));
      return conversion;
    },
    async begin({ request, jsonTool }, { provider, model, config: targetConfig }) {
      // Limits (CONTRACT section 14): the largest cost is reserved before the cache and the provider.
      if (context.admit !== undefined)
        await context.admit(req, res, {
          route: 'responses',
          provider: provider.slug,
          model,
          maxTokens: typeof request.max_tokens === 'number' ? request.max_tokens : 0,
          bodyBytes: receivedBodyBytes(req) + storedBytes,
        });
      // The Anthropic request decides the answer: it is what the cache key covers.
      plan = planCache(context.cache, req, res, targetConfig, { route: 'responses', provider, model, body: request });
      const cached = plan && (await lookUp(context.cache, plan, res));
      if (!cached) return false;
      const stream = request.stream === true;
      const translator = translatorFor(model, jsonTool, stream);
      let frames = '';
      for (const [event, data] of messageEvents(cached.message)) frames += translator.pushEvent(event, data);
      await keep(translator);
      if (!stream) {
        sendJson(res, 200, translator.response());
        return true;
      }
      startEventStream(res);
      res.end(frames + translator.finalFrame());
      return true;
    },
    call: ({ request }, { provider, model, config: targetConfig }) =>
      callAnthropicMessages(context, req, res, {
        provider,
        config: targetConfig,
        request,
        model,
        stream: request.stream === true,
      }),
  });
  if (answering === undefined) return;
  const { response } = answering;
  const stream = answering.prepared.request.stream === true;
  const translator = translatorFor(answering.attempt.model, answering.prepared.jsonTool, stream);
  const locals = gatewayLocals(res);
  if (response.statusCode >= 400) return answerUpstreamError(res, response);
  if (!stream) {
    const message = await readUpstreamJson(response.body);
    locals.usage = anthropicUsage(message.usage);
    if (typeof message.model === 'string') locals.responseModel = message.model.slice(0, 256);
    for (const [event, data] of messageEvents(message)) translator.pushEvent(event, data);
    await keep(translator);
    sendJson(res, 200, translator.response());
    remember(context.cache, plan, message);
    return;
  }
  const assembler = plan ? new MessageAssembler(MAX_CACHED_ANSWER_BYTES) : undefined;
  startEventStream(res);
  const upstream = response.body;
  const writer = new StreamWriter(res, upstream, () => (locals.firstByteAt ??= performance.now()));
  writer.open();
  const { oversized, idle } = await pumpUpstreamEvents(upstream, writer, startStreamSpan(res), {
    onEvent(event, data) {
      assembler?.push(data);
      writer.write(translator.push(event, data));
    },
    done: () => translator.done,
  });
  locals.usage = anthropicUsage(translator.reportedUsage);
  locals.responseModel = translator.reportedModel.slice(0, 256);
  if (translator.completed) {
    await keep(translator);
    writer.write(translator.finalFrame());
  } else if (!translator.done) {
    locals.errorCode = oversized ? 'upstream_invalid_response' : idle ? 'upstream_timeout' : 'upstream_stream_ended';
    if (idle) locals.streamIdleTimeout = true;
    writer.write(
      translator.abortFrame(
        oversized
          ? 'The provider sent a stream event larger than the gateway reads.'
          : idle
            ? `The provider sent nothing for ${context.limits.streamIdleTimeoutMs} ms; the stream was ended.`
            : 'The provider ended the stream early.',
      ),
    );
  }
  writer.end();
  drainUpstream(upstream);
  if (assembler) remember(context.cache, plan, assembler.result());
}

/** Runs `GET /v1/responses/<id>`: the caller's stored response. */
export async function runGetResponse(context: ResponsesContext, req: IncomingMessage, res: ServerResponse, id: string) {
  const stored = RESPONSE_ID.test(id)
    ? await context.responses.get(responseOwner(req, context.callerId), id)
    : undefined;
  if (stored === undefined) notFound(id, null);
  sendJson(res, 200, stored.response);
}

/** Runs `DELETE /v1/responses/<id>`: deletes the caller's stored response. */
export async function runDeleteResponse(
  context: ResponsesContext,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
) {
  const deleted = RESPONSE_ID.test(id) && (await context.responses.delete(responseOwner(req, context.callerId), id));
  if (!deleted) notFound(id, null);
  sendJson(res, 200, { id, object: 'response.deleted', deleted: true });
}

/** Most input items one page of `GET /v1/responses/<id>/input_items` lists (`limit`, OpenAI's range). */
const MAX_INPUT_ITEMS_PAGE = 100;

/**
 * An input item as listed: its own `id`, or one derived from the response and its place
 * (`in_<response part>_<n>`), and a message's string content as one text part, as OpenAI lists them.
 */
function listedInputItem(item: Json, responseId: string, index: number): Json {
  const listed: Json = { ...item };
  if (typeof listed.id !== 'string') listed.id = `in_${responseIdPart(responseId)}_${index}`;
  if ((listed.type ?? 'message') === 'message' && typeof listed.content === 'string') {
    listed.type = 'message';
    listed.content = [{ type: listed.role === 'assistant' ? 'output_text' : 'input_text', text: listed.content }];
  }
  return listed;
}

/** Reads `limit`, `order` and `after` of an input items query; throws `400 invalid_request` naming the parameter. */
function inputItemsQuery(url: string | undefined): { limit: number; order: 'asc' | 'desc'; after?: string } {
  const query = new URLSearchParams((url ?? '').split('?')[1] ?? '');
  const limitText = query.get('limit');
  const limit = limitText === null ? 20 : Number(limitText);
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_INPUT_ITEMS_PAGE))
    throw new InvalidRequestError(`limit must be a whole number from 1 to ${MAX_INPUT_ITEMS_PAGE}, for example 20.`, {
      param: 'limit',
    });
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc')
    throw new InvalidRequestError('order must be "asc" or "desc".', { param: 'order' });
  const after = query.get('after') ?? undefined;
  return { limit, order, after: after?.slice(0, 128) };
}

/**
 * Runs `GET /v1/responses/<id>/input_items`: the items the caller's stored response took as input
 * (those of the response it continued included), in OpenAI's list shape, newest first unless
 * `order=asc`, `limit` (1–100, default 20) at a time after the item `after`.
 */
export async function runListInputItems(
  context: ResponsesContext,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
) {
  const query = inputItemsQuery(req.url);
  const stored = RESPONSE_ID.test(id)
    ? await context.responses.get(responseOwner(req, context.callerId), id)
    : undefined;
  if (stored === undefined) notFound(id, null);
  const outputs = Array.isArray(stored.response.output) ? stored.response.output.length : 0;
  const inputs = stored.items
    .slice(0, Math.max(0, stored.items.length - outputs))
    .map((item, index) => listedInputItem(item, id, index));
  if (query.order === 'desc') inputs.reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = inputs.findIndex((item) => item.id === query.after);
    if (at === -1) throw new InvalidRequestError('after names no input item of this response.', { param: 'after' });
    start = at + 1;
  }
  const data = inputs.slice(start, start + query.limit);
  sendJson(res, 200, {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + query.limit < inputs.length,
  });
}
