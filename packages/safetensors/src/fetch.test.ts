import { describe, expect, it } from 'vitest';
import { SafetensorsError, SafetensorsIoError } from './errors.js';
import { readSafetensors } from './fetch.js';
import { serialize } from './serialize.js';

const bytes = serialize({ w: { dtype: 'F32', shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) }, b: { dtype: 'BF16', shape: [1], data: new Uint16Array([0x3f80]) } }, { format: 'pt' });

describe('readSafetensors', () => {
  it('reads the same tensors from bytes, an ArrayBuffer, a fetch Response and a File', async () => {
    const copy = bytes.slice();
    const sources = [bytes, copy.buffer, new Response(bytes), new File([bytes], 'model.safetensors')];
    for (const s of sources) {
      const r = await readSafetensors(s);
      expect(r.keys().sort()).toEqual(['b', 'w']);
      expect([...(r.read('w').data as Float32Array)]).toEqual([1, 2, 3, 4]);
      expect([...(r.read('b').data as Uint16Array)]).toEqual([0x3f80]);
      expect(r.metadata).toEqual({ format: 'pt' });
    }
  });

  it('names the File in a format error, and refuses a Response that is not ok', async () => {
    const bad = bytes.slice(0, 12);
    await expect(readSafetensors(new File([bad], 'broken.safetensors'))).rejects.toThrow(/broken\.safetensors/);
    await expect(readSafetensors(new File([bad], 'broken.safetensors'))).rejects.toBeInstanceOf(SafetensorsError);
    const notFound = new Response('missing', { status: 404 });
    const err = await readSafetensors(notFound, 'https://host/model.safetensors').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SafetensorsIoError);
    expect((err as SafetensorsIoError).file).toBe('https://host/model.safetensors');
    expect((err as Error).message).toMatch(/HTTP status 404/);
  });
});
