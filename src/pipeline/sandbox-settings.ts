import type { SandboxSettings } from '../sandbox/sandbox.js';
import type { JobPolicy } from './job-context.js';

/**
 * The sandbox settings an admin set in the policy (image, resources, runtime class). Values still
 * at their built-in default (`sources[key] === 'default'`) are left out, so that the sandbox
 * driver's own defaults (the worker's environment: SANDBOX_IMAGE, SANDBOX_RUNTIME_CLASS, driver
 * sizes) apply to them. Without `sources`, every value given applies.
 */
export function sandboxSettingsOf(policy: JobPolicy): SandboxSettings {
  const sb = policy.sandbox;
  if (!sb) return {};
  const set = (key: string): boolean => (policy.sources?.[key] ?? 'policy') !== 'default';
  const pick = (kind: 'requests' | 'limits'): Record<string, string> =>
    Object.fromEntries(
      Object.entries(sb.resources[kind]).filter(
        (e): e is [string, string] => e[1] !== undefined && set(`sandbox.resources.${kind}.${e[0]}`),
      ),
    );
  const requests = pick('requests');
  const limits = pick('limits');
  const resources = {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
  return {
    ...(sb.image && set('sandbox.image') ? { image: sb.image } : {}),
    ...(sb.runtimeClassName && set('sandbox.runtimeClassName')
      ? { runtimeClassName: sb.runtimeClassName }
      : {}),
    ...(Object.keys(resources).length > 0 ? { resources } : {}),
  };
}
