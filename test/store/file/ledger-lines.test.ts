// The file ledger's line codec (lib/store/file/ledger-lines.ts): every kind round-trips, the
// format on disk is the one earlier versions wrote, and bad lines are told apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeLine, encodeLine, type LedgerLine } from '../../../lib/store/file/ledger-lines.js';

const LINES: ReadonlyArray<readonly [LedgerLine, string]> = [
  [{ kind: 'failure', account: 'alice', address: '10.0.0.1', at: 5, lease: undefined }, '{"f":["alice","10.0.0.1",5]}'],
  [{ kind: 'failure', account: null, address: '10.0.0.1', at: 5, lease: 'srv.1' }, '{"f":[null,"10.0.0.1",5,"srv.1"]}'],
  [{ kind: 'success', account: 'alice' }, '{"s":"alice"}'],
  [{ kind: 'account', account: 'alice', failures: 6, lockedUntil: 9 }, '{"a":["alice",6,9]}'],
  [{ kind: 'nonce', nonce: 'n', nc: 2, expiresAt: 7 }, '{"n":["n",2,7]}'],
  [{ kind: 'issued', account: 'alice', at: 3 }, '{"i":["alice",3]}'],
  [{ kind: 'lease', id: 'srv.2', account: null, address: '::/64', expiresAt: 8 }, '{"l":["srv.2",null,"::/64",8]}'],
  [{ kind: 'joined', server: 'srv', pid: 42, host: 'h' }, '{"p":["srv",42,"h"]}'],
  // With its process's start time (a reused pid is told apart); earlier versions read the first three.
  [{ kind: 'joined', server: 'srv', pid: 42, host: 'h', start: '8723273' }, '{"p":["srv",42,"h","8723273"]}'],
  [{ kind: 'left', server: 'srv' }, '{"q":"srv"}'],
  [{ kind: 'ack', from: 'a', to: 'b' }, '{"k":["a","b"]}'],
];

test('P-8, P-10, P-12: every line kind is written as before and reads back as itself', () => {
  for (const [line, text] of LINES) {
    assert.equal(encodeLine(line), `${text}\n`);
    const decoded = decodeLine(text);
    assert.ok(typeof decoded === 'object' && decoded.line !== undefined, text);
    assert.equal(encodeLine(decoded.line), `${text}\n`);
  }
});

test('P-8: a lease ended alone, or on a success line, is told beside the line', () => {
  assert.deepEqual(decodeLine('{"e":"srv.1"}'), { ended: 'srv.1' });
  assert.deepEqual(decodeLine('{"s":"alice","e":"srv.1"}'), { line: { kind: 'success', account: 'alice' }, ended: 'srv.1' });
  assert.equal(encodeLine({ kind: 'success', account: 'alice', ended: 'srv.1' }), '{"s":"alice","e":"srv.1"}\n');
});

test('a line that is not JSON, or of no known kind, is told apart (the reader skips it with a warning)', () => {
  assert.equal(decodeLine('{"f":['), 'unparsable');
  assert.equal(decodeLine('{"z":1}'), 'unknown');
  assert.equal(decodeLine('{"f":["alice"]}'), 'unknown');
  assert.deepEqual(decodeLine('null'), {});
});
