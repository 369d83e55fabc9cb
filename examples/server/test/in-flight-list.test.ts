import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { InFlightList } from '../src/in-flight-list';

describe('InFlightList', () => {
  it('walks its values in the order added and forgets the ones removed', () => {
    const list = new InFlightList<string>();
    const a = list.add('a');
    const b = list.add('b');
    const c = list.add('c');
    const d = list.add('d');
    expect([...list]).toEqual(['a', 'b', 'c', 'd']);
    list.remove(b);
    expect([...list]).toEqual(['a', 'c', 'd']);
    list.remove(a);
    expect([...list]).toEqual(['c', 'd']);
    list.remove(d);
    expect([...list]).toEqual(['c']);
    expect(list.size).toBe(1);
    list.remove(c);
    expect([...list]).toEqual([]);
    expect(list.size).toBe(0);
    list.add('e');
    expect([...list]).toEqual(['e']);
  });

  it('removes an entry once: removing it again changes nothing', () => {
    const list = new InFlightList<number>();
    const one = list.add(1);
    list.add(2);
    list.remove(one);
    list.remove(one);
    expect([...list]).toEqual([2]);
    expect(list.size).toBe(1);
    const only = list.add(3);
    list.remove(only);
    list.remove(only);
    expect([...list]).toEqual([2]);
    expect(list.size).toBe(1);
  });

  it('keeps walking when the walk removes entries (a response ended at shutdown closes)', () => {
    const list = new InFlightList<string>();
    const entries = ['a', 'b', 'c'].map((value) => list.add(value));
    const seen: string[] = [];
    for (const value of list) {
      seen.push(value);
      for (const entry of entries) list.remove(entry);
    }
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(list.size).toBe(0);
  });

  it('holds nothing of a removed entry: removed entries die young, where a Set of them is promoted', () => {
    // The same workload (10 objects in flight, each joining and leaving the container) through
    // the list and through a Set, each in a Node process of its own tracing its scavenges. The Set
    // is the control: it shows that the measure sees the promotion the list avoids.
    const script = `
      const { InFlightList } = require(${JSON.stringify(join(__dirname, '../dist/in-flight-list.js'))});
      const useSet = process.argv[1] === 'set';
      const set = new Set();
      const list = new InFlightList();
      const inFlight = [];
      // Long-lived, as the gateway's are: in the old generation before the first request.
      gc();
      gc();
      for (let i = 0; i < 150000; i++) {
        const request = { id: i, parts: Array.from({ length: 40 }, (_, j) => ({ j, text: 'part ' + j + ' of ' + i })) };
        request.entry = useSet ? set.add(request) : list.add(request);
        inFlight.push(request);
        if (inFlight.length > 10) {
          const done = inFlight.shift();
          if (useSet) set.delete(done);
          else list.remove(done.entry);
        }
      }
    `;
    const promotedBytes = (mode: string): number => {
      const run = spawnSync(process.execPath, ['--expose-gc', '--trace-gc-nvp', '-e', script, mode], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.status).toBe(0);
      return [...run.stdout.matchAll(/gc=s .*?promoted=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
    };
    const throughSet = promotedBytes('set');
    const throughList = promotedBytes('list');
    expect(throughSet).toBeGreaterThan(50 * 1024 * 1024);
    expect(throughList).toBeLessThan(throughSet / 5);
  });
});
