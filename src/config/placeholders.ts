/**
 * Placeholders that the shipped configuration (deploy/) carries where a site's own values belong,
 * chosen so that they can never be real: IPv4 documentation ranges (RFC 5737: 192.0.2.0/24,
 * 198.51.100.0/24, 203.0.113.0/24) for NetworkPolicy CIDRs, and reserved example domains (RFC 2606,
 * RFC 6761: `example.com|net|org` and below, `*.example`, `*.invalid`) for host names and image
 * registries. `doctor` and `scripts/check-placeholders.mjs` refuse a configuration that still has one.
 */

/** One placeholder found: where, and the value. */
export interface Placeholder {
  /** Where it was found, e.g. `NetworkPolicy/frognano/github-egress spec.egress[0].to[0].ipBlock.cidr` or `GHE_HOST`. */
  where: string;
  value: string;
}

const DOCUMENTATION_RANGES = ['192.0.2.', '198.51.100.', '203.0.113.'];

/** Whether `value` is an IPv4 address or CIDR inside an RFC 5737 documentation range. */
export function isDocumentationAddress(value: string): boolean {
  const m = /^(\d{1,3}\.\d{1,3}\.\d{1,3}\.)\d{1,3}(?:\/(\d{1,2}))?$/.exec(value.trim());
  if (!m) return false;
  // A prefix shorter than /24 would reach past the documentation block: not one of ours.
  return DOCUMENTATION_RANGES.includes(m[1]!) && (m[2] === undefined || Number(m[2]) >= 24);
}

/**
 * Whether `value` names a reserved example host: a host name, a `host:port`, a URL, or an image
 * reference whose registry is such a host (`registry.example.com/frognano/sandbox:0.1.0`).
 */
export function isExampleHost(value: string): boolean {
  if (/\s/.test(value.trim())) return false; // text, not a host
  let host = value.trim().toLowerCase();
  host = host.replace(/^[a-z][a-z0-9+.-]*:\/\//, ''); // URL scheme
  host = host.replace(/^[^@/]*@/, ''); // credentials
  host = host.split('/')[0]!.replace(/:\d+$/, '');
  if (!host.includes('.')) return false;
  return /(^|\.)example\.(com|net|org)$/.test(host) || /\.(example|invalid)$/.test(host);
}

/**
 * Every placeholder in rendered Kubernetes objects: documentation-range addresses anywhere, and
 * example hosts in ConfigMap data and container images.
 */
export function findManifestPlaceholders(objects: readonly Record<string, unknown>[]): Placeholder[] {
  const found: Placeholder[] = [];
  for (const o of objects) {
    const meta = (o.metadata ?? {}) as { name?: string; namespace?: string };
    const id = `${String(o.kind)}/${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
    walk(o, '', (path, value) => {
      const key = path.split('.').at(-1) ?? '';
      const hostLike = path.startsWith('data.') || key === 'image' || /(^|\.)value$/.test(path);
      if (isDocumentationAddress(value) || (hostLike && isExampleHost(value))) {
        found.push({ where: `${id} ${path}`, value });
      }
    });
  }
  return found;
}

function walk(node: unknown, path: string, visit: (path: string, value: string) => void): void {
  if (typeof node === 'string') visit(path, node);
  else if (Array.isArray(node)) node.forEach((item, i) => walk(item, `${path}[${i}]`, visit));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) walk(v, path ? `${path}.${k}` : k, visit);
  }
}
