import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { isAppError } from '../app-error.js';
import { jobFolder, readJobEntries, verifyChain } from '../observability/record-chain.js';
import type { RecordStore } from '../observability/record-store.js';

const jobIdParam = z.string().regex(/^[A-Za-z0-9._-]{1,200}$/);
const fileParam = z.string().regex(/^[A-Za-z0-9._-]{1,200}$/);
const repoParam = z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/);

/**
 * The run record views of `/admin` (behind its authentication), read from the record store, so
 * whichever pod answers sees every job:
 *
 * - `GET /records?repo=owner/name` — the chain's verification report (as `audit verify --json`);
 * - `GET /records/<job id>` — the job's chained entries (record, approvals) and whether each is linked;
 * - `GET /records/<job id>/files/<name>` — one stored file (trajectory, test log, patch).
 *
 * A store that is down answers 503 with the reason.
 */
export function createRecordRoutes(store: RecordStore): Router {
  const router = Router();
  const fail = (res: Response, err: unknown): void => {
    const unavailable = isAppError(err, 'RECORD_STORE_UNAVAILABLE');
    res
      .status(unavailable ? 503 : 500)
      .json({ error: (err as Error).message, code: isAppError(err) ? err.code : 'INTERNAL' });
  };
  router.get('/', async (req: Request, res: Response) => {
    const repo = repoParam.safeParse(req.query.repo);
    if (!repo.success) {
      res.status(400).json({ error: 'add ?repo=owner/name (a repository full name)' });
      return;
    }
    try {
      res.json({ store: store.location, report: await verifyChain(store, repo.data) });
    } catch (err) {
      fail(res, err);
    }
  });
  router.get('/:jobId', async (req: Request, res: Response) => {
    const jobId = jobIdParam.safeParse(req.params.jobId);
    if (!jobId.success) {
      res.status(400).json({ error: 'not a job id' });
      return;
    }
    try {
      const entries = await readJobEntries(store, jobId.data);
      if (entries.length === 0) {
        res.status(404).json({ error: `no run record for job ${jobId.data} in ${store.location}` });
        return;
      }
      const prefix = `${jobFolder(jobId.data)}files/`;
      const files = (await store.list(prefix)).map((k) => k.slice(prefix.length));
      res.json({
        jobId: jobId.data,
        store: store.location,
        entries: entries.map((e) => ({ key: e.key, linked: e.linked, ...e.entry })),
        files,
      });
    } catch (err) {
      fail(res, err);
    }
  });
  router.get('/:jobId/files/:name', async (req: Request, res: Response) => {
    const jobId = jobIdParam.safeParse(req.params.jobId);
    const name = fileParam.safeParse(req.params.name);
    if (!jobId.success || !name.success) {
      res.status(400).json({ error: 'not a job id or file name' });
      return;
    }
    try {
      const bytes = await store.get(`${jobFolder(jobId.data)}files/${name.data}`);
      if (!bytes) {
        res.status(404).json({ error: `job ${jobId.data} has no file ${name.data}` });
        return;
      }
      const type = name.data.endsWith('.json') ? 'application/json' : 'text/plain; charset=utf-8';
      // Model output and test logs: never rendered as HTML by the browser.
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.type(type).send(bytes);
    } catch (err) {
      fail(res, err);
    }
  });
  return router;
}
