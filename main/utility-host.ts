import { utilityProcess } from 'electron';
import { HOST_CHILD_PATH, type SpawnHostProcess } from './host-process.js';

/** The host in an Electron utility process: a Node child with its own event loop, messages over its port. */
export function forkUtilityHost(entry: string = HOST_CHILD_PATH): SpawnHostProcess {
  return () => {
    const child = utilityProcess.fork(entry, [], {
      serviceName: 'Hypernex Companion host',
      stdio: 'pipe',
      env: { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16' },
    });
    return {
      get pid() {
        return child.pid;
      },
      post: (message) => child.postMessage(message),
      onMessage: (listener) => child.on('message', listener),
      onExit: (listener) => child.once('exit', (code) => listener(`exit code ${code}`)),
      kill: () => {
        child.kill();
      },
      stdout: child.stdout,
      stderr: child.stderr,
    };
  };
}
