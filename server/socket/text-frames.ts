import type { Socket } from 'node:net';
import { WebSocket } from 'ws';

/**
 * Writes server text frames to a `ws` socket as one buffer and one write each.
 *
 * `ws` frames a message as two writes (header, then payload) inside cork/uncork, which Node turns into a writev
 * with its bookkeeping: on a busy socket server that bookkeeping is a tenth of the time spent per message. A
 * server frame is unmasked and, with permessage-deflate off (as we configure it), is just a 2-, 4- or 10-byte
 * header and the UTF-8 payload, so we build it whole and write it to the TCP socket directly. Order with the
 * frames `ws` writes itself (ping, close) is kept: both write synchronously to the same socket, and `ws` queues
 * nothing of its own when compression is off.
 *
 * When the TCP socket is not reachable (a `ws` release that renames its internals) this falls back to
 * `ws.send`, so only speed depends on the internals, never behaviour.
 */
export class TextFrameSender {
  readonly #ws: WebSocket;
  readonly #raw: Socket | null;

  constructor(ws: WebSocket) {
    this.#ws = ws;
    const raw = (ws as unknown as { _socket?: unknown })._socket;
    this.#raw = isWritableSocket(raw) ? raw : null;
  }

  send(text: string): void {
    if (this.#ws.readyState !== WebSocket.OPEN) return;
    const raw = this.#raw;
    if (raw === null || raw.destroyed || !raw.writable) {
      this.#ws.send(text);
      return;
    }
    raw.write(encodeTextFrame(text));
  }
}

/** One unmasked, final text frame (RFC 6455 section 5.2) holding `text` as UTF-8. */
export function encodeTextFrame(text: string): Buffer {
  const length = Buffer.byteLength(text, 'utf8');
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81; // FIN + opcode 1 (text)
  if (header === 2) {
    frame[1] = length;
  } else if (header === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  frame.write(text, header, length, 'utf8');
  return frame;
}

function isWritableSocket(value: unknown): value is Socket {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as Socket).write === 'function' &&
    typeof (value as Socket).destroyed === 'boolean'
  );
}
