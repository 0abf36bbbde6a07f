// End-to-end runner: the real app binary in a real WebKitGTK window under Xvfb, driven over
// WebDriver (WebKitWebDriver with TAURI_WEBVIEW_AUTOMATION=true). Each journey gets its own
// temporary database. Xvfb, the driver and the app are stopped by PID, on failure too.
//
// Usage: node tests/e2e/run.mjs [journey-name-substring …]
//        node tests/e2e/run.mjs --bench [name …]   the bench journeys of tests/e2e/bench (make bench)
// Env:   KVGATE_APP  path of the app binary (default: <cargo target dir>/debug/kvgate-desktop)
//        KVGATE_CLI  path of the CLI binary journeys seed data with (default: `kvgate` beside the app)

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Session } from './webdriver.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

function targetDir() {
  const meta = execFileSync('cargo', ['metadata', '--no-deps', '--format-version', '1'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(meta).target_directory;
}

const children = [];

function start(cmd, args, opts = {}) {
  // Own process group, so stopping it also stops what it started (the driver starts the app).
  const child = spawn(cmd, args, { detached: true, ...opts });
  children.push(child);
  child.exitPromise = new Promise((r) => child.once('exit', r));
  return child;
}

async function stopAll() {
  for (const child of children.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, 5000);
    await child.exitPromise;
    clearTimeout(timer);
  }
}

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

async function startXvfb() {
  const xvfb = start('Xvfb', ['-displayfd', '1', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  xvfb.stderr.on('data', (d) => (stderr += d));
  const display = await new Promise((res, rej) => {
    let out = '';
    const timer = setTimeout(() => rej(new Error(`Xvfb did not report a display in 15 s: ${stderr}`)), 15000);
    xvfb.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^(\d+)\n/);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    xvfb.once('exit', (code) => rej(new Error(`Xvfb exited with ${code}: ${stderr}`)));
  });
  return `:${display}`;
}

async function startDriver(display, dataDir, saveDir) {
  const port = await freePort();
  // KVGATE_E2E_SAVE_DIR: the app's save dialogs answer with the suggested name in this folder
  // (honoured only under WebDriver); the files are written by the app as a person's choice would be.
  const env = {
    ...process.env,
    DISPLAY: display,
    TAURI_WEBVIEW_AUTOMATION: 'true',
    KVGATE_DATA_DIR: dataDir,
    KVGATE_E2E_SAVE_DIR: saveDir,
  };
  delete env.KVGATE_DB;
  delete env.WAYLAND_DISPLAY;
  delete env.KVGATE_API_KEY;
  // A session bus address with nothing behind it: the app finds no OS keyring, the same on every
  // machine, and the tests never touch the keyring of the person running them.
  env.DBUS_SESSION_BUS_ADDRESS = `unix:path=${join(dataDir, 'no-session-bus')}`;
  const driver = start('WebKitWebDriver', [`--port=${port}`, '--host=127.0.0.1'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  driver.stderr.on('data', (d) => (stderr += d));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15000;
  for (;;) {
    try {
      const res = await fetch(`${base}/status`);
      if (res.ok) return base;
    } catch {
      /* not listening yet */
    }
    if (driver.exitCode !== null) throw new Error(`WebKitWebDriver exited: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`WebKitWebDriver not ready in 15 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function loadJourneys(filters, folder = 'journeys') {
  const dir = join(here, folder);
  const journeys = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.mjs')).sort()) {
    const mod = await import(pathToFileURL(join(dir, file)).href);
    for (const j of mod.journeys) journeys.push(j);
  }
  return filters.length ? journeys.filter((j) => filters.some((f) => j.name.includes(f))) : journeys;
}

async function main() {
  const app = process.env.KVGATE_APP || join(targetDir(), 'debug', 'kvgate-desktop');
  if (!existsSync(app)) throw new Error(`app binary not found: ${app} (run \`make build\` first)`);
  const cli = process.env.KVGATE_CLI || join(dirname(app), 'kvgate');
  const work = mkdtempSync(join(tmpdir(), 'kvgate-e2e-'));
  const artifacts = join(targetDir(), 'e2e');
  mkdirSync(artifacts, { recursive: true });
  const args = process.argv.slice(2);
  const bench = args[0] === '--bench';
  const journeys = await loadJourneys(bench ? args.slice(1) : args, bench ? 'bench' : 'journeys');
  let passed = 0;
  let failed = 0;
  try {
    const display = await startXvfb();
    const saved = join(work, 'saved');
    mkdirSync(saved);
    const base = await startDriver(display, join(work, 'data'), saved);
    for (const journey of journeys) {
      const started = Date.now();
      const sessions = [];
      const ctx = {
        work,
        /** Where the app's save dialogs put files (the suggested name in this folder). */
        saved,
        db: (name) => join(work, `${name}.sqlite`),
        /** Runs the CLI (seeding data before the window opens); returns stdout, throws with stderr. */
        kvgate(args, { timeoutMs = 300000 } = {}) {
          if (!existsSync(cli)) throw new Error(`CLI binary not found: ${cli} (run \`make build\` first)`);
          try {
            return execFileSync(cli, args, { cwd: root, encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] });
          } catch (e) {
            throw new Error(`kvgate ${args.join(' ')} failed: ${e.stderr || e.message}`);
          }
        },
        /** Runs the CLI and returns its exit status and stdout, whatever the status. */
        kvgateStatus(args, { timeoutMs = 300000 } = {}) {
          try {
            return { code: 0, out: execFileSync(cli, args, { cwd: root, encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] }) };
          } catch (e) {
            if (typeof e.status !== 'number') throw e;
            return { code: e.status, out: String(e.stdout ?? '') };
          }
        },
        async launch(args = []) {
          const s = await Session.create(base, app, args);
          sessions.push(s);
          return s;
        },
        async screenshot(session, name) {
          const path = join(artifacts, `${name}.png`);
          writeFileSync(path, await session.screenshotPng());
          return path;
        },
      };
      try {
        await journey.run(ctx);
        passed++;
        console.log(`ok   ${journey.name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${journey.name}: ${e.stack || e}`);
        for (const [i, s] of sessions.entries()) {
          try {
            const p = await ctx.screenshot(s, `failure-${journey.name.replace(/\W+/g, '-')}-${i}`);
            console.log(`     screenshot: ${p}`);
          } catch {
            /* the window may be gone */
          }
        }
      } finally {
        for (const s of sessions) await s.close().catch(() => {});
      }
    }
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    await stopAll();
    process.exit(130);
  });
}

main().then(
  (code) => process.exit(code),
  async (e) => {
    console.error(`e2e runner error: ${e.stack || e}`);
    await stopAll();
    console.log('0 passed, 1 failed');
    process.exit(1);
  },
);
