import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import * as apps from 'kubernetes-models/apps/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as node from 'kubernetes-models/node.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as core from 'kubernetes-models/v1';

/**
 * Validate a Kubernetes object against the OpenAPI schema, two ways:
 *
 * 1. `kubernetes-models` (JSON schema generated from the Kubernetes OpenAPI spec): types, formats
 *    (quantities, int-or-string), required fields, enums;
 * 2. unknown fields, which that schema lets through: the object goes through
 *    `@kubernetes/client-node`'s generated model serializer (one attribute list per OpenAPI type)
 *    and back; any field that is lost on the way is not part of the API.
 *
 * @returns the problems found (empty when valid), each naming `Kind/name`.
 * @throws Error for an apiVersion/kind this helper does not know.
 */
export function validateKubernetesObject(obj: unknown): string[] {
  const o = obj as { apiVersion?: string; kind?: string; metadata?: { name?: string } };
  const id = `${o.kind}/${o.metadata?.name ?? '?'}`;
  const groups: Record<string, Record<string, unknown>> = {
    v1: core,
    'apps/v1': apps,
    'networking.k8s.io/v1': networking,
    'policy/v1': policy,
    'rbac.authorization.k8s.io/v1': rbac,
    'node.k8s.io/v1': node,
  };
  const group = groups[o.apiVersion ?? ''];
  const Model = group?.[o.kind ?? ''] as (new (data: unknown) => { validate(): void }) | undefined;
  if (!Model) throw new Error(`validateKubernetesObject: unknown ${o.apiVersion} ${o.kind}`);
  const problems: string[] = [];
  try {
    new Model(obj).validate();
  } catch (err) {
    problems.push(`${id}: ${(err as Error).message}`);
  }
  const version = (o.apiVersion ?? '').split('/').pop()!;
  const typeName = `V${version.slice(1)}${o.kind}`;
  const roundTrip = ObjectSerializer.serialize(
    ObjectSerializer.deserialize(obj, typeName),
    typeName,
  ) as unknown;
  for (const path of lostPaths(obj, roundTrip, '')) problems.push(`${id}: unknown field ${path}`);
  return problems;
}

function lostPaths(original: unknown, kept: unknown, at: string): string[] {
  if (Array.isArray(original)) {
    const list = Array.isArray(kept) ? kept : [];
    return original.flatMap((item, i) => lostPaths(item, list[i], `${at}[${i}]`));
  }
  if (original && typeof original === 'object') {
    const out: string[] = [];
    const keptObj = (kept && typeof kept === 'object' ? kept : {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(original)) {
      if (!(k in keptObj)) out.push(`${at}.${k}`);
      else out.push(...lostPaths(v, keptObj[k], `${at}.${k}`));
    }
    return out;
  }
  return [];
}
