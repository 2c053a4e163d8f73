import WebSocket from 'ws';

export interface Received {
  message: string;
  result: Record<string, unknown>;
}

/** A real ws client that records what it receives and lets a test wait for a message by name. */
export class TestSocket {
  readonly received: Received[] = [];
  readonly ws: WebSocket;
  closed: { code: number; reason: string } | null = null;
  #waiters: Array<() => void> = [];

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => {
      try {
        this.received.push(JSON.parse(data.toString()) as Received);
      } catch {
        this.received.push({ message: '<not json>', result: { raw: data.toString() } });
      }
      this.#wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.#wake();
    });
    ws.on('error', () => undefined);
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  static open(url: string, options: WebSocket.ClientOptions = {}): Promise<TestSocket> {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), options);
    const socket = new TestSocket(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(socket));
      ws.once('error', reject);
    });
  }

  /** Opens and verifies as `userId`, resolving at the `authenticated` answer. */
  static async verified(url: string, userId: string, tokenContent: string): Promise<TestSocket> {
    const socket = await TestSocket.open(url);
    socket.sendJson({ userId, tokenContent, message: 'auth', args: {} });
    await socket.next('authenticated');
    return socket;
  }

  sendJson(value: unknown): void {
    this.ws.send(JSON.stringify(value));
  }

  count(name: string): number {
    return this.received.filter((m) => m.message === name).length;
  }

  /** Waits for the next not-yet-consumed message called `name`. */
  async next(name: string, timeoutMs = 3000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.received.findIndex((m) => m.message === name);
      if (index >= 0) return this.received.splice(index, 1)[0]!.result;
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) while waiting for ${name}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`no ${name} within ${timeoutMs} ms; got ${JSON.stringify(this.received)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async waitClosed(timeoutMs = 3000): Promise<{ code: number; reason: string }> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('socket did not close');
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.closed;
  }

  close(): void {
    this.ws.terminate();
  }
}

/** Lets pending socket traffic settle, for tests that show something did NOT arrive. */
export const settle = (ms = 150): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
