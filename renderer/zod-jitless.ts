import { z } from 'zod';

// zod 4 compiles object parsers with `new Function` unless told not to, and probes for it on the first object
// schema it builds. The UI's CSP (script-src 'self', no 'unsafe-eval') refuses that, and the refused probe is
// reported as a CSP violation on every screen. The interpreter is fast enough for forms. main.tsx imports this
// module first, so it runs before any schema (server/protocol) is built.
z.config({ jitless: true });
