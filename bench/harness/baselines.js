// Baseline servers the scenarios compare the host with, each in its own process:
//   node bench/harness/baselines.js relay        a bare ws relay: a socket names itself with ?id=..., a text
//                                               message {"to": id, ...} is forwarded unchanged to that socket
//   node bench/harness/baselines.js stream DIR   a bare node:http server streaming each body to a file in DIR with
//                                               MD5 (?fsync=1: fsync before answering)
// Both print "listening on URL" and exit when stdin closes (the bench went away).
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { WebSocketServer } from 'ws';

const [mode, dir] = process.argv.slice(2);
const listening = (port) => process.stdout.write(`listening on http://127.0.0.1:${port}\n`);

if (mode === 'relay') {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const sockets = new Map();
  wss.on('connection', (ws, req) => {
    const id = new URL(req.url ?? '/', 'http://relay').searchParams.get('id') ?? '';
    sockets.set(id, ws);
    ws.on('message', (data) => {
      const to = /"to":"([^"]*)"/.exec(data.toString('utf8'))?.[1];
      sockets.get(to)?.send(data, { binary: false });
    });
    ws.on('close', () => sockets.get(id) === ws && sockets.delete(id));
    ws.on('error', () => undefined);
    ws.send('{"message":"authenticated","result":{}}');
  });
  wss.on('listening', () => listening(wss.address().port));
} else if (mode === 'stream') {
  let count = 0;
  const server = http.createServer((req, res) => {
    const fsync = req.url.includes('fsync=1');
    const path = join(dir, `upload-${count++}.bin`);
    const md5 = createHash('md5');
    let size = 0;
    req.on('data', (chunk) => {
      md5.update(chunk);
      size += chunk.length;
    });
    pipeline(req, createWriteStream(path, { flags: 'wx' }))
      .then(async () => {
        if (!fsync) return;
        const handle = await open(path, 'r+');
        await handle.sync().finally(() => handle.close());
      })
      .then(
        () => res.end(JSON.stringify({ Hash: md5.digest('hex'), Size: size, Path: path })),
        (error) => res.writeHead(500).end(JSON.stringify({ error: String(error) })),
      );
  });
  server.listen(0, '127.0.0.1', () => listening(server.address().port));
} else {
  throw new Error('usage: baselines.js relay | stream DIR');
}
process.stdin.resume();
process.stdin.once('end', () => process.exit(0));
process.once('SIGTERM', () => process.exit(0));
