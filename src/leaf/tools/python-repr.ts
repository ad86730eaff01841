/**
 * Python `repr()` of a `str`, apart from the other value semantics (`python-values.ts`) so that the
 * Python exception messages (`python-error.ts`) can quote paths without an import circle. Source: the
 * Python 3.11 language reference (`str.__repr__`, `str.isprintable()`). Must change together with the
 * rest of the `python-*.ts` emulation and its parity suite (`test/fixtures/leaf-parity/`).
 */

/** Code points for which Python's `str.isprintable()` is false (repr escapes them). */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

function hex(cp: number, width: number): string {
  return cp.toString(16).padStart(width, '0');
}

/**
 * Python `repr()` of a `str`: single quotes unless the text holds `'` and no `"`; backslash escapes
 * for `\\`, the quote, `\t`, `\n`, `\r`; `\xNN`/`\uNNNN`/`\UNNNNNNNN` for non-printable code points;
 * printable non-ASCII kept as is.
 */
export function pyRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\t') out += '\\t';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${hex(cp, 2)}`;
    else if (cp < 0x7f || (ch !== ' ' && !NOT_PRINTABLE.test(ch))) out += ch;
    else if (cp <= 0xff) out += `\\x${hex(cp, 2)}`;
    else if (cp <= 0xffff) out += `\\u${hex(cp, 4)}`;
    else out += `\\U${hex(cp, 8)}`;
  }
  return out + quote;
}
