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
 * `patches` (`- path:` strategic-merge patches of whole objects, matched by kind, name and
 * namespace) and `images` (`name`, `newName`, `newTag`). Any other key throws, so the renderer
 * cannot silently ignore what kustomize would do.
 *
 * Strategic merge, as far as used here: maps merge key by key (`null` deletes), lists of objects
 * merge by `name` (containers, env, volumes, ports with names), every other list is replaced.
 */
export function renderKustomization(dir: string): Record<string, unknown>[] {
  const file = path.join(dir, 'kustomization.yaml');
  const k = parseOne(readFileSync(file, 'utf8'), file) as Record<string, unknown>;
  const known = new Set(['apiVersion', 'kind', 'resources', 'patches', 'images']);
  for (const key of Object.keys(k)) {
    if (!known.has(key))
      throw new Error(`${file}: kustomization key "${key}" is not supported by the test renderer`);
  }
  const objects: Record<string, unknown>[] = [];
  for (const entry of (k.resources as string[] | undefined) ?? []) {
    const target = path.join(dir, entry);
    if (statSync(target).isDirectory()) objects.push(...renderKustomization(target));
    else objects.push(...readObjects(target));
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
  return objects;
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
    for (const item of patch as { name: string }[]) {
      const i = out.findIndex((o) => o.name === item.name);
      if (i < 0) out.push(item);
      else out[i] = merge(out[i], item) as { name: string };
    }
    return out;
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
