import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { isAppError } from '../../app-error.js';
import { parseAdminPolicy } from '../../config/policy.js';
import { parseRepoConfig } from '../../config/repo-config.js';

const USAGE = `usage: frognano-bot validate-config <file>... [--policy]

Validate a repository configuration (.github/frognano.yml) or, with --policy, an admin policy file.
Prints "ok: <file>" per valid file, or one message per problem (file, key path, problem, what is
allowed). A deprecated key (attempts, now candidates) is accepted with a "warning:" line on stderr.
For the CI of configuration repositories.

exit codes: 0 all valid, 1 a file is invalid or unreadable, 2 usage error
`;

/**
 * `frognano-bot validate-config <file>... [--policy]`.
 *
 * @param argv the arguments after the command name.
 * @returns exit code: 0 all files valid, 1 a file is invalid or cannot be read, 2 usage error.
 *   Messages and deprecation warnings go to stderr, `ok: <file>` lines to stdout.
 */
export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        policy: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    process.stderr.write(`frognano-bot validate-config: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.positionals.length === 0) {
    process.stderr.write(`frognano-bot validate-config: no file given\n\n${USAGE}`);
    return 2;
  }
  let failed = false;
  for (const file of parsed.positionals) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      process.stderr.write(
        `${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})\n`,
      );
      failed = true;
      continue;
    }
    try {
      const { warnings = [] } = parsed.values.policy
        ? parseAdminPolicy(text, file)
        : parseRepoConfig(text, file);
      for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
      process.stdout.write(`ok: ${file}\n`);
    } catch (err) {
      if (!isAppError(err, 'CONFIG_INVALID')) throw err;
      const messages = err.details?.messages ?? [err.message];
      process.stderr.write(`${messages.join('\n')}\n`);
      failed = true;
    }
  }
  return failed ? 1 : 0;
}
