import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importCycles, sourceFiles } from '../import-graph.js';

describe('import circles', () => {
  it('there are none in server/, main/ or shared/, type-only imports included', () => {
    expect(importCycles(sourceFiles(['server', 'main', 'shared']))).toEqual([]);
  });

  it('a circle is found and named, through a type-only import too', async () => {
    const root = await mkdtemp(join(tmpdir(), 'hnx-cycles-'));
    try {
      await mkdir(join(root, 'm'));
      await writeFile(join(root, 'm', 'a.ts'), "import { b } from './b.js';\nexport const a = b;\n");
      await writeFile(join(root, 'm', 'b.ts'), "import type { C } from './c.js';\nexport const b: C = 1;\n");
      await writeFile(join(root, 'm', 'c.ts'), "export type C = number;\nexport { a } from './a.js';\n");
      await writeFile(join(root, 'm', 'd.ts'), "import { a } from './a.js';\nexport const d = a;\n");
      expect(importCycles(sourceFiles(['m'], root), root)).toEqual(['m/a.ts -> m/b.ts -> m/c.ts -> m/a.ts']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
