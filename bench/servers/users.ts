// The server of bench/users.ts: httpskit on a prepared store, scrypt at ln=1 (verification nearly
// free, so the rest of the user resource's path shows). argv[2]: { store, cert, key } as JSON.
import { createService } from '../../lib/index.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { store: string; cert: string; key: string };
const service = createService({ port: 0, store: args.store, cert: args.cert, key: args.key, scrypt: { ln: 1, r: 8, p: 1 }, log: false });
const { url } = await service.listen();
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.on('message', (what) => {
  if (what === 'cpu') process.send?.(process.cpuUsage());
  if (what === 'rss') process.send?.(process.memoryUsage().rss);
  // A clean exit, so a --cpu-prof profile is written.
  if (what === 'exit') void service.close(1_000).then(() => process.exit(0));
});
