import type { Logger } from 'pino';
import type { Connection, SocketLimits } from './connection.js';

/** Sends a frame's text to one connection. */
export type SendText = (conn: Connection, text: string) => void;

/**
 * Sends `text` through ws (its public API keeps the count of unsent bytes). The connection is corked until the
 * event loop has handled the I/O it woke for, so a socket owed several frames this turn gets them in one write.
 * A client that stops reading makes the unsent count grow; when it is past `maxBufferedBytes` once the turn's
 * frames went to the kernel, its socket is dropped at once (a close frame would wait behind what it does not
 * read), freeing what was queued for it. The cork is Node's public Writable API on the socket the upgrade gave
 * us; ws's own writes nest inside it and its bufferedAmount counts what it holds.
 *
 * One per socket server: the connections corked this turn are its state.
 */
export function createOutbox(limits: SocketLimits, log: Logger): SendText {
  let corked: Connection[] = [];

  function uncorkAll(): void {
    const list = corked;
    corked = [];
    for (const conn of list) {
      conn.corked = false;
      conn.raw.uncork();
      const buffered = conn.ws.bufferedAmount;
      if (buffered > limits.maxBufferedBytes && conn.ws.readyState === conn.ws.OPEN) {
        log.warn(
          {
            remote: conn.remote,
            userId: conn.userId,
            gameServerId: conn.gameServerId,
            buffered,
            limit: limits.maxBufferedBytes,
          },
          'dropped a socket that is not reading what it is sent (socket.maxBufferedBytes)',
        );
        conn.ws.terminate();
      }
    }
  }

  return function sendText(conn: Connection, text: string): void {
    const ws = conn.ws;
    if (ws.readyState !== ws.OPEN) return;
    if (!conn.corked) {
      conn.corked = true;
      conn.raw.cork();
      if (corked.push(conn) === 1) setImmediate(uncorkAll);
    }
    ws.send(text);
  };
}
