// Copies every non-TypeScript file of src/ (protocol.json, the in-sandbox agent script, notices)
// to dist/ after `tsc`, which only emits what it compiles.
import { cpSync } from 'node:fs';

cpSync('src', 'dist', {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
