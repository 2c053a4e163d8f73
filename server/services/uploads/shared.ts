import type { Logger } from 'pino';
import type { ServiceDeps } from '../context.js';
import type { createKeyedSerial } from '../serial.js';
import type { UploadFolders } from './folders.js';
import type { UploadsRecords } from './records.js';

export type UploadsDeps = Pick<ServiceDeps, 'config' | 'store' | 'users' | 'clock' | 'ids'> & {
  log: Logger;
  localHosts: () => string[];
  maxFileBytes: number;
  chunkSetTtlSeconds: number;
};

/**
 * What the parts of the uploads service share, each piece a small object of its own: the service's dependencies,
 * the store's collections, the data folder's layout, the lock per asset or file, and this host's chunk-set state.
 */
export interface UploadsShared {
  deps: UploadsDeps;
  records: UploadsRecords;
  folders: UploadFolders;
  /**
   * One job at a time per asset id (or `new:<userId>` for a new one) or file id, so each sees the state the one
   * before it left.
   */
  serial: ReturnType<typeof createKeyedSerial>;
  chunks: ChunkHostState;
}

/** What this host process alone knows of chunk sets. */
export interface ChunkHostState {
  /** This host process, as named in the chunk sets it puts together. */
  readonly processId: string;
  /**
   * Bytes of chunks on their way into a set, per user, on this host: counted before they land, so parallel chunks
   * cannot overshoot. Another host's bytes in flight count once its commit lands (this map is per process).
   */
  readonly placing: Map<string, number>;
}
