import { describe, expect, it } from 'vitest';
import { changedLineCount, parsePatch, unquoteC } from '../../../../src/pipeline/verification/parse-patch.js';

const MODIFIED = `diff --git a/calc.py b/calc.py
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,4 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
+
 
 def sub(a, b):
@@ -10,2 +11,2 @@ def mul(a, b):
-x = 1
+x = 2
 y = 3
`;

const ADDED_DELETED = `diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
\\ No newline at end of file
diff --git a/tests/test_old.py b/tests/test_old.py
deleted file mode 100644
index 4444444444444444444444444444444444444444..0000000000000000000000000000000000000000
--- a/tests/test_old.py
+++ /dev/null
@@ -1,3 +0,0 @@
-def test_x():
-    assert True
-
`;

const BINARY_SYMLINK_MODE = `diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000000000000000000000000000000000000..5555555555555555555555555555555555555555
GIT binary patch
literal 4
LcmZQzWMT#Y01f~L

literal 0
HcmV?d00001

diff --git a/link b/link
new file mode 120000
index 0000000000000000000000000000000000000000..6666666666666666666666666666666666666666
--- /dev/null
+++ b/link
@@ -0,0 +1 @@
+../../etc/passwd
\\ No newline at end of file
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git "a/d\\303\\251j\\303\\240 vu.txt" "b/d\\303\\251j\\303\\240 vu.txt"
index 7777777777777777777777777777777777777777..8888888888888888888888888888888888888888 100644
--- "a/d\\303\\251j\\303\\240 vu.txt"
+++ "b/d\\303\\251j\\303\\240 vu.txt"
@@ -1 +1 @@
-a
+b
diff --git a/with space.md b/with space.md
old mode 100644
new mode 100755
`;

describe('parsePatch', () => {
  it('reads added and removed lines with their line numbers across hunks', () => {
    const [file] = parsePatch(MODIFIED);
    expect(file).toMatchObject({ path: 'calc.py', status: 'modified', oldMode: '100644', newMode: '100644' });
    expect(file?.addedLines).toEqual([
      { line: 2, text: '    return a + b' },
      { line: 3, text: '' },
      { line: 11, text: 'x = 2' },
    ]);
    expect(file?.removedLines).toEqual([
      { line: 2, text: '    return a - b' },
      { line: 10, text: 'x = 1' },
    ]);
    expect(changedLineCount(file!)).toBe(5);
  });

  it('reads new and deleted files and skips "No newline" markers', () => {
    const files = parsePatch(ADDED_DELETED);
    expect(files.map((f) => [f.path, f.status, f.oldMode, f.newMode])).toEqual([
      ['new.txt', 'added', null, '100644'],
      ['tests/test_old.py', 'deleted', '100644', null],
    ]);
    expect(files[0]?.addedLines.map((l) => l.text)).toEqual(['hello', 'world']);
    expect(files[1]?.removedLines).toHaveLength(3);
  });

  it('marks binary files, symlinks, mode changes and quoted or spaced paths', () => {
    const files = parsePatch(BINARY_SYMLINK_MODE);
    expect(files.map((f) => f.path)).toEqual(['logo.png', 'link', 'run.sh', 'déjà vu.txt', 'with space.md']);
    expect(files[0]).toMatchObject({ binary: true, addedLines: [] });
    expect(files[1]).toMatchObject({
      newMode: '120000',
      addedLines: [{ line: 1, text: '../../etc/passwd' }],
    });
    expect(files[2]).toMatchObject({
      status: 'modified',
      oldMode: '100644',
      newMode: '100755',
      addedLines: [],
    });
    expect(files[3]?.addedLines).toEqual([{ line: 1, text: 'b' }]);
  });

  it('does not take content lines that look like headers for headers', () => {
    const patch = `diff --git a/a.txt b/a.txt
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1,1 +1,2 @@
-old
+diff --git a/x b/x
++++ b/y
`;
    const files = parsePatch(patch);
    expect(files).toHaveLength(1);
    expect(files[0]?.addedLines.map((l) => l.text)).toEqual(['diff --git a/x b/x', '+++ b/y']);
  });

  it('gives nothing for empty or unrelated text', () => {
    expect(parsePatch('')).toEqual([]);
    expect(parsePatch('hello\nworld\n')).toEqual([]);
  });
});

describe('unquoteC', () => {
  it('decodes git C-style quoting with octal UTF-8 bytes', () => {
    expect(unquoteC('"a\\tb\\"c\\\\d\\303\\251" rest')).toEqual({ value: 'a\tb"c\\dé', length: 20 });
    expect(unquoteC('"unterminated')).toBeNull();
    expect(unquoteC('plain')).toBeNull();
  });
});
