import type { Sandbox } from '../../sandbox/sandbox.js';
import type { LeafToolSettings } from './leaf-tool-settings.js';

/** What a Leaf tool runs against: the job's sandbox, the tool limits, and the job's cancellation. */
export interface ToolContext {
  sandbox: Sandbox;
  settings: LeafToolSettings;
  /** Aborting kills a running Bash command (the observation then reports the kill). */
  signal?: AbortSignal;
}

/** Python's `arguments.get(key)`: the own property `key`, or `undefined` (never an inherited one). */
export function getArg(args: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(args, key) ? args[key] : undefined;
}
