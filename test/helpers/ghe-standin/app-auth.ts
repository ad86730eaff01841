import { createPublicKey, generateKeyPair, randomBytes, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import jwt from 'jsonwebtoken';
import { z } from 'zod';

const generateKeyPairAsync = promisify(generateKeyPair);

/** GitHub refuses app JWTs whose `exp` is more than 10 minutes ahead (s). */
const MAX_JWT_LIFETIME_S = 600;
/** Slack (s) for clocks: GitHub tolerates small skews; Octokit back-dates `iat` by 30 s. */
const CLOCK_SLACK_S = 60;

/** An installation access token as the stand-in knows it. */
export interface InstallationTokenRecord {
  /** `ghs_` + 36 alphanumerics, the format of GitHub installation tokens. */
  token: string;
  installationId: number;
  /** Epoch ms. */
  createdAtMs: number;
  /** Epoch ms. */
  expiresAtMs: number;
  revoked: boolean;
}

export type TokenCheck = { ok: true; record: InstallationTokenRecord } | { ok: false; message: string };

export interface AppAuth {
  /** PEM, PKCS#1 (`-----BEGIN RSA PRIVATE KEY-----`), like the keys GitHub lets app owners download. */
  privateKey: string;
  publicKey: KeyObject;
  tokens: Map<string, InstallationTokenRecord>;
  /** Check an app JWT (`Bearer <jwt>`); messages are GitHub's (Octokit matches on some of them). */
  verifyJwt(token: string, nowMs?: number): { ok: true } | { ok: false; message: string };
  issueInstallationToken(installationId: number, nowMs?: number): InstallationTokenRecord;
  checkInstallationToken(token: string, nowMs?: number): TokenCheck;
  /** Make every token issued so far expired (to test token refresh without waiting). */
  expireAll(): void;
}

const claimsSchema = z.looseObject({
  iat: z.number(),
  exp: z.number(),
  iss: z.union([z.string(), z.number()]),
});

/** Parse `Authorization: token X` / `Bearer X` (scheme case-insensitive) → X, else `null`. */
export function parseTokenHeader(header: string | undefined): string | null {
  const m = /^(?:token|bearer)\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1] ?? null;
}

/**
 * Generate the app's RSA key (2048 bits) and the token registry.
 *
 * @param options.tokenTtlMs lifetime of installation tokens (ms); GitHub's is 1 h.
 */
export async function createAppAuth(options: { appId: number; tokenTtlMs: number }): Promise<AppAuth> {
  const { privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const publicKey = createPublicKey(privateKey);
  const tokens = new Map<string, InstallationTokenRecord>();

  const verifyJwt: AppAuth['verifyJwt'] = (token, nowMs = Date.now()) => {
    let decoded: unknown;
    try {
      // Time claims are checked below with GitHub's own messages.
      decoded = jwt.verify(token, publicKey, {
        algorithms: ['RS256'],
        ignoreExpiration: true,
        ignoreNotBefore: true,
      });
    } catch {
      return { ok: false, message: 'A JSON web token could not be decoded' };
    }
    const claims = claimsSchema.safeParse(decoded);
    if (!claims.success) return { ok: false, message: 'A JSON web token could not be decoded' };
    const now = Math.floor(nowMs / 1000);
    const { iat, exp, iss } = claims.data;
    if (!Number.isInteger(iat) || iat > now + CLOCK_SLACK_S) {
      return {
        ok: false,
        message:
          "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
      };
    }
    if (exp <= now) {
      return {
        ok: false,
        message:
          "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
      };
    }
    if (exp - iat > MAX_JWT_LIFETIME_S || exp > now + MAX_JWT_LIFETIME_S + CLOCK_SLACK_S) {
      return { ok: false, message: "'Expiration time' claim ('exp') is too far in the future" };
    }
    if (String(iss) !== String(options.appId)) {
      return { ok: false, message: 'Integration not found' };
    }
    return { ok: true };
  };

  const issueInstallationToken: AppAuth['issueInstallationToken'] = (installationId, nowMs = Date.now()) => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    const token = `ghs_${[...randomBytes(36)].map((b) => alphabet[b % alphabet.length]).join('')}`;
    const record = {
      token,
      installationId,
      createdAtMs: nowMs,
      expiresAtMs: nowMs + options.tokenTtlMs,
      revoked: false,
    };
    tokens.set(token, record);
    return record;
  };

  const checkInstallationToken: AppAuth['checkInstallationToken'] = (token, nowMs = Date.now()) => {
    const record = tokens.get(token);
    if (!record || record.revoked || record.expiresAtMs <= nowMs)
      return { ok: false, message: 'Bad credentials' };
    return { ok: true, record };
  };

  return {
    privateKey,
    publicKey,
    tokens,
    verifyJwt,
    issueInstallationToken,
    checkInstallationToken,
    expireAll() {
      for (const record of tokens.values()) record.expiresAtMs = 0;
    },
  };
}
