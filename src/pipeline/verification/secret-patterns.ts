import type { PatchFile } from './parse-patch.js';

/**
 * Secrets in added lines (issue 6, "Patch limits"): a patch that adds a private key, a cloud key or
 * a token is refused. Only high-confidence patterns — formats with a fixed prefix and length that
 * the issuer documents — so a false alarm is rare; entropy guesses are left out on purpose.
 *
 * A finding names the file, the line and the kind of secret, never the secret itself: the status
 * comment and the logs must not become the leak.
 */

/** One secret format. */
interface SecretPattern {
  /** What it is, for people ("GitHub token"). */
  kind: string;
  re: RegExp;
}

/**
 * The formats, each with the issuer's documentation of the format:
 * - PEM private keys (RFC 7468 labels `PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY`,
 *   `ENCRYPTED PRIVATE KEY`; OpenSSH's `OPENSSH PRIVATE KEY`; PGP's `PGP PRIVATE KEY BLOCK`);
 * - AWS access key ids (`AKIA`/`ASIA` + 16 upper-case letters and digits) and a 40-character
 *   secret access key assigned to a name containing `aws_secret_access_key`;
 * - GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 36 characters; fine-grained
 *   `github_pat_`), see "About authentication to GitHub" → "GitHub's token formats";
 * - Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxo-`, `xoxr-`, `xoxs-`) and incoming-webhook URLs;
 * - Google API keys (`AIza` + 35), Stripe live secret/restricted keys, GitLab personal access
 *   tokens (`glpat-`), npm access tokens (`npm_` + 36).
 */
const SECRET_PATTERNS: readonly SecretPattern[] = [
  { kind: 'private key', re: /-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/ },
  { kind: 'AWS access key id', re: /\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/ },
  {
    kind: 'AWS secret access key',
    re: /aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/i,
  },
  { kind: 'GitHub token', re: /\bgh[pousr]_[A-Za-z0-9]{36,251}\b/ },
  { kind: 'GitHub fine-grained token', re: /\bgithub_pat_[A-Za-z0-9_]{60,244}\b/ },
  { kind: 'Slack token', re: /\bxox[abposr]-[A-Za-z0-9-]{10,250}/ },
  {
    kind: 'Slack webhook URL',
    re: /https:\/\/hooks\.slack\.com\/services\/T[A-Za-z0-9_]+\/B[A-Za-z0-9_]+\/[A-Za-z0-9_]{20,}/,
  },
  { kind: 'Google API key', re: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/ },
  { kind: 'Stripe live key', re: /\b[rs]k_live_[0-9A-Za-z]{20,247}\b/ },
  { kind: 'GitLab token', re: /\bglpat-[0-9A-Za-z_-]{20,}/ },
  { kind: 'npm token', re: /\bnpm_[A-Za-z0-9]{36}\b/ },
];

/** A secret found in an added line. Never carries the secret. */
export interface SecretFinding {
  path: string;
  /** 1-based line in the patched file. */
  line: number;
  /** What was found, e.g. `private key`, `GitHub token`. */
  kind: string;
}

/** Characters of an added line scanned (a minified megabyte-long line is scanned in its first part). */
const MAX_SCANNED_CHARS = 20_000;

/**
 * The secrets in the added lines of a patch (removed lines are not scanned: removing a leaked key
 * is fine). AWS's documented example key id (ending in `EXAMPLE`) is ignored. One finding per line
 * and kind.
 *
 * @param files the parsed patch ({@link parsePatch}); binary files have no lines and are not scanned.
 */
export function findSecrets(files: readonly PatchFile[]): SecretFinding[] {
  const findings: SecretFinding[] = [];
  for (const file of files) {
    for (const { line, text } of file.addedLines) {
      const scanned = text.length > MAX_SCANNED_CHARS ? text.slice(0, MAX_SCANNED_CHARS) : text;
      for (const { kind, re } of SECRET_PATTERNS) {
        const m = re.exec(scanned);
        if (!m) continue;
        if (kind === 'AWS access key id' && m[0].endsWith('EXAMPLE')) continue;
        findings.push({ path: file.path, line, kind });
      }
    }
  }
  return findings;
}

/**
 * `text` with every match of the secret formats above replaced by `[redacted: <kind>]`; a PEM
 * private key is replaced from its `BEGIN` line to its `END` line (or to the end of the text when
 * the block is cut). For text people read outside the sandbox (the check run's transcript): the
 * sandbox holds no secrets, but a model can still print something shaped like one.
 */
export function redactSecrets(text: string): string {
  let out = text;
  for (const { kind, re } of SECRET_PATTERNS) {
    const source =
      kind === 'private key'
        ? `${re.source}[\\s\\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)`
        : re.source;
    out = out.replace(new RegExp(source, re.flags.includes('i') ? 'gi' : 'g'), (m) =>
      kind === 'AWS access key id' && m.endsWith('EXAMPLE') ? m : `[redacted: ${kind}]`,
    );
  }
  return out;
}
