import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the receiver got: its JSON body, headers and when it arrived (ms). */
export interface ReceivedPost {
  body: {
    content: string;
    embeds: Array<{
      title: string;
      description?: string;
      fields: Array<{ name: string; value: string; inline?: boolean }>;
      timestamp: string;
    }>;
    allowed_mentions: { parse: unknown[] };
  };
  headers: IncomingMessage['headers'];
  path: string;
  at: number;
}

/** How the receiver answers a POST (the default: 204, as Discord does). */
export type Answer = (post: ReceivedPost, res: ServerResponse) => void | Promise<void>;

/**
 * A Discord-like webhook receiver on 127.0.0.1 (port 0, or a port to take again after `stop`), for the webhook
 * tests: it records every POST and answers as the test says.
 */
export class WebhookReceiver {
  readonly posts: ReceivedPost[] = [];
  answer: Answer = (_post, res) => {
    res.writeHead(204).end();
  };
  #server: Server | null = null;
  port = 0;

  /** Listens (again) on `port`, or on a free one the first time. */
  async start(port = this.port): Promise<this> {
    const server = createServer((req, res) => this.#handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
    return this;
  }

  /** Stops listening and drops open connections: the port now refuses connections. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  url(path = '/api/webhooks/1234567890/a-secret-token-XYZ9'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const post: ReceivedPost = {
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as ReceivedPost['body'],
        headers: req.headers,
        path: req.url ?? '',
        at: Date.now(),
      };
      this.posts.push(post);
      Promise.resolve(this.answer(post, res)).catch(() => res.destroy());
    });
  }
}
