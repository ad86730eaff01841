import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * A tiny renderer for the subset of kustomize that `deploy/` uses, so that tests can check the
 * rendered overlays without a `kustomize` binary (none is on npm that works offline). The real path
 * is `kubectl kustomize deploy/overlays/<name>` (deploy/README.md); the real-cluster suite
 * (`npm run test:k8s`) checks that both agree.
 *
 * Supported `kustomization.yaml` keys: `apiVersion`, `kind`, `resources` (files and directories),
 * `components` (directories of `kind: Component` with the same keys), `configMapGenerator`
 * (`name`, `namespace`, `files` as `path` or `key=path`, `literals`, `options.labels`, and
 * `options.disableNameSuffixHash: true`, which is required: the hash suffix is not reproduced),
 * `patches` (`- path:` strategic-merge patches of whole objects, matched by kind, name and
 * namespace) and `images` (`name`, `newName`, `newTag`). Any other key throws, so the renderer
 * cannot silently ignore what kustomize would do.
 *
 * Strategic merge, as far as used here: maps merge key by key (`null` deletes), lists of objects
 * merge by `name` (containers, env, volumes, ports with names; items only the patch has come
 * first, as kustomize orders them), every other list is replaced.
 */
export function renderKustomization(dir: string): Record<string, unknown>[] {
  const file = path.join(dir, 'kustomization.yaml');
  const k = parseOne(readFileSync(file, 'utf8'), file) as Record<string, unknown>;
  const objects: Record<string, unknown>[] = [];
  for (const entry of (k.resources as string[] | undefined) ?? []) {
    const target = path.join(dir, entry);
    if (statSync(target).isDirectory()) objects.push(...renderKustomization(target));
    else objects.push(...readObjects(target));
  }
  applyKustomization(dir, file, k, objects);
  return objects;
}

/** Apply one kustomization's (or component's) components, generators, patches and images to `objects`. */
function applyKustomization(
  dir: string,
  file: string,
  k: Record<string, unknown>,
  objects: Record<string, unknown>[],
): void {
  const known = new Set([
    'apiVersion',
    'kind',
    'resources',
    'components',
    'configMapGenerator',
    'patches',
    'images',
  ]);
  for (const key of Object.keys(k)) {
    if (!known.has(key))
      throw new Error(`${file}: kustomization key "${key}" is not supported by the test renderer`);
  }
  for (const entry of (k.components as string[] | undefined) ?? []) {
    const componentDir = path.join(dir, entry);
    const componentFile = path.join(componentDir, 'kustomization.yaml');
    const c = parseOne(readFileSync(componentFile, 'utf8'), componentFile) as Record<string, unknown>;
    if (c.kind !== 'Component') throw new Error(`${componentFile}: expected kind: Component`);
    for (const r of (c.resources as string[] | undefined) ?? [])
      objects.push(...readObjects(path.join(componentDir, r)));
    applyKustomization(componentDir, componentFile, { ...c, resources: undefined }, objects);
  }
  for (const g of (k.configMapGenerator as ConfigMapGenerator[] | undefined) ?? []) {
    objects.push(generateConfigMap(dir, file, g));
  }
  for (const patch of (k.patches as { path?: string }[] | undefined) ?? []) {
    if (!patch.path) throw new Error(`${file}: only "- path:" patches are supported by the test renderer`);
    for (const p of readObjects(path.join(dir, patch.path))) {
      const index = objects.findIndex((o) => sameObject(o, p));
      if (index < 0) throw new Error(`${file}: patch ${patch.path} matches no object (${idOf(p)})`);
      objects[index] = merge(objects[index], p) as Record<string, unknown>;
    }
  }
  for (const image of (k.images as { name: string; newName?: string; newTag?: string }[] | undefined) ?? []) {
    for (const o of objects) rewriteImages(o, image);
  }
}

interface ConfigMapGenerator {
  name: string;
  namespace?: string;
  behavior?: string;
  files?: string[];
  literals?: string[];
  options?: { labels?: Record<string, string>; disableNameSuffixHash?: boolean };
}

/** A ConfigMap as kustomize's `configMapGenerator` makes it (files keyed by base name or `key=`). */
function generateConfigMap(dir: string, file: string, g: ConfigMapGenerator): Record<string, unknown> {
  if (g.behavior !== undefined && g.behavior !== 'create')
    throw new Error(
      `${file}: configMapGenerator behavior "${g.behavior}" is not supported by the test renderer`,
    );
  if (g.options?.disableNameSuffixHash !== true)
    throw new Error(
      `${file}: configMapGenerator ${g.name}: the test renderer needs options.disableNameSuffixHash: true`,
    );
  const data: Record<string, string> = {};
  for (const entry of g.files ?? []) {
    const [key, rel] = entry.includes('=')
      ? (entry.split('=', 2) as [string, string])
      : [path.basename(entry), entry];
    data[key] = readFileSync(path.join(dir, rel), 'utf8');
  }
  for (const literal of g.literals ?? []) {
    const i = literal.indexOf('=');
    data[literal.slice(0, i)] = literal.slice(i + 1);
  }
  const metadata: Record<string, unknown> = { name: g.name };
  if (g.namespace) metadata.namespace = g.namespace;
  if (g.options.labels) metadata.labels = g.options.labels;
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data };
}

/** `Kind/namespace/name` of an object. */
export function idOf(o: Record<string, unknown>): string {
  const meta = (o.metadata ?? {}) as { name?: string; namespace?: string };
  return `${String(o.kind)}/${meta.namespace ?? ''}/${meta.name ?? ''}`;
}

function readObjects(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
      return d.toJS() as Record<string, unknown> | null;
    })
    .filter((o): o is Record<string, unknown> => o !== null);
}

function parseOne(text: string, file: string): unknown {
  const docs = readObjectsFromText(text, file);
  if (docs.length !== 1) throw new Error(`${file}: expected one YAML document`);
  return docs[0];
}

function readObjectsFromText(text: string, file: string): unknown[] {
  return parseAllDocuments(text).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return d.toJS() as unknown;
  });
}

function sameObject(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return idOf(a) === idOf(b);
}

function merge(base: unknown, patch: unknown): unknown {
  if (patch === null) return undefined;
  if (Array.isArray(patch)) {
    if (!Array.isArray(base)) return patch;
    const keyed = (l: unknown[]) =>
      l.every((i) => i && typeof i === 'object' && typeof (i as { name?: unknown }).name === 'string');
    if (!keyed(base) || !keyed(patch)) return patch;
    const out = [...base] as { name: string }[];
    const added: { name: string }[] = [];
    for (const item of patch as { name: string }[]) {
      const i = out.findIndex((o) => o.name === item.name);
      if (i < 0) added.push(item);
      else out[i] = merge(out[i], item) as { name: string };
    }
    // kustomize's strategic merge puts the items only the patch has before the original ones.
    return [...added, ...out];
  }
  if (patch && typeof patch === 'object') {
    const out: Record<string, unknown> =
      base && typeof base === 'object' && !Array.isArray(base) ? { ...(base as object) } : {};
    for (const [k, v] of Object.entries(patch)) {
      const merged = merge(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
    return out;
  }
  return patch;
}

function rewriteImages(node: unknown, image: { name: string; newName?: string; newTag?: string }): void {
  if (Array.isArray(node)) {
    for (const n of node) rewriteImages(n, image);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  for (const listKey of ['containers', 'initContainers']) {
    const list = o[listKey];
    if (!Array.isArray(list)) continue;
    for (const c of list as { image?: string }[]) {
      if (!c.image) continue;
      const m = /^([^:@]+(?::\d+\/[^:@]+)?)(?::([^@]+))?$/.exec(c.image);
      if (!m || m[1] !== image.name) continue;
      c.image = `${image.newName ?? image.name}:${image.newTag ?? m[2] ?? 'latest'}`;
    }
  }
  for (const v of Object.values(o)) rewriteImages(v, image);
}
