// The child process of rasterizeSvg (storage/svg.ts): the SVG on stdin; the
// PNG on stdout and exit 0, or the reason of a refusal on stdout and exit
// SVG_REFUSED_EXIT. Anything else (a crash, the parent's kill) is its exit status.
import { drawSvg, SVG_REFUSED_EXIT } from './svg.ts';

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const result = await drawSvg(Buffer.concat(chunks));
process.stdout.write(result.ok ? result.png : result.reason, () => process.exit(result.ok ? 0 : SVG_REFUSED_EXIT));
