/**
 * Observation parity with the reference Leaf harness: every call of `test/fixtures/leaf-parity/cases.json`
 * runs through `executeTool` in a real local (bubblewrap) sandbox and must return the recorded
 * observation byte for byte, then the files must hold `expected_files`.
 *
 * One sandbox serves all cases (its workspace is a host directory, emptied and laid out again per
 * case), so the corpus runs in a few seconds; the Bash timeout cases account for most of it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeTool, parseToolArguments, readLeafToolSettings } from '../../../src/leaf/tools/index.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';
import {
  clearDirectory,
  layoutWorkspace,
  loadParityCases,
  PARITY_CASES_PATH,
  PARITY_CASES_SHA256,
  sha256OfFile,
  substituteWorkspace,
  type ParityCall,
} from '../../helpers/parity-cases.js';

const cases = loadParityCases();
const totalCalls = cases.reduce((n, c) => n + c.calls.length, 0);
let passedCalls = 0;

let base = '';
let workspace = '';
let sandbox: Sandbox | undefined;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'leaf-parity-'));
  // The last component must be `repo` (case bash-no-shell-state-between-calls prints it).
  workspace = join(base, 'repo');
  mkdirSync(workspace);
  sandbox = await createLocalSandboxFactory().create({ jobId: 'leaf-parity', hostWorkdir: workspace });
});

afterAll(async () => {
  await sandbox?.destroy();
  if (base) rmSync(base, { recursive: true, force: true });
  console.log(`Leaf parity: ${passedCalls}/${totalCalls} calls give the reference observation`);
});

/** The arguments object of a call, as the agent loop would hand it to executeTool. */
function callArguments(call: ParityCall): Record<string, unknown> {
  if (call.raw_arguments !== undefined)
    return parseToolArguments(substituteWorkspace(call.raw_arguments, workspace));
  return substituteWorkspace(call.args ?? {}, workspace);
}

describe('Leaf tools reproduce the reference observations', () => {
  it('has the whole corpus, unchanged since it was copied (test/fixtures/leaf-parity/README.md)', () => {
    expect(sha256OfFile(PARITY_CASES_PATH)).toBe(PARITY_CASES_SHA256);
    expect(cases.length).toBe(66);
    expect(totalCalls).toBe(71);
  });

  for (const c of cases) {
    it(c.id, async () => {
      if (!sandbox) throw new Error('the local sandbox did not start');
      clearDirectory(workspace);
      layoutWorkspace(workspace, c);
      const settings = readLeafToolSettings(c.env ?? {});
      const observations: string[] = [];
      for (const call of c.calls) {
        const observation = await executeTool(call.tool, callArguments(call), { sandbox, settings });
        observations.push(observation);
        if (observation === substituteWorkspace(call.expected, workspace)) passedCalls++;
      }
      expect(observations).toEqual(c.calls.map((call) => substituteWorkspace(call.expected, workspace)));
      for (const [rel, text] of Object.entries(c.expected_files)) {
        expect(
          readFileSync(join(workspace, rel)).equals(Buffer.from(text, 'utf8')),
          `content of ${rel}`,
        ).toBe(true);
      }
    });
  }
});
