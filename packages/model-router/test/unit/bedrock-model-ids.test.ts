import {
  anthropicModelOf,
  foundationModelOf,
  isBedrockAnthropicModel,
  mapBedrockException,
  exceptionName,
} from '../../src';

describe('Bedrock model ids of Anthropic models', () => {
  it.each([
    [
      'anthropic.claude-3-5-sonnet-20240620-v1:0',
      'claude-3-5-sonnet-20240620',
      'anthropic.claude-3-5-sonnet-20240620-v1:0',
    ],
    [
      'anthropic.claude-3-5-sonnet-20241022-v2:0',
      'claude-3-5-sonnet-20241022',
      'anthropic.claude-3-5-sonnet-20241022-v2:0',
    ],
    [
      'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'claude-sonnet-4-5-20250929',
      'anthropic.claude-sonnet-4-5-20250929-v1:0',
    ],
    [
      'eu.anthropic.claude-haiku-4-5-20251001-v1:0',
      'claude-haiku-4-5-20251001',
      'anthropic.claude-haiku-4-5-20251001-v1:0',
    ],
    [
      'apac.anthropic.claude-3-haiku-20240307-v1:0',
      'claude-3-haiku-20240307',
      'anthropic.claude-3-haiku-20240307-v1:0',
    ],
    [
      'global.anthropic.claude-opus-4-1-20250805-v1:0',
      'claude-opus-4-1-20250805',
      'anthropic.claude-opus-4-1-20250805-v1:0',
    ],
    [
      'us-gov.anthropic.claude-3-haiku-20240307-v1:0',
      'claude-3-haiku-20240307',
      'anthropic.claude-3-haiku-20240307-v1:0',
    ],
    [
      'anthropic.claude-3-haiku-20240307-v1:0:200k',
      'claude-3-haiku-20240307',
      'anthropic.claude-3-haiku-20240307-v1:0:200k',
    ],
    [
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'claude-sonnet-4-5-20250929',
      'anthropic.claude-sonnet-4-5-20250929-v1:0',
    ],
    [
      'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0',
      'claude-3-haiku-20240307',
      'anthropic.claude-3-haiku-20240307-v1:0',
    ],
  ])('%s names %s (foundation model %s)', (id, model, foundation) => {
    expect(anthropicModelOf(id)).toBe(model);
    expect(isBedrockAnthropicModel(id)).toBe(true);
    expect(foundationModelOf(id)).toBe(foundation);
  });

  it.each([
    'claude-sonnet-4-5',
    'meta.llama3-70b-instruct-v1:0',
    'amazon.titan-text-express-v1',
    'us.anthropic.claude-sonnet-4-5-20250929',
    'xanthropic.claude-3-haiku-20240307-v1:0',
    `anthropic.claude-${'x'.repeat(300)}-v1:0`,
  ])('%s names no Anthropic model', (id) => {
    expect(anthropicModelOf(id)).toBeUndefined();
    expect(isBedrockAnthropicModel(id)).toBe(false);
  });
});

describe('Bedrock exception names', () => {
  it('reads x-amzn-errortype, a body __type, and a stream exception-type in lower camel case', () => {
    expect(exceptionName('ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/')).toBe(
      'ThrottlingException',
    );
    expect(exceptionName(undefined, { __type: 'com.amazon.coral.validate#ValidationException' })).toBe(
      'ValidationException',
    );
    expect(exceptionName('modelStreamErrorException')).toBe('ModelStreamErrorException');
    expect(exceptionName(undefined, {})).toBeUndefined();
    expect(exceptionName('<script>')).toBeUndefined();
  });

  it('keeps the status of an exception it does not know, with the type of that status', () => {
    expect(mapBedrockException('SomethingNewException', 409)).toEqual({ status: 409, type: 'api_error' });
    expect(mapBedrockException(undefined, 429)).toEqual({ status: 429, type: 'rate_limit_error' });
    expect(mapBedrockException(undefined, 200)).toEqual({ status: 502, type: 'api_error' });
    expect(mapBedrockException('toString', 400)).toEqual({ status: 400, type: 'invalid_request_error' });
  });
});
