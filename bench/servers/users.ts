// The server of bench/users.ts: httpskit on a prepared store, scrypt at ln=1 (verification nearly
// free, so the rest of the user resource's path shows). argv[2]: { store, cert, key } as JSON.
// IPC: 'cpu' → process.cpuUsage(); 'rss' → RSS bytes; { verify: phc, password, count } → the CPU
// of one verification (µs), timed here on the same code a request runs; 'exit' → a clean exit.
import { createService, type ResourceLoader } from '../../lib/index.js';
import { something } from '../../lib/resources/something.js';
import { verifyPassword, type ScryptCost } from '../../lib/users/password-hash.js';
import { preparePassword } from '../../lib/users/prepare.js';

const COST: ScryptCost = { ln: 1, r: 8, p: 1 };
const args = JSON.parse(process.argv[2] ?? '{}') as { store: string; cert: string; key: string };
// `/api/whoami` is `/api/something` (the same body) behind the authentication the user routes run:
// what it costs beyond /api/something is that authentication, Basic decoding, throttle and
// verification together, measured on the same server and sockets.
const whoami: ResourceLoader = async (query, context) => {
  await context.authenticate();
  return something(query);
};
const service = createService({ port: 0, store: args.store, cert: args.cert, key: args.key, scrypt: COST, log: false, resources: { whoami } });
const { url } = await service.listen();
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.on('message', (what: unknown) => {
  if (what === 'cpu') process.send?.(process.cpuUsage());
  if (what === 'rss') process.send?.(process.memoryUsage().rss);
  if (typeof what === 'object' && what !== null && 'verify' in what) void timeVerification(what as { verify: string; password: string; count: number });
  // A clean exit, so a --cpu-prof profile is written.
  if (what === 'exit') void service.close(1_000).then(() => process.exit(0));
});

/** What a request's password check costs: preparation, the parsed hash, scrypt, the comparison. */
async function timeVerification(o: { verify: string; password: string; count: number }): Promise<void> {
  const before = process.cpuUsage();
  for (let i = 0; i < o.count; i++) {
    if (!(await verifyPassword(preparePassword(o.password), o.verify, COST))) throw new Error('the bench password does not verify');
  }
  const used = process.cpuUsage(before);
  process.send?.((used.user + used.system) / o.count);
}
