// The S3 stand-in (test/helpers/s3-stand-in.ts) as a process of its own, for
// benches: its CPU is then measurable apart from the worker's. Prints one
// line, `S3_STAND_IN <json of the env for BLOB_STORE=s3>`, and serves until killed.
import { startS3StandIn } from '../../test/helpers/s3-stand-in.ts';

const s3 = await startS3StandIn();
process.stdout.write(`S3_STAND_IN ${JSON.stringify(s3.env('bench/'))}\n`);
process.on('SIGTERM', () => void s3.close().then(() => process.exit(0)));
