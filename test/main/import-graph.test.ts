import { describe, expect, it } from 'vitest';
import { runtimeGraph } from '../import-graph.js';

// Electron's main process starts at main/main.ts (package.json "main" -> dist/main/main.js). It used to load the
// whole server (~80 modules and Koa, ws, lowdb, argon2...) before it could open the window; the host runs in its
// own process (main/host-child.ts), and main needs only the wire contract's types and the helpers in shared/.
const ENTRY = 'main/main.ts';

/** The server modules the main process may load (bench/scenarios/main-start.js measures what it loads). */
const ALLOWED_SERVER_RUNTIME: string[] = [];
/** ... and may name types from: the bridge's contract, and the host's configuration main sends its process. */
const ALLOWED_SERVER_TYPES = ['server/protocol/host-bridge.ts', 'server/config.ts'];
/** Run in the host process (or in tests), never in the main process. */
const HOST_PROCESS_MODULES = ['main/host-child.ts', 'main/host-agent.ts', 'main/in-process-host.ts'];
/** Packages only the host uses. */
const HOST_PACKAGES = ['koa', '@koa/router', 'ws', 'lowdb', '@node-rs/argon2', 'pg', 'ioredis', 'immer'];

const graph = runtimeGraph(ENTRY);
const server = (files: Iterable<string>): string[] => [...files].filter((file) => file.startsWith('server/'));

describe("the main process's imports", () => {
  it('load no module of server/ beyond the allowed ones', () => {
    expect(server(graph.files)).toEqual(ALLOWED_SERVER_RUNTIME);
  });

  it('name types only from the allowed modules of server/', () => {
    const named = new Set(server(graph.typeImports.map((edge) => edge.to)));
    const refused = graph.typeImports.filter(
      (edge) => named.has(edge.to) && !ALLOWED_SERVER_TYPES.includes(edge.to),
    );
    expect(refused).toEqual([]);
  });

  it("load none of the host process's modules and none of its packages", () => {
    expect([...graph.files].filter((file) => HOST_PROCESS_MODULES.includes(file))).toEqual([]);
    expect(HOST_PACKAGES.filter((name) => graph.packages.has(name))).toEqual([]);
  });

  it('are all followed, dynamic ones included (the walk sees the whole shell)', () => {
    expect(graph.opaque).toEqual([]);
    // The updater is loaded on demand; the walk still counts it.
    expect(graph.dynamic).toContain('electron-updater');
    for (const file of ['main/desktop-app.ts', 'main/host-process.ts', 'shared/atomic-file.ts']) {
      expect(graph.files).toContain(file);
    }
    expect(graph.packages.has('electron')).toBe(true);
  });
});
