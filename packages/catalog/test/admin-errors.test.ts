import { isDatabaseUnavailable } from '../src';

describe('isDatabaseUnavailable', () => {
  it.each([
    [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), true],
    [Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), true],
    [Object.assign(new Error('connection failure'), { code: '08006' }), true],
    [new Error('Connection terminated unexpectedly'), true],
    [new Error('timeout exceeded when trying to connect'), true],
    [Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }), false],
    [new TypeError("Cannot read properties of undefined (reading 'x')"), false],
    ['a string', false],
  ])('%s → %s', (error, expected) => {
    expect(isDatabaseUnavailable(error)).toBe(expected);
  });
});
