import { readFileSync } from 'node:fs';
import type { Probot } from 'probot';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { z } from 'zod';
import { createFrognanoApp } from '../../../src/github-app/app.js';
import { createReviewHandlerApp } from '../../../src/github-app/review-handler.js';
import type { WebhookDeps } from '../../../src/github-app/webhook-deps.js';
import { createSilentLogger } from '../../../src/observability/logger.js';

const manifest = z
  .object({ default_events: z.array(z.string()) })
  .parse(YAML.parse(readFileSync(new URL('../../../app.yml', import.meta.url), 'utf8')));

/** The webhook events (`issues.labeled` → `issues`) the app's handlers register on Probot. */
async function registeredEvents(): Promise<Set<string>> {
  const events = new Set<string>();
  const app = {
    on(names: string | string[]) {
      for (const n of [names].flat()) events.add(n.split('.')[0] as string);
    },
  } as unknown as Probot;
  const deps = { logger: createSilentLogger() } as unknown as WebhookDeps;
  await createFrognanoApp(deps, [createReviewHandlerApp()])(app, {} as never);
  return events;
}

describe('app.yml', () => {
  it('subscribes to every event a handler is registered for', async () => {
    const registered = await registeredEvents();
    for (const event of registered) expect(manifest.default_events).toContain(event);
  });

  it('subscribes to no event without a handler', async () => {
    expect(new Set(manifest.default_events)).toEqual(await registeredEvents());
  });

  it('names the handler of each event in a comment above it', () => {
    const text = readFileSync(new URL('../../../app.yml', import.meta.url), 'utf8');
    for (const event of manifest.default_events) {
      expect(text).toMatch(new RegExp(`#[^\\n]*\\n(?:  #[^\\n]*\\n)*  - ${event}\\n`));
    }
  });
});
