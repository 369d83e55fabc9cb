/**
 * Errors of the model router. One class per failure, each with a stable `code`, the HTTP
 * `status` it is answered with and an OpenAI-style `type`. Messages never contain secrets.
 */

/** OpenAI-style error types used in the `type` field of rendered errors. */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'api_error'
  | 'timeout_error';

/** Base class of every error the model router produces itself. */
export abstract class ModelRouterError extends Error {
  /** Stable, machine-readable code (snake_case). */
  abstract readonly code: string;
  /** HTTP status the error is answered with. */
  abstract readonly status: number;
  /** OpenAI-style error type. */
  readonly type: ErrorType = 'invalid_request_error';
  /** The request field the error is about, when there is one (OpenAI `param`). */
  readonly param: string | null;
  /** Extra response headers, such as `retry-after`. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: string, options: { param?: string | null; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = new.target.name;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
  }
}

/** The request body is not valid JSON. */
export class InvalidJsonError extends ModelRouterError {
  readonly code = 'invalid_json';
  readonly status = 400;
}

/** The request body is JSON nested deeper than the route accepts (`maxJsonDepth`). */
export class JsonTooDeepError extends ModelRouterError {
  readonly code = 'json_too_deep';
  readonly status = 400;
}

/** The request body is larger than the route accepts. */
export class BodyTooLargeError extends ModelRouterError {
  readonly code = 'body_too_large';
  readonly status = 413;
}

/** The request body is compressed in an encoding other than gzip, deflate or br. */
export class UnsupportedContentEncodingError extends ModelRouterError {
  readonly code = 'unsupported_content_encoding';
  readonly status = 415;
}

/** The request body is not sent as JSON (`content-type` other than `application/json` or `+json`). */
export class UnsupportedMediaTypeError extends ModelRouterError {
  readonly code = 'unsupported_media_type';
  readonly status = 415;
}

/** The request is well-formed JSON but not a valid request for this route. */
export class InvalidRequestError extends ModelRouterError {
  readonly code = 'invalid_request';
  readonly status = 400;
}

/** `x-gateway-config` is not a JSON object of the accepted shape. */
export class InvalidConfigHeaderError extends ModelRouterError {
  readonly code = 'invalid_config';
  readonly status = 400;
}

/** `max_tokens` (or `max_completion_tokens`) is missing. */
export class MaxTokensRequiredError extends ModelRouterError {
  readonly code = 'max_tokens_required';
  readonly status = 400;
}

/** An image was given by http(s) URL; only base64 data URLs are accepted. */
export class ImageUrlNotSupportedError extends ModelRouterError {
  readonly code = 'image_url_not_supported';
  readonly status = 400;
}

/** An image of a type other than jpeg, png, gif or webp. */
export class UnsupportedImageTypeError extends ModelRouterError {
  readonly code = 'unsupported_image_type';
  readonly status = 400;
}

/** A PDF larger than 32 MiB once decoded. */
export class PdfTooLargeError extends ModelRouterError {
  readonly code = 'pdf_too_large';
  readonly status = 413;
}

/** A PDF with more than 100 pages. */
export class PdfTooManyPagesError extends ModelRouterError {
  readonly code = 'pdf_too_many_pages';
  readonly status = 400;
}

/** An encrypted or password-protected PDF. */
export class PdfEncryptedError extends ModelRouterError {
  readonly code = 'pdf_encrypted';
  readonly status = 400;
}

/**
 * A PDF whose checks would take more than their budget: object streams that inflate to more
 * than 4 times the PDF's size (64 MiB for all PDFs of a request), or more than 2 s of work.
 */
export class PdfTooComplexError extends ModelRouterError {
  readonly code = 'pdf_too_complex';
  readonly status = 400;
}

/** Data declared as a PDF that is not one. */
export class InvalidPdfError extends ModelRouterError {
  readonly code = 'invalid_pdf';
  readonly status = 400;
}

/** The model is known not to accept this kind of input (images or PDFs). */
export class UnsupportedInputError extends ModelRouterError {
  readonly code = 'unsupported_input';
  readonly status = 400;
}

/** No provider was named, neither by a `@slug/` model prefix nor by `x-gateway-provider`. */
export class ProviderRequiredError extends ModelRouterError {
  readonly code = 'provider_required';
  readonly status = 400;
}

/** The named provider slug is not in the catalog. */
export class UnknownProviderError extends ModelRouterError {
  readonly code = 'unknown_provider';
  readonly status = 400;
}

/** The model is not enabled for the provider integration. */
export class ModelNotEnabledError extends ModelRouterError {
  readonly code = 'model_not_enabled';
  readonly status = 403;
  override readonly type = 'permission_error';
}

/** The host's access rules do not let the caller use this model (`authorize` said no). */
export class AccessDeniedError extends ModelRouterError {
  readonly code = 'access_denied';
  readonly status = 403;
  override readonly type = 'permission_error';
}

/** No stored prompt template has this id. */
export class PromptNotFoundError extends ModelRouterError {
  readonly code = 'prompt_not_found';
  readonly status = 404;
  override readonly type = 'not_found_error';
}

/** A prompt template placeholder has no value in the request's `variables`. */
export class MissingVariableError extends ModelRouterError {
  readonly code = 'missing_variable';
  readonly status = 400;
}

/** The upstream could not be reached (connection refused or reset). */
export class UpstreamUnreachableError extends ModelRouterError {
  readonly code = 'upstream_unreachable';
  readonly status = 502;
  override readonly type = 'api_error';
}

/** The upstream did not answer within the request timeout. */
export class UpstreamTimeoutError extends ModelRouterError {
  readonly code = 'upstream_timeout';
  readonly status = 504;
  override readonly type = 'timeout_error';
}

/**
 * The provider answered with something the gateway cannot pass on: a success body that is not
 * JSON, or a body, error body or stream event larger than the gateway reads.
 */
export class UpstreamInvalidResponseError extends ModelRouterError {
  readonly code = 'upstream_invalid_response';
  readonly status = 502;
  override readonly type = 'api_error';
}

/**
 * The client disconnected before the answer was written (status 499, as nginx logs it). Nothing
 * is sent to it; hosts log it as a client abort, not as a failure of the gateway.
 */
export class ClientAbortError extends ModelRouterError {
  readonly code = 'client_closed_request';
  readonly status = 499;
  override readonly type = 'api_error';

  constructor(message = 'The client closed the connection before the answer was written.') {
    super(message);
  }
}

/**
 * `response_format` asks for something Anthropic models cannot give through the gateway: a
 * schema whose root is not an object, JSON together with tools the model may call, or JSON
 * together with extended thinking.
 */
export class UnsupportedResponseFormatError extends ModelRouterError {
  readonly code = 'unsupported_response_format';
  readonly status = 400;
}

/**
 * A valid OpenAI value that Anthropic models do not take, such as `temperature` above 1, a stop
 * sequence of only whitespace or a `reasoning_effort` whose thinking budget does not fit under
 * `max_tokens`. `param` names the field.
 */
export class UnsupportedValueError extends ModelRouterError {
  readonly code = 'unsupported_value';
  readonly status = 400;
}

/**
 * An OpenAI request field the gateway cannot honour for Anthropic models and will not drop,
 * because dropping it would change the answer (audio output, legacy `functions`, web search).
 */
export class UnsupportedParameterError extends ModelRouterError {
  readonly code = 'unsupported_parameter';
  readonly status = 400;
}

/**
 * A Responses reasoning item's `encrypted_content` that the gateway did not seal for this caller
 * (forged, changed, cut, or sealed under another key): refused, so no client can send the
 * provider a thinking block or signature it did not receive.
 */
export class InvalidEncryptedContentError extends ModelRouterError {
  readonly code = 'invalid_encrypted_content';
  readonly status = 400;
}

/** `previous_response_id` (or `GET`/`DELETE /v1/responses/<id>`) names no stored response of this caller. */
export class ResponseNotFoundError extends ModelRouterError {
  readonly code = 'response_not_found';
  readonly status = 404;
  override readonly type = 'not_found_error';
}

/** An `item_reference` names no output item of a stored response of this caller. */
export class ItemNotFoundError extends ModelRouterError {
  readonly code = 'item_not_found';
  readonly status = 400;
}

/** A `bedrock` provider was asked for a model that is not one of Anthropic's models on Bedrock. */
export class UnsupportedModelError extends ModelRouterError {
  readonly code = 'unsupported_model';
  readonly status = 400;
}
