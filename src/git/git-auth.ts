/**
 * Environment variables that make git send the installation token to one host, and nowhere else.
 *
 * The token travels only in git's environment, as an `http.<url>.extraHeader` set through
 * `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0` (git ≥ 2.31; see git-config(1),
 * "ENVIRONMENT"): never in the remote URL written to `.git/config`, never in argv (which `ps` shows to
 * every user), never in a file. The header uses HTTP Basic with the user `x-access-token`, the form
 * GitHub and GitHub Enterprise Server accept for installation tokens over git smart HTTP. Scoping the
 * key to `<baseUrl>/` keeps a redirect to another host from receiving it.
 *
 * @param token installation token (`ghs_…`); kept in memory by the caller only.
 * @param baseUrl `${protocol}://${host}` of the GitHub (Enterprise) server, without a trailing slash.
 * @returns the variables to merge into git's environment, and the strings that must never be logged.
 */
export function gitAuthEnv(
  token: string,
  baseUrl: string,
): { env: Record<string, string>; secrets: string[] } {
  const basic = Buffer.from(`x-access-token:${token}`, 'utf8').toString('base64');
  return {
    env: {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: `http.${baseUrl.replace(/\/+$/, '')}/.extraHeader`,
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    },
    secrets: [token, basic],
  };
}

/**
 * The HTTPS URL of a repository on the server: `<baseUrl>/<owner>/<repo>.git`, with no credentials in
 * it (it is written to `.git/config` as the `origin` remote).
 */
export function repositoryUrl(baseUrl: string, owner: string, repo: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}.git`;
}
