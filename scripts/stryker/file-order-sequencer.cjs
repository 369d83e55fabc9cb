// @ts-check
/**
 * Jest test sequencer for mutation runs: runs the test files in the order that
 * jest-covering-files.mjs puts in GW_STRYKER_FILE_ORDER (the cheapest covering files first), so
 * that with `bail: 1` a killed mutant stops at the first, cheapest failing file. Files not in the
 * list keep their path order, after the listed ones.
 */
class FileOrderSequencer {
  /** @param {Array<{ path: string }>} tests */
  sort(tests) {
    const order = JSON.parse(process.env.GW_STRYKER_FILE_ORDER || '[]');
    const rank = (path) => {
      const index = order.indexOf(path);
      return index === -1 ? order.length : index;
    };
    return [...tests].sort((a, b) => rank(a.path) - rank(b.path) || a.path.localeCompare(b.path));
  }
  cacheResults() {}
}
module.exports = FileOrderSequencer;
