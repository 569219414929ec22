// Preloaded (NODE_OPTIONS=--import) into server processes by the multi-instance test: appends one
// line per scrypt computation to $HTTPSKIT_TEST_SCRYPT_LOG, so the test counts the password
// verifications that really ran, across processes, not only the statuses they led to. It counts
// the two ways lib/users/scrypt-pool.ts hashes: a message to its worker thread, or crypto.scrypt.
import crypto from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { Worker } from 'node:worker_threads';

const log = process.env.HTTPSKIT_TEST_SCRYPT_LOG;
if (log) {
  const record = () => appendFileSync(log, `${process.pid}\n`);
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, transfer) {
    if (message !== null && typeof message === 'object' && 'input' in message && 'salt' in message) record();
    return post.call(this, message, transfer);
  };
  const scrypt = crypto.scrypt;
  crypto.scrypt = function (...args) {
    record();
    return scrypt.apply(this, args);
  };
  syncBuiltinESMExports();
}
