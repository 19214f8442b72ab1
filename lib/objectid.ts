// Record ids are 24-hex ObjectId strings (contract, General conventions 2):
// 4 bytes of seconds, 5 random bytes per process, 3 bytes of counter. They
// sort roughly by creation, but ordering always uses created_at then id.
import { randomBytes, randomInt } from 'node:crypto';

const processUnique = randomBytes(5).toString('hex');
let counter = randomInt(0xffffff);

export function objectId(date: Date = new Date()): string {
  counter = (counter + 1) % 0x1000000;
  const seconds = Math.floor(date.getTime() / 1000).toString(16).padStart(8, '0');
  return seconds + processUnique + counter.toString(16).padStart(6, '0');
}

const OBJECT_ID = /^[0-9a-f]{24}$/;

export function isObjectId(value: unknown): value is string {
  return typeof value === 'string' && OBJECT_ID.test(value);
}

/**
 * The same shape made inside a statement (one id per row of an INSERT ...
 * SELECT): 8 hex digits of seconds from `timestamp`, then 16 random hex digits.
 */
export function objectIdSql(timestamp: string): string {
  return `lpad(to_hex(floor(extract(epoch FROM ${timestamp}))::bigint), 8, '0') || substr(md5(random()::text || clock_timestamp()::text), 1, 16)`;
}
