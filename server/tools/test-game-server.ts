import { EventEmitter } from 'node:events';
import WebSocket from 'ws';

/**
 * A stand-in for the Hypernex game server, speaking its side of the socket protocol (reference 8.3 to 8.5): it
 * authenticates with a server token, claims instance requests, readies the instances it got and answers nothing
 * else. Used by the tests and by `hypernex-companion test-game-server` to try the instance flow on a LAN.
 */
export interface TestGameServerOptions {
  /** The host's address, http(s):// or ws(s)://. */
  url: string;
  /** A game-server token of the host; may be empty when the host allows any game server. */
  serverToken: string;
  /** What the game server tells players to connect to. */
  uri?: string;
  /** Claim every instance request (default true). */
  autoClaim?: boolean;
  /** Mark claimed instances ready at once (default true). */
  autoReady?: boolean;
  /** The local address to connect from (tests stand for other machines with other loopback addresses). */
  localAddress?: string;
}

export interface Received {
  message: string;
  result: Record<string, unknown>;
}

export class TestGameServer extends EventEmitter<{ message: [Received]; close: [number] }> {
  gameServerId = '';
  /** What the host answered in `sendauth`: with the id, the proof this server fetches server scripts with. */
  gameServerToken = '';
  readonly received: Received[] = [];
  #ws: WebSocket;

  private constructor(
    ws: WebSocket,
    private readonly options: TestGameServerOptions,
  ) {
    super();
    this.#ws = ws;
    ws.on('message', (data) => {
      let parsed: Received;
      try {
        parsed = JSON.parse(data.toString()) as Received;
      } catch {
        return;
      }
      this.received.push(parsed);
      this.#react(parsed);
      this.emit('message', parsed);
    });
    ws.on('close', (code) => this.emit('close', code));
    ws.on('error', () => undefined);
  }

  /** Connects and authenticates; resolves once the host answered `sendauth`. */
  static connect(options: TestGameServerOptions): Promise<TestGameServer> {
    const ws = new WebSocket(
      options.url.replace(/^http/, 'ws'),
      options.localAddress ? { localAddress: options.localAddress } : {},
    );
    const server = new TestGameServer(ws, options);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no sendauth from the host')), 5000);
      ws.once('open', () =>
        ws.send(JSON.stringify({ serverTokenContent: options.serverToken, message: 'auth', args: {} })),
      );
      ws.once('error', reject);
      server.on('close', (code) => {
        clearTimeout(timer);
        reject(new Error(`host closed the game-server socket (${code})`));
      });
      server.on('message', (m) => {
        if (m.message === 'sendauth') {
          clearTimeout(timer);
          server.gameServerId = String(m.result.gameServerId);
          server.gameServerToken = String(m.result.gameServerToken ?? '');
          resolve(server);
        }
      });
    });
  }

  /** Sends a game-server message (it carries this server's id and token, as the real one does). */
  send(message: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): void {
    this.#ws.send(
      JSON.stringify({
        gameServerId: this.gameServerId,
        gameServerToken: this.gameServerToken,
        serverTokenContent: this.options.serverToken,
        message,
        args,
        ...extra,
      }),
    );
  }

  /** Waits for the next message called `name` that passes `where`. */
  next(
    name: string,
    where: (result: Record<string, unknown>) => boolean = () => true,
    timeoutMs = 3000,
  ): Promise<Record<string, unknown>> {
    const index = this.received.findIndex((m) => m.message === name && where(m.result));
    if (index >= 0) return Promise.resolve(this.received.splice(index, 1)[0]!.result);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off('message', listener);
        reject(new Error(`no ${name} within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (m: Received): void => {
        if (m.message !== name || !where(m.result)) return;
        clearTimeout(timer);
        this.off('message', listener);
        this.received.splice(this.received.indexOf(m), 1);
        resolve(m.result);
      };
      this.on('message', listener);
    });
  }

  #react(m: Received): void {
    if (m.message === 'requestedinstancecreated' && this.options.autoClaim !== false) {
      this.send('claiminstancerequest', {
        TemporaryId: m.result.temporaryId,
        Uri: this.options.uri ?? '127.0.0.1:7777',
      });
    }
    if (m.message === 'selectedgameserver' && this.options.autoReady !== false) {
      const meta = m.result.instanceMeta as { InstanceId?: string } | undefined;
      if (meta?.InstanceId) this.send('instanceready', { instanceId: meta.InstanceId });
    }
  }

  close(): void {
    this.#ws.terminate();
  }
}
