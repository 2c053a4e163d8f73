import type { AddressInfo } from 'node:net';
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

  it('delivers every size in order, interleaved with the pings and the close ws writes itself', async () => {
    const texts = ['', 'x', 'a'.repeat(125), 'b'.repeat(126), 'c'.repeat(65_535), 'd'.repeat(65_536)];
    texts.push('e'.repeat(200_000), JSON.stringify({ message: 'héllo', result: { emoji: '😀' } }));
    // Then some sent together (one write): alone, several, and none at all.
    const grouped = ['one', 'two', 'f'.repeat(70_000), 'three ✓'];
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
    await new Promise<void>((resolve) => wss!.once('listening', () => resolve()));
    wss.on('connection', (ws) => {
      const sender = new TextFrameSender(ws);
      texts.forEach((text, i) => {
        sender.send(text);
        if (i === 3) ws.ping();
      });
      sender.sendAll(grouped.slice(0, 1));
      sender.sendAll(grouped.slice(1));
      sender.sendAll([]);
      ws.close(1000, 'done');
      sender.send('after close: never sent');
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
    expect(received).toEqual([...texts, ...grouped]);
    expect(pings).toBe(1);
    expect(closed).toEqual({ code: 1000, reason: 'done' });
  });

  it('falls back to ws.send when the TCP socket is not reachable, and sends nothing unless open', () => {
    const fake: { readyState: number; send: (text: string) => void } = {
      readyState: WebSocket.OPEN,
      send: vi.fn(),
    };
    const sender = new TextFrameSender(fake as unknown as WebSocket);
    sender.send('hello');
    expect(fake.send).toHaveBeenCalledWith('hello');
    sender.sendAll(['a', 'b']);
    expect(fake.send).toHaveBeenNthCalledWith(2, 'a');
    expect(fake.send).toHaveBeenNthCalledWith(3, 'b');
    fake.readyState = WebSocket.CLOSING;
    sender.send('late');
    sender.sendAll(['late', 'later']);
    expect(fake.send).toHaveBeenCalledTimes(3);
  });
});
