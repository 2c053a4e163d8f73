import { crc32, deflateSync } from 'node:zlib';

export type TrayStatus = 'running' | 'stopped' | 'error';

const COLORS: Record<TrayStatus, [number, number, number]> = {
  running: [46, 184, 92],
  stopped: [140, 146, 160],
  error: [224, 68, 68],
};

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * The tray icon as a PNG: a filled disc in the state's colour with a ring, drawn here so the icon needs no image
 * files in the package and every state has one. `size` in pixels (16 and 32 for the @2x variant).
 */
export function trayIconPng(status: TrayStatus, size = 16): Buffer {
  const [r, g, b] = COLORS[status];
  const rows: Buffer[] = [];
  const center = (size - 1) / 2;
  const outer = size / 2 - 0.5;
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4);
    for (let x = 0; x < size; x++) {
      const d = Math.hypot(x - center, y - center);
      // Anti-aliased edge; a darker ring keeps the disc visible on light and dark panels.
      const alpha = Math.max(0, Math.min(1, outer - d + 0.5));
      const ring = d > outer - size / 8 ? 0.6 : 1;
      const offset = 1 + x * 4;
      row[offset] = Math.round(r * ring);
      row[offset + 1] = Math.round(g * ring);
      row[offset + 2] = Math.round(b * ring);
      row[offset + 3] = Math.round(alpha * 255);
    }
    rows.push(row);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 6; // RGBA
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
