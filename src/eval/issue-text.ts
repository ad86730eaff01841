import { Octokit } from '@octokit/rest';
import type { Logger } from '../observability/logger.js';

/**
 * The issue text of a mined task, read from GitHub (or GitHub Enterprise Server) when the miner is
 * given an API URL: `GET /repos/{owner}/{repo}/issues/{number}` (read only; an evaluation never
 * writes to GitHub).
 *
 * @param options.apiUrl the REST API root (`https://ghe.example.com/api/v3`, `https://api.github.com`).
 * @param options.token a token that can read the repository's issues; absent = anonymous.
 * @returns `fetchIssue(n)`: `title\n\nbody`, or `null` when the issue cannot be read (not found,
 *   no access, network): the miner then uses the commit message. Failures are logged at debug level.
 */
export function createIssueFetcher(options: {
  apiUrl: string;
  repo: string;
  token?: string;
  logger: Logger;
}): (issue: number) => Promise<string | null> {
  const octokit = new Octokit({
    baseUrl: options.apiUrl.replace(/\/+$/, ''),
    ...(options.token ? { auth: options.token } : {}),
    request: { retries: 0 },
  });
  const [owner = '', repo = ''] = options.repo.split('/');
  return async (issue) => {
    try {
      const { data } = await octokit.rest.issues.get({ owner, repo, issue_number: issue });
      return `${data.title}\n\n${data.body ?? ''}`.trim();
    } catch (err) {
      options.logger.debug({ issue, err }, 'the issue could not be read; the commit message is used');
      return null;
    }
  };
}
