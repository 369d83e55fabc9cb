/**
 * Paged MCP lists of a virtual server's members (`tools/list`, `prompts/list`, `resources/list`,
 * `resources/templates/list` answer a page and a `nextCursor`): followed up to a bound, so that a
 * member cannot hold a merged list with endless pages.
 */

/** Most pages of one list asked of one member: 20. */
export const MAX_MEMBER_LIST_PAGES = 20;

/** Most items of one list kept from one member: 10000 (the rest is cut, with a warning). */
export const MAX_MEMBER_LIST_ITEMS = 10_000;

/** One page of a member's list. */
export interface ListPage<T> {
  items: readonly T[];
  /** The cursor of the next page; undefined on the last page. */
  nextCursor?: string | undefined;
}

/** A member's list cut at a bound: what the host's warning says. */
export interface ListCut {
  /** `pages`: more than the page bound; `items`: more than the item bound; `repeated_cursor`: a cursor came back (a loop). */
  reason: 'pages' | 'items' | 'repeated_cursor';
  /** Pages asked for. */
  pages: number;
  /** Items kept. */
  items: number;
}

/** The bounds of {@link listAllPages}. */
export interface ListBounds {
  /** Default {@link MAX_MEMBER_LIST_PAGES}. */
  maxPages?: number;
  /** Default {@link MAX_MEMBER_LIST_ITEMS}. */
  maxItems?: number;
}

/**
 * Every item of a paged list: asks `page` for the first page, then follows `nextCursor` until a
 * page has none, for at most `maxPages` pages and `maxItems` items (the list is cut there and
 * `onCut` told; a cursor that comes back is a cut too). Time is the caller's to bound (the
 * member's `timeout_ms` covers every page); a page that fails rejects the whole list.
 */
export async function listAllPages<T>(
  page: (cursor: string | undefined) => Promise<ListPage<T>>,
  onCut?: (cut: ListCut) => void,
  bounds: ListBounds = {},
): Promise<T[]> {
  const maxPages = bounds.maxPages ?? MAX_MEMBER_LIST_PAGES;
  const maxItems = bounds.maxItems ?? MAX_MEMBER_LIST_ITEMS;
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const answer = await page(cursor);
    for (const item of answer.items) {
      if (items.length === maxItems) {
        onCut?.({ reason: 'items', pages, items: items.length });
        return items;
      }
      items.push(item);
    }
    const next = answer.nextCursor;
    if (next === undefined) return items;
    if (pages === maxPages) {
      onCut?.({ reason: 'pages', pages, items: items.length });
      return items;
    }
    if (seen.has(next)) {
      onCut?.({ reason: 'repeated_cursor', pages, items: items.length });
      return items;
    }
    seen.add(next);
    cursor = next;
  }
}
