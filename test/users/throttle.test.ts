// The key an address is throttled under (lib/users/throttle.ts): IPv4 as is, IPv6 by its /64.
// The throttle itself is the store's: test/store/conformance.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../lib/store/open.js';
import { addressKey } from '../../lib/users/throttle.js';

test('P-8 IPv6 clients are throttled by their /64, IPv4 by the address', async (t) => {
  const cases: Array<[string, string]> = [
    ['203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::ffff:192.0.2.1', '0:0:0:0::/64'],
    ['2001:DB8:1:2::abcd', '2001:db8:1:2::/64'],
  ];
  for (const [address, key] of cases) assert.equal(addressKey(address), key, address);
  const store = await openStore(':memory:', { throttle: { addressMaxFailures: 3 } });
  t.after(() => store.close());
  for (let i = 0; i < 3; i++) await store.throttle.settle('no-lease', `victim-${i}`, addressKey(`2001:db8:1:2::${i + 1}`), 'fail');
  assert.equal((await store.throttle.reserve('someone-else', addressKey('2001:db8:1:2:ffff::9'))).ok, false, 'a sibling address in the /64 is throttled too');
  assert.equal((await store.throttle.reserve('someone-else', addressKey('2001:db8:1:3::1'))).ok, true);
});
