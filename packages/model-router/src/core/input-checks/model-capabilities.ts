/**
 * What Anthropic model families are known to accept. Only what is known to be unsupported is
 * refused; unknown models pass through to the provider.
 */
const NO_PDF = [/^claude-3-haiku/, /^claude-3-opus/, /^claude-3-sonnet/, /^claude-2/, /^claude-instant/];
const NO_VISION = [/^claude-2/, /^claude-instant/, /^claude-3-5-haiku/];

/** False when the model is known not to accept PDF documents. */
export function acceptsPdf(model: string): boolean {
  return !NO_PDF.some((pattern) => pattern.test(model));
}

/** False when the model is known not to accept images. */
export function acceptsImages(model: string): boolean {
  return !NO_VISION.some((pattern) => pattern.test(model));
}
