// Where the build puts what the host serves, as a plain path (shared/: see atomic-file.ts). The desktop shell hands
// it to its host process without loading the command line that also uses it.
import { fileURLToPath } from 'node:url';

/**
 * The built UI (`npm run build`: dist/renderer), beside the folder of the compiled module that resolves it:
 * dist/shared for this file, dist/bundle once the command line or the host process is bundled (one level under
 * dist either way).
 */
export const BUILT_UI_DIR = fileURLToPath(new URL('../renderer', import.meta.url));
