import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder } from '../../../../src/sandbox/local/frame-decoder.js';

describe('frame codec', () => {
  const frame = (header: Record<string, unknown>, blobs: Buffer[] = []): Buffer =>
    Buffer.concat(encodeFrame(header, blobs));

  it('round-trips headers and binary blobs however the bytes are split', () => {
    const blobs = [Buffer.from([0xff, 0, 0xfe]), Buffer.alloc(0), Buffer.from('héllo')];
    const wire = Buffer.concat([frame({ id: 1, ok: true }, blobs), frame({ id: 2, event: 'x' })]);
    for (const step of [1, 3, 7, wire.length]) {
      const decoder = new FrameDecoder({ maxBodyBytes: 1024 });
      const frames = [];
      for (let i = 0; i < wire.length; i += step) frames.push(...decoder.push(wire.subarray(i, i + step)));
      expect(frames).toHaveLength(2);
      expect(frames[0]?.header).toEqual({ id: 1, ok: true, blobs: [3, 0, 6] });
      expect(frames[0]?.blobs.map((b) => b.toString('hex'))).toEqual(blobs.map((b) => b.toString('hex')));
      expect(frames[1]?.header).toEqual({ id: 2, event: 'x', blobs: [] });
    }
  });

  it('refuses a body larger than allowed before buffering it', () => {
    const decoder = new FrameDecoder({ maxBodyBytes: 10 });
    const wire = frame({ id: 1 }, [Buffer.alloc(11)]);
    expect(() => decoder.push(wire.subarray(0, 8))).toThrow(RangeError);
  });

  it('refuses blob lengths that do not match the body', () => {
    const json = Buffer.from(JSON.stringify({ id: 1, blobs: [5] }));
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32BE(json.length, 0);
    prefix.writeUInt32BE(2, 4);
    expect(() =>
      new FrameDecoder({ maxBodyBytes: 100 }).push(Buffer.concat([prefix, json, Buffer.alloc(2)])),
    ).toThrow(RangeError);
  });
});
