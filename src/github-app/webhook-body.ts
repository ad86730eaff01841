import { z } from 'zod';

/**
 * Reading a verified webhook body (after the signature check, before it is recorded).
 *
 * GitHub sends a delivery as `application/json`, or as `application/x-www-form-urlencoded` with
 * the JSON in the `payload` field, depending on the app's "Content type" setting
 * (https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers). Both are
 * accepted; anything else is a 415 that says how to set the app.
 *
 * An `issues` delivery this app cannot act on (no `installation`, no `issue.title`, an issue number
 * that is not a safe integer) is a 400 with the reason, so the failure shows in the app's "Recent
 * Deliveries" instead of a 200 and a log line.
 */

/** The parsed payload, or the HTTP status and reason of a refusal. */
export type ParsedWebhook = { ok: true; payload: unknown } | { ok: false; status: 400 | 415; error: string };

const FORM = 'application/x-www-form-urlencoded';

/** What an `issues` delivery must carry for the handlers to act on it. */
const issuesDeliverySchema = z.object({
  installation: z.object({ id: z.number().int().positive() }, { error: 'the payload has no installation' }),
  issue: z.object(
    {
      number: z
        .number({ error: 'issue.number must be a number' })
        .max(Number.MAX_SAFE_INTEGER, 'issue.number is above 2^53 - 1')
        .positive('issue.number must be positive')
        .int('issue.number must be a whole number'),
      title: z.string({ error: 'the payload has no issue.title' }),
    },
    { error: 'the payload has no issue' },
  ),
  repository: z.object(
    { name: z.string(), owner: z.object({ login: z.string() }) },
    { error: 'the payload has no repository' },
  ),
});

/**
 * Parse `raw` by its `Content-Type` and check the fields an `event` delivery needs.
 *
 * @param contentType the request's `Content-Type` header (parameters like `charset` are ignored).
 */
export function parseWebhookBody(contentType: string | undefined, raw: string, event: string): ParsedWebhook {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  let text: string;
  if (type === 'application/json' || type.endsWith('+json')) {
    text = raw;
  } else if (type === FORM) {
    const field = new URLSearchParams(raw).get('payload');
    if (field === null)
      return { ok: false, status: 400, error: 'form-encoded delivery without a payload field' };
    text = field;
  } else {
    return {
      ok: false,
      status: 415,
      error:
        `unsupported content type ${JSON.stringify(type || '(none)')}: set the GitHub App's webhook ` +
        'content type to application/json',
    };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return { ok: false, status: 400, error: 'the body is not valid JSON' };
  }
  if (typeof payload !== 'object' || payload === null) {
    return { ok: false, status: 400, error: 'the payload is not a JSON object' };
  }
  if (event === 'issues') {
    const checked = issuesDeliverySchema.safeParse(payload);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      const where = issue.path.length > 0 ? issue.path.join('.') : 'payload';
      const message =
        issue.message.startsWith('the payload') || issue.message.startsWith(where)
          ? issue.message
          : `${where}: ${issue.message}`;
      return { ok: false, status: 400, error: message };
    }
  }
  return { ok: true, payload };
}
