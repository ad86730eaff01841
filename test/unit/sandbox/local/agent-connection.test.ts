import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../../src/app-error.js';
import { AgentConnection, PROTOCOL_VIOLATION } from '../../../../src/sandbox/local/agent-connection.js';
import { encodeFrame } from '../../../../src/sandbox/local/frame-decoder.js';

/** A fake agent channel: what the connection writes is decoded into `requests`; `reply` answers. */
function fakeChannel(): { channel: Duplex; requests: Record<string, unknown>[]; send: (b: Buffer) => void } {
  const requests: Record<string, unknown>[] = [];
  const channel = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      if (chunk.length >= 8) {
        const len = chunk.readUInt32BE(0);
        requests.push(JSON.parse(chunk.toString('utf8', 8, 8 + len)) as Record<string, unknown>);
      }
      cb();
    },
  });
  return { channel, requests, send: (b) => channel.push(b) };
}

const LIMITS = { maxHeaderBytes: 4096, maxBodyBytes: 100, deadlineMs: 2000 };
const frame = (header: Record<string, unknown>, blobs: Buffer[] = []): Buffer =>
  Buffer.concat(encodeFrame(header, blobs));

async function setup() {
  const f = fakeChannel();
  const conn = new AgentConnection(f.channel);
  const violations: string[] = [];
  conn.onViolation = (e) => violations.push(e.message);
  f.send(frame({ id: 0, event: 'ready', pid: 7 }));
  expect(await conn.ready).toBe(7);
  return { ...f, conn, violations };
}

const violation = async (p: Promise<unknown>): Promise<Error> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isAppError(err, PROTOCOL_VIOLATION)).toBe(true);
  expect((err as Error).message).toMatch(/^the sandbox broke its protocol: /);
  return err as Error;
};

describe('agent connection: protocol violations fail every call and destroy the sandbox', () => {
  it('accepts a reply that echoes id and nonce within the caps', async () => {
    const { conn, requests, send, violations } = await setup();
    const pending = conn.request({ op: 'ping' }, [], LIMITS);
    const req = requests.at(-1)!;
    expect(typeof req.nonce).toBe('string');
    send(frame({ id: req.id, nonce: req.nonce, ok: true }, [Buffer.from('x')]));
    expect((await pending).blobs[0]?.toString()).toBe('x');
    expect(violations).toEqual([]);
  });

  it.each([
    ['an unknown id', (r: Record<string, unknown>) => frame({ id: 999, nonce: r.nonce, ok: true }), /id 999/],
    [
      'a wrong nonce',
      (r: Record<string, unknown>) => frame({ id: r.id, nonce: 'forged', ok: true }),
      /nonce/,
    ],
    ['a second ready', () => frame({ id: 0, event: 'ready', pid: 1 }), /second ready/],
    [
      'a body above the cap',
      (r: Record<string, unknown>) => frame({ id: r.id, nonce: r.nonce, ok: true }, [Buffer.alloc(101)]),
      /101 bytes/,
    ],
    ['a 4 GiB length', () => Buffer.from([0, 0, 0, 10, 0xff, 0xff, 0xff, 0xff]), /exceeds|bytes/],
    ['a huge header length', () => Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), /exceeds/],
    ['garbage', () => Buffer.concat([Buffer.from([0, 0, 0, 3, 0, 0, 0, 0]), Buffer.from('{x}')]), /not JSON/],
  ])('%s', async (_name, make, why) => {
    const { conn, requests, send, violations } = await setup();
    const pending = conn.request({ op: 'exec' }, [], LIMITS);
    send(make(requests.at(-1)!));
    expect((await violation(pending)).message).toMatch(why);
    expect(violations).toHaveLength(1);
    await violation(conn.request({ op: 'ping' }, [], LIMITS));
  });

  it('a repeated id: the second reply to an answered request', async () => {
    const { conn, requests, send, violations } = await setup();
    const first = conn.request({ op: 'ping' }, [], LIMITS);
    const r = requests.at(-1)!;
    send(frame({ id: r.id, nonce: r.nonce, ok: true }));
    await first;
    const second = conn.request({ op: 'ping' }, [], LIMITS);
    send(frame({ id: r.id, nonce: r.nonce, ok: true }));
    await violation(second);
    expect(violations).toHaveLength(1);
  });

  it('a partial body: the deadline fails the call', async () => {
    const { conn, requests, send } = await setup();
    const started = Date.now();
    const pending = conn.request({ op: 'exec' }, [], { ...LIMITS, deadlineMs: 300 });
    const r = requests.at(-1)!;
    send(frame({ id: r.id, nonce: r.nonce, ok: true }, [Buffer.alloc(50)]).subarray(0, 60));
    expect((await violation(pending)).message).toMatch(/no reply to exec within 300 ms/);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
