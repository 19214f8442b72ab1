// The official MCP conformance suite (@modelcontextprotocol/conformance,
// server mode) against our MCP endpoint, for the scenarios that apply to a
// stateless, read-only, tools-only server: server-initialize, ping,
// tools-list and dns-rebinding-protection. The suite's client sends no
// credentials, so it talks to a small local proxy that adds our API key and
// forwards everything else untouched.
//
// Scenarios that do not apply (the server declares only the `tools`
// capability): logging-set-level, completion-complete, resources-*,
// prompts-*, the server-sse-* scenarios (JSON responses only, no stream),
// and the tools-call-* / elicitation / json-schema scenarios, which call the
// suite's own fixture tools (`test_simple_text`, `test_sampling`…) that only
// its reference server has. docs/mcp.md lists them with these reasons.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
const bin = path.join(path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');

describe('MCP conformance suite (server mode)', () => {
  let app: TestApp;
  let tenant: Tenant;
  let proxy: Server;
  let proxyUrl: string;

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    const target = new URL(`${app.url}/api/mcp/v1`);
    proxy = createServer((req, res) => {
      const headers = { ...req.headers, host: target.host, authorization: `Bearer ${tenant.key}` };
      const upstream = httpRequest({ host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
  });
  after(async () => {
    await new Promise((resolve) => proxy?.close(resolve));
    await app?.close();
  });

  for (const scenario of SCENARIOS) {
    test(scenario, async () => {
      const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
        execFile(process.execPath, [bin, 'server', '--url', proxyUrl, '--scenario', scenario], { timeout: 60_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}\n${stderr}` }),
        );
      });
      assert.equal(code, 0, output);
      assert.doesNotMatch(output, /FAILURE/, output);
      // Checks ran, and all of them passed.
      const passed = /Passed: (\d+)\/(\d+)/.exec(output);
      assert.ok(passed && Number(passed[2]) > 0 && passed[1] === passed[2], output);
    });
  }
});
