import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder, FrameError } from '../../../../src/sandbox/local/frame-decoder.js';

describe('frame codec', () => {
  const frame = (header: Record<string, unknown>, blobs: Buffer[] = []): Buffer =>
    Buffer.concat(encodeFrame(header, blobs));
  const open = (maxHeaderBytes = 1024, maxBodyBytes = 1024): FrameDecoder =>
    new FrameDecoder({
      maxHeaderBytes: () => maxHeaderBytes,
      maxBodyBytes: () => 1 << 20,
      acceptHeader: (_header, bodyLength) => {
        if (bodyLength > maxBodyBytes) throw new FrameError(`body ${bodyLength}`);
      },
    });

  it('round-trips headers and binary blobs however the bytes are split', () => {
    const blobs = [Buffer.from([0xff, 0, 0xfe]), Buffer.alloc(0), Buffer.from('héllo')];
    const wire = Buffer.concat([frame({ id: 1, ok: true }, blobs), frame({ id: 2, event: 'x' })]);
    for (const step of [1, 3, 7, wire.length]) {
      const decoder = open();
      const frames = [];
      for (let i = 0; i < wire.length; i += step) frames.push(...decoder.push(wire.subarray(i, i + step)));
      expect(frames).toHaveLength(2);
      expect(frames[0]?.header).toEqual({ id: 1, ok: true, blobs: [3, 0, 6] });
      expect(frames[0]?.blobs.map((b) => b.toString('hex'))).toEqual(blobs.map((b) => b.toString('hex')));
      expect(frames[1]?.header).toEqual({ id: 2, event: 'x', blobs: [] });
    }
  });

  it('refuses a body larger than the header hook allows before buffering it', () => {
    const wire = frame({ id: 1 }, [Buffer.alloc(11)]);
    const headerEnd = wire.length - 11;
    expect(() => open(1024, 10).push(wire.subarray(0, headerEnd))).toThrow(FrameError);
  });

  it('refuses a header above the cap as soon as the length prefix arrives', () => {
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32BE(0xffff_ffff, 0);
    expect(() => open(4096).push(prefix)).toThrow(/exceeds 4096/);
  });

  it('refuses garbage and blob lengths that do not match the body', () => {
    const json = Buffer.from(JSON.stringify({ id: 1, blobs: [5] }));
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32BE(json.length, 0);
    prefix.writeUInt32BE(2, 4);
    expect(() => open().push(Buffer.concat([prefix, json, Buffer.alloc(2)]))).toThrow(FrameError);
    const short = Buffer.from(JSON.stringify({ id: 1, blobs: [1] }));
    prefix.writeUInt32BE(short.length, 0);
    expect(() => open().push(Buffer.concat([prefix, short, Buffer.alloc(2)]))).toThrow(FrameError);
    const garbage = Buffer.concat([Buffer.from([0, 0, 0, 4, 0, 0, 0, 0]), Buffer.from('{{{{')]);
    expect(() => open().push(garbage)).toThrow(/not JSON/);
  });
});
