import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactUrl } from '../../lib/store/spec.js';

test('S-1 / P-11 a store URL in a log line or an error shows no password, wherever the URL puts it', () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ['postgres://app:s3cret@db:5432/users', 'postgres://app:***@db:5432/users'],
    // Unencoded '@' or '/' in the password: the URL does not parse, the password is hidden whole.
    ['postgres://app:p@ss-s3cret@127.0.0.1:bad/x', 'postgres://app:***@127.0.0.1:bad/x'],
    ['postgres://app:s3cret/with/slash@127.0.0.1:bad/x', 'postgres://app:***@127.0.0.1:bad/x'],
    // node-postgres also reads a password from the query.
    ['postgres://app@db/users?password=s3cret&sslmode=require', 'postgres://app@db/users?password=***&sslmode=require'],
    ['postgres://db/users?sslmode=require&sslpassword=s3cret', 'postgres://db/users?sslmode=require&sslpassword=***'],
    ['POSTGRESQL://app:s3cret@db/users?Password=s3cret', 'POSTGRESQL://app:***@db/users?Password=***'],
    // Near misses of a URL, which the store refuses, name it without the password too.
    ['postgres:/app:s3cret@db/users', 'postgres:/app:***@db/users'],
    ['postgresql:app:s3cret@db/users', 'postgresql:app:***@db/users'],
    ['postgres//app:s3cret@db/users', 'postgres//app:***@db/users'],
    // Nothing to hide: as given.
    ['postgres://app@db/users', 'postgres://app@db/users'],
    ['postgres:///users?host=/var/run/postgresql', 'postgres:///users?host=/var/run/postgresql'],
    ['./data/users.json', './data/users.json'],
    ['C://data/users.json', 'C://data/users.json'],
  ];
  for (const [url, shown] of cases) {
    assert.equal(redactUrl(url), shown, url);
    assert.ok(!redactUrl(url).includes('s3cret'), url);
  }
});
