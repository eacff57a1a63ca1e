import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Starts the scripted model (`mock-llm`) and `engram serve` with a throwaway home and an
 * in-memory keychain, serving the built UI, and hands their addresses to the tests through the
 * environment. Binaries: `ENGRAM_BIN` / `MOCK_LLM_BIN`, else `$CARGO_TARGET_DIR/debug/…`.
 */
export default async function globalSetup(): Promise<() => Promise<void>> {
  const root = resolve(import.meta.dirname, '..', '..');
  const target = process.env.CARGO_TARGET_DIR ?? join(root, 'target');
  const engramBin = process.env.ENGRAM_BIN ?? join(target, 'debug', 'engram');
  const mockBin = process.env.MOCK_LLM_BIN ?? join(target, 'debug', 'mock-llm');
  // The test MCP server (crates/mcp); only the MCP spec needs it.
  const mcpBin = process.env.MOCK_MCP_BIN ?? join(target, 'debug', 'mock-mcp');
  const uiDir = resolve(import.meta.dirname, '..', 'dist');
  for (const [what, path] of [
    ['engram', engramBin],
    ['mock-llm', mockBin],
  ] as const) {
    if (!existsSync(path)) {
      throw new Error(
        `${what} not found at ${path}. Build it: cargo build -p engram-cli -p engram-mock-llm (or set ENGRAM_BIN / MOCK_LLM_BIN).`,
      );
    }
  }
  if (!existsSync(join(uiDir, 'index.html'))) throw new Error(`No built UI in ${uiDir}: run \`npm run build\` first.`);

  const scratch = mkdtempSync(join(tmpdir(), 'engram-e2e-'));
  const children: ChildProcess[] = [];
  const hubs: import('node:http').Server[] = [];
  const stop = async () => {
    for (const h of hubs) h.close();
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)));
    rmSync(scratch, { recursive: true, force: true });
  };

  try {
    const portFile = join(scratch, 'mock-port');
    const mock = spawn(mockBin, ['--port', '0', '--print-port-file', portFile], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(mock);
    const mockPort = await waitFor(() => (existsSync(portFile) ? readFileSync(portFile, 'utf8').trim() : null), 'mock-llm port');

    // A stand-in for Hugging Face serving the test GGUF (ENGRAM_TEST_GGUF) to catalogue
    // downloads, throttled and damaged on request (see `mirrorServer`).
    const mirror = mirrorServer(process.env.ENGRAM_TEST_GGUF);
    await new Promise<void>((r) => mirror.server.listen(0, '127.0.0.1', r));
    hubs.push(mirror.server);
    const mirrorAddr = mirror.server.address();
    const mirrorUrl = `http://127.0.0.1:${typeof mirrorAddr === 'object' && mirrorAddr ? mirrorAddr.port : 0}`;
    process.env.E2E_LLM_MIRROR = mirrorUrl;

    const env: NodeJS.ProcessEnv = { ...process.env, ENGRAM_HOME: join(scratch, 'home'), ENGRAM_SECRETS: 'memory', OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', OPENAI_BASE_URL: '', ENGRAM_LLM_MIRROR: mirrorUrl };
    // New agents search by words here: the specs check the window (counts, lists, rollbacks)
    // against exact expectations, and a semantic search ranks every passage. Ranking by meaning
    // with the real model is tested in tests/it/semantic.rs.
    const setup = spawnSync(engramBin, ['embedding', 'default', 'none'], { env, encoding: 'utf8' });
    if (setup.status !== 0) throw new Error(`engram embedding default none: ${setup.stderr}`);
    const [addr, token] = await serve(engramBin, uiDir, env, children);
    // The model hub as an offline machine meets it: every download refused, and counted (GET
    // /_count), so a test can say how often the built-in search model was asked for.
    let downloads = 0;
    const hub = createServer((req, res) => {
      if (req.url === '/_count') return res.end(String(downloads));
      downloads++;
      res.statusCode = 503;
      res.end('offline');
    });
    await new Promise<void>((r) => hub.listen(0, '127.0.0.1', r));
    const hubAddr = hub.address();
    const hubUrl = `http://127.0.0.1:${typeof hubAddr === 'object' && hubAddr ? hubAddr.port : 0}`;
    hubs.push(hub);
    // A second Engram as a newcomer's machine may be: an empty home, no keychain at all, and
    // offline (its built-in search model cannot be downloaded).
    const { ENGRAM_LOCAL_MODEL_DIR: _weights, ...online } = env;
    const bareEnv = { ...online, ENGRAM_HOME: join(scratch, 'bare-home'), ENGRAM_SECRETS: 'none', ENGRAM_LOCAL_MODEL_URL: hubUrl };
    const [bareAddr, bareToken] = await serve(engramBin, uiDir, bareEnv, children);

    process.env.E2E_ENGRAM_URL = addr;
    process.env.E2E_ENGRAM_TOKEN = token;
    // And one with a keychain (in memory), otherwise as empty.
    const [keyedAddr, keyedToken] = await serve(engramBin, uiDir, { ...bareEnv, ENGRAM_HOME: join(scratch, 'keyed-home'), ENGRAM_SECRETS: 'memory' }, children);
    process.env.E2E_KEYED_URL = keyedAddr;
    process.env.E2E_KEYED_TOKEN = keyedToken;
    process.env.E2E_BARE_URL = bareAddr;
    process.env.E2E_BARE_TOKEN = bareToken;
    process.env.E2E_OFFLINE_HUB = hubUrl;
    process.env.E2E_MOCK_BASE = `http://127.0.0.1:${mockPort}/v1`;
    process.env.E2E_MOCK_MCP = mcpBin;
    process.env.E2E_ENGRAM_BIN = engramBin;
    process.env.E2E_ENGRAM_HOME = join(scratch, 'home');
  } catch (e) {
    await stop();
    throw e;
  }
  return stop;
}

/**
 * Serves the GGUF at `path` for any `…/resolve/…` URL, with `Range` support, Nagle off (small
 * throttled chunks go out at once). Control: `POST /_throttle?bytes=N` (per 10 ms; 0 = full
 * speed), `POST /_corrupt?on=1|0` (one byte changed), `GET /_ranges` (the Range headers seen).
 */
function mirrorServer(path: string | undefined) {
  const bytes = path && existsSync(path) ? readFileSync(path) : null;
  let throttle = 0;
  let corrupt = false;
  const ranges: (string | null)[] = [];
  const server = createServer({ noDelay: true }, (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://mirror');
    if (url.pathname === '/_throttle') {
      throttle = Number(url.searchParams.get('bytes') ?? 0);
      return res.end('ok');
    }
    if (url.pathname === '/_corrupt') {
      corrupt = url.searchParams.get('on') === '1';
      return res.end('ok');
    }
    if (url.pathname === '/_ranges') return res.end(JSON.stringify(ranges));
    if (!bytes || !url.pathname.includes('/resolve/')) {
      res.statusCode = 404;
      return res.end('not here');
    }
    const range = req.headers.range ?? null;
    ranges.push(range);
    const start = Number(/^bytes=(\d+)-$/.exec(range ?? '')?.[1] ?? 0);
    const headers: Record<string, string | number> = { 'Content-Length': bytes.length - start, 'Accept-Ranges': 'bytes' };
    if (start > 0) headers['Content-Range'] = `bytes ${start}-${bytes.length - 1}/${bytes.length}`;
    res.writeHead(start > 0 ? 206 : 200, headers);
    let at = start;
    const damaged = corrupt;
    let stopped = false;
    res.on('close', () => (stopped = true));
    const send = () => {
      while (!stopped && at < bytes.length) {
        const end = Math.min(bytes.length, at + (throttle > 0 ? throttle : 1 << 20));
        let chunk = bytes.subarray(at, end);
        if (damaged && at === 0) {
          chunk = Buffer.from(chunk);
          chunk[100] ^= 1;
        }
        at = end;
        const more = res.write(chunk);
        if (throttle > 0) return void setTimeout(send, 10);
        if (!more) return void res.once('drain', send);
      }
      if (!stopped) res.end();
    };
    send();
  });
  return { server };
}

/** Starts `engram serve` on a free port with `env`; its address and API token. */
async function serve(bin: string, uiDir: string, env: NodeJS.ProcessEnv, children: ChildProcess[]): Promise<readonly [string, string]> {
  const engram = spawn(bin, ['serve', '--port', '0', '--ui-dir', uiDir, '--show-token'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(engram);
  let out = '';
  engram.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  return waitFor(() => {
    const addr = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    const token = /token: (\S+)/.exec(out)?.[1];
    return addr && token ? ([addr, token] as const) : null;
  }, 'engram serve');
}

async function waitFor<T>(probe: () => T | null, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = probe();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not start within ${ms} ms`);
}
