import { parseArgs } from 'node:util';
import { formatTranscript } from '../../leaf/transcript.js';
import type { Trajectory } from '../../leaf/trajectory.js';
import { createTrajectoryStore } from '../../observability/trajectory-store.js';

const USAGE = `usage: frognano-bot trajectory <job id | trajectory.json> [--dir DIR] [--lines N] [--json]

Prints a stored trajectory as a readable transcript. DIR defaults to $TRAJECTORY_DIR, else ./trajectories.`;

/** `frognano-bot trajectory`: print a stored trajectory. */
export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        dir: { type: 'string' },
        lines: { type: 'string', default: '6' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const [id] = parsed.positionals;
  const lines = Number(parsed.values.lines);
  if (!id || !Number.isInteger(lines) || lines < 1) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const store = createTrajectoryStore({ dir: parsed.values.dir ?? process.env.TRAJECTORY_DIR ?? 'trajectories' });
  const data = (await store.load(id)) as Trajectory;
  if (!data || typeof data !== 'object' || !Array.isArray(data.steps) || !Array.isArray(data.messages)) {
    process.stderr.write(`frognano-bot trajectory: ${id} is not a trajectory file\n`);
    return 1;
  }
  process.stdout.write(parsed.values.json ? `${JSON.stringify(data, null, 2)}\n` : formatTranscript(data, { maxObservationLines: lines }));
  return 0;
}
