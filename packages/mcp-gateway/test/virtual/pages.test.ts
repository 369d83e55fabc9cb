import {
  listAllPages,
  MAX_MEMBER_LIST_ITEMS,
  MAX_MEMBER_LIST_PAGES,
  type ListCut,
  type ListPage,
} from '../../src/virtual/pages';

/** A paged list of `total` numbers, `size` a page; the cursors asked for are kept in `asked`. */
function pager(total: number, size: number, asked: (string | undefined)[] = []) {
  return async (cursor: string | undefined): Promise<ListPage<number>> => {
    asked.push(cursor);
    const start = Number(cursor ?? 0);
    const end = Math.min(start + size, total);
    const items = Array.from({ length: end - start }, (_, i) => start + i);
    return end < total ? { items, nextCursor: String(end) } : { items };
  };
}

describe('listAllPages: a member list followed through nextCursor, bounded', () => {
  it('bounds at 20 pages and 10,000 items by default', () => {
    expect([MAX_MEMBER_LIST_PAGES, MAX_MEMBER_LIST_ITEMS]).toEqual([20, 10_000]);
  });

  it('joins every page in order, asking from no cursor, then each nextCursor', async () => {
    const asked: (string | undefined)[] = [];
    const cuts: ListCut[] = [];
    expect(await listAllPages(pager(25, 10, asked), (cut) => cuts.push(cut))).toEqual(
      Array.from({ length: 25 }, (_, i) => i),
    );
    expect(asked).toEqual([undefined, '10', '20']);
    expect(cuts).toEqual([]);
  });

  it('stops at the page bound and says so; exactly the bound is no cut', async () => {
    const cuts: ListCut[] = [];
    expect(await listAllPages(pager(Infinity, 1), (cut) => cuts.push(cut), { maxPages: 3 })).toEqual([0, 1, 2]);
    expect(cuts).toEqual([{ reason: 'pages', pages: 3, items: 3 }]);
    const none: ListCut[] = [];
    expect(await listAllPages(pager(3, 1), (cut) => none.push(cut), { maxPages: 3 })).toHaveLength(3);
    expect(none).toEqual([]);
  });

  it('cuts at the item bound within a page; exactly the bound is no cut', async () => {
    const cuts: ListCut[] = [];
    expect(await listAllPages(pager(10, 4), (cut) => cuts.push(cut), { maxItems: 6 })).toEqual([0, 1, 2, 3, 4, 5]);
    expect(cuts).toEqual([{ reason: 'items', pages: 2, items: 6 }]);
    const none: ListCut[] = [];
    expect(await listAllPages(pager(6, 3), (cut) => none.push(cut), { maxItems: 6 })).toHaveLength(6);
    expect(none).toEqual([]);
  });

  it('stops when a cursor comes back (a loop), keeping what it has', async () => {
    const cuts: ListCut[] = [];
    const looping = async (cursor: string | undefined): Promise<ListPage<string>> => ({
      items: [cursor ?? 'first'],
      nextCursor: cursor === 'b' ? 'a' : cursor === 'a' ? 'b' : 'a',
    });
    expect(await listAllPages(looping, (cut) => cuts.push(cut))).toEqual(['first', 'a', 'b']);
    expect(cuts).toEqual([{ reason: 'repeated_cursor', pages: 3, items: 3 }]);
  });

  it('rejects when a page fails (the member is then left out by the caller)', async () => {
    const failing = async (cursor: string | undefined): Promise<ListPage<number>> => {
      if (cursor !== undefined) throw new Error('page 2 failed');
      return { items: [1], nextCursor: 'next' };
    };
    await expect(listAllPages(failing)).rejects.toThrow('page 2 failed');
  });
});
