// Reads our modules' imports from the sources (TypeScript's parser, no build needed) for the tests that keep the
// import boundaries: test/main/import-graph.test.ts (what Electron's main process loads) and
// test/server/import-cycles.test.ts (no module imports itself back).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** One import of a module: a file of ours (repo-relative) or a package / built-in by its specifier. */
export interface ImportRef {
  specifier: string;
  /** The repo-relative file a relative specifier names; null for a package or a built-in. */
  file: string | null;
  /** Erased by the compiler (`import type`, or only `type` names): loads nothing at run time. */
  typeOnly: boolean;
  dynamic: boolean;
}

/** `import x from`, `export ... from`, `import('...')`; a dynamic import of a computed name has specifier null. */
export function importsOf(file: string, root = ROOT): (ImportRef | { specifier: null; dynamic: true })[] {
  const path = join(root, file);
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: (ImportRef | { specifier: null; dynamic: true })[] = [];
  const add = (specifier: string, typeOnly: boolean, dynamic: boolean): void => {
    found.push({ specifier, file: resolveSpecifier(file, specifier, root), typeOnly, dynamic });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, isTypeOnlyImport(node.importClause), false);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const clause = node.exportClause;
      const typeOnly =
        node.isTypeOnly ||
        (clause !== undefined &&
          ts.isNamedExports(clause) &&
          clause.elements.length > 0 &&
          clause.elements.every((e) => e.isTypeOnly));
      add(node.moduleSpecifier.text, typeOnly, false);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) add(argument.text, false, true);
      else found.push({ specifier: null, dynamic: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function isTypeOnlyImport(clause: ts.ImportClause | undefined): boolean {
  if (!clause) return false; // `import './x.js'` runs the module
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  return (
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  );
}

/** `./x.js` from `main/a.ts` -> `main/x.ts` (or .tsx); null for packages and built-ins. */
export function resolveSpecifier(from: string, specifier: string, root = ROOT): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = resolve(root, dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), base];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) throw new Error(`${from}: cannot resolve ${specifier}`);
  return relative(root, found).split('\\').join('/');
}

/** Every .ts/.tsx module under these folders (repo-relative), declaration files apart. */
export function sourceFiles(folders: string[], root = ROOT): string[] {
  const out: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = `${folder}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
    }
  };
  for (const folder of folders) walk(folder);
  return out.sort();
}

export interface RuntimeGraph {
  /** Our modules loaded, the entry included. */
  files: Set<string>;
  /** Packages and built-ins loaded (by specifier), with the first module that imports each. */
  packages: Map<string, string>;
  /** Modules loaded only by a dynamic import (they load later, but load). */
  dynamic: Set<string>;
  /** Type-only imports of our modules: importer -> imported (nothing loaded). */
  typeImports: { from: string; to: string }[];
  /** Dynamic imports of a computed name, which no walk can follow: by importer. */
  opaque: string[];
}

/** What importing `entry` loads: static and dynamic imports followed, type-only ones noted and not followed. */
export function runtimeGraph(entry: string, root = ROOT): RuntimeGraph {
  const graph: RuntimeGraph = {
    files: new Set(),
    packages: new Map(),
    dynamic: new Set(),
    typeImports: [],
    opaque: [],
  };
  const queue = [entry];
  graph.files.add(entry);
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const ref of importsOf(file, root)) {
      if (ref.specifier === null) {
        graph.opaque.push(file);
        continue;
      }
      if (ref.file === null) {
        if (!ref.typeOnly && !graph.packages.has(ref.specifier)) graph.packages.set(ref.specifier, file);
        if (!ref.typeOnly && ref.dynamic) graph.dynamic.add(ref.specifier);
        continue;
      }
      if (ref.typeOnly) {
        graph.typeImports.push({ from: file, to: ref.file });
        continue;
      }
      if (ref.dynamic) graph.dynamic.add(ref.file);
      if (graph.files.has(ref.file)) continue;
      graph.files.add(ref.file);
      queue.push(ref.file);
    }
  }
  return graph;
}

/**
 * Every import circle among `files` (type-only imports count: a circle of types is still two modules that cannot
 * be understood apart), each as the path `a -> b -> ... -> a`.
 */
export function importCycles(files: readonly string[], root = ROOT): string[] {
  const edges = new Map<string, string[]>();
  const among = new Set(files);
  for (const file of files) {
    const targets = importsOf(file, root).flatMap((ref) =>
      ref.specifier !== null && ref.file ? [ref.file] : [],
    );
    edges.set(
      file,
      [...new Set(targets)].filter((target) => among.has(target)),
    );
  }
  return stronglyConnected(edges)
    .filter((group) => group.length > 1 || (edges.get(group[0] ?? '') ?? []).includes(group[0] ?? ''))
    .map((group) => cycleThrough(group, edges).join(' -> '));
}

/** Tarjan's strongly connected components. */
function stronglyConnected(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) ?? 0);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      group.push(member);
      if (member === node) break;
    }
    groups.push(group.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) connect(node);
  return groups;
}

/** One circle inside a strongly connected group, from its first member back to it (shortest, breadth first). */
function cycleThrough(group: string[], edges: Map<string, string[]>): string[] {
  const start = group[0] ?? '';
  const previous = new Map<string, string>();
  const queue = [start];
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
    for (const next of edges.get(node) ?? []) {
      if (!group.includes(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = previous.get(at)) {
          path.splice(1, 0, at);
        }
        return [...path, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [...group, start];
}
