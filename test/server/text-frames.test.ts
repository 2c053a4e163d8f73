import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { encodeTextFrame, encodeTextFrames, TextFrameSender } from '../../server/socket/text-frames.js';

describe('encodeTextFrame', () => {
  it('uses the 7-bit, 16-bit and 64-bit length forms at their boundaries', () => {
    for (const [length, header, marker] of [
      [0, 2, 0],
      [125, 2, 125],
      [126, 4, 126],
      [65_535, 4, 126],
      [65_536, 10, 127],
    ] as const) {
      const frame = encodeTextFrame('a'.repeat(length));
      expect(frame.length).toBe(header + length);
      expect(frame[0]).toBe(0x81);
      expect(frame[1]).toBe(marker);
      if (header === 4) expect(frame.readUInt16BE(2)).toBe(length);
      if (header === 10) expect(frame.readBigUInt64BE(2)).toBe(BigInt(length));
    }
  });

  it('counts UTF-8 bytes, not characters', () => {
    const text = 'héllo ✓ 😀';
    const frame = encodeTextFrame(text);
    expect(frame[1]).toBe(Buffer.byteLength(text));
    expect(frame.subarray(2).toString('utf8')).toBe(text);
  });
});

describe('encodeTextFrames', () => {
  it('is the frames of each text, back to back', () => {
    const texts = ['', 'x', 'a'.repeat(125), 'b'.repeat(126), 'héllo 😀', 'c'.repeat(65_536)];
    expect(encodeTextFrames(texts).equals(Buffer.concat(texts.map((text) => encodeTextFrame(text))))).toBe(
      true,
    );
    expect(encodeTextFrames([]).length).toBe(0);
  });
});

describe('TextFrameSender', () => {
  let wss: WebSocketServer | null = null;
  afterEach(async () => {
    await new Promise<void>((resolve) => (wss ? wss.close(() => resolve()) : resolve()));
    wss = null;
  });

  it('delivers every size in order, with the pings ws writes itself, and flushes before a close', async () => {
    const texts = ['', 'x', 'a'.repeat(125), 'b'.repeat(126), 'c'.repeat(65_535), 'd'.repeat(65_536)];
    texts.push('e'.repeat(200_000), JSON.stringify({ message: 'héllo', result: { emoji: '😀' } }));
    // Then some in a later turn of the event loop, and the last ones flushed by hand before the close.
    const later = ['one', 'two', 'f'.repeat(70_000)];
    const last = ['three ✓', 'four'];
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
    await new Promise<void>((resolve) => wss!.once('listening', () => resolve()));
    const writes: number[] = [];
    wss.on('connection', (ws) => {
      const sender = new TextFrameSender(ws);
      const raw = (ws as unknown as { _socket: Socket })._socket;
      const write = raw.write.bind(raw) as (chunk: Buffer) => boolean;
      raw.write = ((chunk: Buffer) => {
        writes.push(chunk.length);
        return write(chunk);
      }) as typeof raw.write;
      texts.forEach((text, i) => {
        sender.send(text);
        if (i === 3) ws.ping();
      });
      setImmediate(() => {
        for (const text of later) sender.send(text);
        setTimeout(() => {
          for (const text of last) sender.send(text);
          sender.flush();
          ws.close(1000, 'done');
          sender.send('after close: never sent');
          sender.flush();
        }, 10);
      });
    });
    const { port } = wss.address() as AddressInfo;
    const client = new WebSocket(`ws://127.0.0.1:${port}/`);
    const received: string[] = [];
    let pings = 0;
    client.on('message', (data, isBinary) => {
      expect(isBinary).toBe(false);
      received.push((data as Buffer).toString('utf8'));
    });
    client.on('ping', () => pings++);
    const closed = await new Promise<{ code: number; reason: string }>((resolve) =>
      client.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    expect(received).toEqual([...texts, ...later, ...last]);
    expect(pings).toBe(1);
    expect(closed).toEqual({ code: 1000, reason: 'done' });
    // Each turn's frames went out in one write; the rest are the ping and close ws wrote itself (a few bytes).
    const frames = (batch: string[]) => encodeTextFrames(batch).length;
    expect(writes.filter((n) => n > 10)).toEqual([frames(texts), frames(later), frames(last)]);
    expect(writes.filter((n) => n <= 10).length).toBeLessThanOrEqual(4);
  });

  it('writes a lone frame as it is, and a socket with nothing queued not at all', async () => {
    const written: Buffer[] = [];
    const fake = {
      readyState: WebSocket.OPEN,
      _socket: {
        destroyed: false,
        writable: true,
        write: (chunk: Buffer) => written.push(chunk),
      },
    };
    const sender = new TextFrameSender(fake as unknown as WebSocket);
    sender.flush();
    sender.send('solo');
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual([encodeTextFrame('solo')]);
  });

  it('falls back to ws.send when the TCP socket is not reachable, and sends nothing unless open', async () => {
    const fake: { readyState: number; send: (text: string) => void } = {
      readyState: WebSocket.OPEN,
      send: vi.fn(),
    };
    const sender = new TextFrameSender(fake as unknown as WebSocket);
    sender.send('hello');
    sender.send('again');
    expect(fake.send).not.toHaveBeenCalled();
    await new Promise((resolve) => setImmediate(resolve));
    expect(fake.send).toHaveBeenNthCalledWith(1, 'hello');
    expect(fake.send).toHaveBeenNthCalledWith(2, 'again');
    // Queued while open, closing by the time it would be written: dropped with the socket.
    sender.send('late');
    fake.readyState = WebSocket.CLOSING;
    sender.send('later');
    await new Promise((resolve) => setImmediate(resolve));
    expect(fake.send).toHaveBeenCalledTimes(2);
  });
});
