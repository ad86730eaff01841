import { describe, expect, it } from 'vitest';
import { LEAF_PROTOCOL } from '../../../src/protocol/protocol.js';
import type { AssistantMessage } from '../../../src/llm/chat-model.js';
import {
  generateToolCallId,
  hasQwen3CoderToolCallMarkup,
  parseQwen3CoderToolCalls,
  recoverQwen3CoderToolCalls,
} from '../../../src/llm/qwen3-coder-xml.js';

const tools = LEAF_PROTOCOL.tools;

function args(result: { toolCalls: Array<{ function: { arguments: string } }> }, i = 0): unknown {
  const call = result.toolCalls[i];
  if (!call) throw new Error(`no tool call ${i}`);
  return JSON.parse(call.function.arguments);
}

describe('parseQwen3CoderToolCalls', () => {
  it('recovers the canonical form and removes it from the text', () => {
    const text =
      'Let me look at the file.\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/a.py\n</parameter>\n</function>\n</tool_call>';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({ type: 'function', function: { name: 'Read' } });
    expect(result.toolCalls[0]?.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(args(result)).toEqual({ file_path: 'src/a.py' });
    expect(result.text).toBe('Let me look at the file.');
  });

  it('recovers a call without the <tool_call> opener and drops the stray closer', () => {
    const text = '<function=Glob>\n<parameter=pattern>\n**/*.py\n</parameter>\n</function>\n</tool_call>';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls.map((c) => c.function.name)).toEqual(['Glob']);
    expect(args(result)).toEqual({ pattern: '**/*.py' });
    expect(result.text).toBe('');
  });

  it('recovers a call without any wrapper', () => {
    const result = parseQwen3CoderToolCalls(
      'Running tests.\n<function=Bash>\n<parameter=command>\npytest -q\n</parameter>\n</function>',
      tools,
    );
    expect(args(result)).toEqual({ command: 'pytest -q' });
    expect(result.text).toBe('Running tests.');
  });

  it('recovers several calls in order, with text between and after them kept', () => {
    const text = [
      'First:',
      '<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n</tool_call>',
      'then:',
      '<tool_call>\n<function=Read>\n<parameter=file_path>\nb.py\n</parameter>\n</function>\n</tool_call>',
      '<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>',
      'done',
    ].join('\n');
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['Read', { file_path: 'a.py' }],
      ['Read', { file_path: 'b.py' }],
      ['Bash', { command: 'ls' }],
    ]);
    expect(new Set(result.toolCalls.map((c) => c.id)).size).toBe(3);
    expect(result.text).toBe('First:\nthen:\ndone');
  });

  it('strips exactly one leading and one trailing newline from a multiline value', () => {
    const content = '\n\ndef f():\n    return 1\n\n';
    const text = `<tool_call>\n<function=Write>\n<parameter=file_path>\nsrc/f.py\n</parameter>\n<parameter=content>\n${content}\n</parameter>\n</function>\n</tool_call>`;
    expect(args(parseQwen3CoderToolCalls(text, tools))).toEqual({ file_path: 'src/f.py', content });
  });

  it('keeps leading spaces and a value without surrounding newlines as written', () => {
    const text =
      '<function=Edit><parameter=file_path>a.py</parameter><parameter=old_string>    x = 1</parameter><parameter=new_string>    x = 2 </parameter></function>';
    expect(args(parseQwen3CoderToolCalls(text, tools))).toEqual({
      file_path: 'a.py',
      old_string: '    x = 1',
      new_string: '    x = 2 ',
    });
  });

  it('types values by the tool schema', () => {
    const text = [
      '<tool_call>\n<function=Read>',
      '<parameter=file_path>\n03106\n</parameter>',
      '<parameter=offset>\n10\n</parameter>',
      '<parameter=limit>\n 25 \n</parameter>',
      '</function>\n</tool_call>',
      '<tool_call>\n<function=Edit>',
      '<parameter=file_path>\ntrue\n</parameter>',
      '<parameter=old_string>\n42\n</parameter>',
      '<parameter=new_string>\nnull\n</parameter>',
      '<parameter=replace_all>\nTrue\n</parameter>',
      '</function>\n</tool_call>',
      '<tool_call>\n<function=Bash>',
      '<parameter=command>\nsleep 1\n</parameter>',
      '<parameter=timeout>\n2.5\n</parameter>',
      '</function>\n</tool_call>',
    ].join('\n');
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(args(result, 0)).toEqual({ file_path: '03106', offset: 10, limit: 25 });
    expect(args(result, 1)).toEqual({
      file_path: 'true',
      old_string: '42',
      new_string: 'null',
      replace_all: true,
    });
    expect(args(result, 2)).toEqual({ command: 'sleep 1', timeout: 2.5 });
  });

  it('keeps a value that does not parse as its type as a string, so the tool reports it', () => {
    const text =
      '<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=offset>\nten\n</parameter>\n<parameter=limit>\n1.5\n</parameter>\n</function>\n' +
      '<function=Edit>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=replace_all>\nyes\n</parameter>\n</function>';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(args(result, 0)).toEqual({ file_path: 'a.py', offset: 'ten', limit: '1.5' });
    expect(args(result, 1)).toEqual({ file_path: 'a.py', replace_all: 'yes' });
  });

  it('turns null into JSON null for non-string parameters only', () => {
    const text =
      '<function=Read>\n<parameter=file_path>\nnull\n</parameter>\n<parameter=limit>\nNULL\n</parameter>\n</function>';
    expect(args(parseQwen3CoderToolCalls(text, tools))).toEqual({ file_path: 'null', limit: null });
  });

  it('keeps unknown parameters and unknown tools as strings', () => {
    const text =
      '<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=encoding>\n8\n</parameter>\n</function>\n' +
      '<function=Search>\n<parameter=query>\n{"a": 1}\n</parameter>\n<parameter=n>\n3\n</parameter>\n</function>';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(args(result, 0)).toEqual({ file_path: 'a.py', encoding: '8' });
    expect(result.toolCalls[1]?.function.name).toBe('Search');
    expect(args(result, 1)).toEqual({ query: '{"a": 1}', n: '3' });
  });

  it('parses object and array parameters as JSON when the schema says so', () => {
    const schema = [
      {
        type: 'function',
        function: {
          name: 'Multi',
          parameters: {
            type: 'object',
            properties: {
              opts: { type: 'object' },
              files: { type: 'array' },
              n: { type: ['integer', 'null'] },
            },
          },
        },
      },
    ];
    const text =
      '<function=Multi>\n<parameter=opts>\n{"a": [1, 2]}\n</parameter>\n<parameter=files>\n["x", "y"]\n</parameter>\n<parameter=n>\n7\n</parameter>\n</function>';
    expect(args(parseQwen3CoderToolCalls(text, schema))).toEqual({
      opts: { a: [1, 2] },
      files: ['x', 'y'],
      n: 7,
    });
    const bad =
      '<function=Multi>\n<parameter=opts>\n[1]\n</parameter>\n<parameter=files>\nnot json\n</parameter>\n</function>';
    expect(args(parseQwen3CoderToolCalls(bad, schema))).toEqual({ opts: '[1]', files: 'not json' });
  });

  it('keeps a Write of a document that quotes a Bash call a Write, with the whole content', () => {
    const quoted =
      'To clean, the agent calls:\n\n<tool_call>\n<function=Bash>\n<parameter=command>\nrm -rf build/\n</parameter>\n</function>\n</tool_call>\n\nThat is all.';
    const text = `I will document it.\n<tool_call>\n<function=Write>\n<parameter=file_path>\ndocs/tools.md\n</parameter>\n<parameter=content>\n${quoted}\n</parameter>\n</function>\n</tool_call>`;
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls.map((c) => c.function.name)).toEqual(['Write']);
    expect(args(result)).toEqual({ file_path: 'docs/tools.md', content: quoted });
    expect(result.text).toBe('I will document it.');
  });

  it('keeps a quoted call at the very end of a Write content inside the content', () => {
    const quoted = 'Example:\n<function=Bash>\n<parameter=command>\nrm -rf build/\n</parameter>\n</function>';
    const text = `<function=Write>\n<parameter=file_path>\nex.md\n</parameter>\n<parameter=content>\n${quoted}\n</parameter>\n</function>`;
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls.map((c) => c.function.name)).toEqual(['Write']);
    expect(args(result)).toEqual({ file_path: 'ex.md', content: quoted });
  });

  it('writes to the real path when the content contains <parameter=file_path>', () => {
    const content = 'The format:\n<parameter=file_path>\n/etc/passwd\n</parameter>\nends a parameter.';
    const text = `<tool_call>\n<function=Write>\n<parameter=file_path>\ndocs/format.md\n</parameter>\n<parameter=content>\n${content}\n</parameter>\n</function>\n</tool_call>`;
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls).toHaveLength(1);
    expect(args(result)).toEqual({ file_path: 'docs/format.md', content });
  });

  it('writes to the real path when the content holds an unclosed <parameter=file_path>', () => {
    const content = 'Start a parameter with\n<parameter=file_path>\nand a name.';
    const text = `<function=Write>\n<parameter=file_path>\nREADME.md\n</parameter>\n<parameter=content>\n${content}\n</parameter>\n</function>`;
    expect(args(parseQwen3CoderToolCalls(text, tools))).toEqual({ file_path: 'README.md', content });
  });

  it('still splits two real calls in a row, each with literal markup-free values', () => {
    const text =
      '<tool_call>\n<function=Write>\n<parameter=file_path>\na.md\n</parameter>\n<parameter=content>\nA\n</parameter>\n</function>\n</tool_call>\n' +
      '<tool_call>\n<function=Bash>\n<parameter=command>\ncat a.md\n</parameter>\n</function>\n</tool_call>';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['Write', { file_path: 'a.md', content: 'A' }],
      ['Bash', { command: 'cat a.md' }],
    ]);
  });

  it('never runs a call quoted inside a cut-off Write in its place', () => {
    const cutOffBeforeQuote =
      '<function=Write>\n<parameter=file_path>\na.md\n</parameter>\n<parameter=content>\nSee:\n<tool_call>\n<function=Bash>\n<parameter=command>\nrm -rf /\n</parameter>\n</function>\n</tool_call>\nand then</parameter>';
    const cutOffAfterQuote =
      '<function=Write>\n<parameter=file_path>\na.md\n</parameter>\n<parameter=content>\nSee:\n<function=Bash>\n<parameter=command>\nrm -rf /\n</parameter>\n</function>\nand then';
    for (const text of [cutOffBeforeQuote, cutOffAfterQuote]) {
      const names = parseQwen3CoderToolCalls(text, tools).toolCalls.map((c) => c.function.name);
      expect(names, text).not.toContain('Bash');
    }
  });

  it('bounds its work on text full of closing tags (the test timeout catches a blow-up)', () => {
    const noise = '<parameter=a>\nx\n</parameter>\n'.repeat(300);
    const text = `<function=Write>\n<parameter=file_path>\nf\n</parameter>\n<parameter=content>\n${noise}</parameter>\n</function>\n</parameter>`;
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls.map((c) => c.function.name)).toEqual(['Write']);
  });

  it('types anyOf parameters by their first non-null type', () => {
    const schema = [
      {
        type: 'function',
        function: {
          name: 'Opt',
          parameters: {
            type: 'object',
            properties: {
              n: { anyOf: [{ type: 'null' }, { type: 'integer' }] },
              flag: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
              name: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
            },
          },
        },
      },
    ];
    const text =
      '<function=Opt>\n<parameter=n>\n7\n</parameter>\n<parameter=flag>\ntrue\n</parameter>\n<parameter=name>\n007\n</parameter>\n</function>';
    expect(args(parseQwen3CoderToolCalls(text, schema))).toEqual({ n: 7, flag: true, name: '007' });
  });

  it('ends a parameter without </parameter> at the next parameter or at </function>', () => {
    const text =
      '<function=Edit>\n<parameter=file_path>\na.py\n<parameter=old_string>\nx\n<parameter=new_string>\ny\n</function>';
    expect(args(parseQwen3CoderToolCalls(text, tools))).toEqual({
      file_path: 'a.py',
      old_string: 'x',
      new_string: 'y',
    });
  });

  it('ends a call without </function> at </tool_call>', () => {
    const text = '<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\n</tool_call>\nafter';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(args(result)).toEqual({ command: 'ls' });
    expect(result.text).toBe('after');
  });

  it('an empty call gives empty arguments', () => {
    const result = parseQwen3CoderToolCalls('<tool_call>\n<function=Glob>\n</function>\n</tool_call>', tools);
    expect(args(result)).toEqual({});
  });

  it('does not recover a call cut off before its end, and leaves it in the text', () => {
    const text =
      'Writing.\n<tool_call>\n<function=Write>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=content>\nimport o';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls).toEqual([]);
    expect(result.text).toBe(text);
  });

  it('recovers the complete calls before a cut-off one', () => {
    const text =
      '<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n<function=Write>\n<parameter=file_path>\nb.py';
    const result = parseQwen3CoderToolCalls(text, tools);
    expect(result.toolCalls.map((c) => c.function.name)).toEqual(['Read']);
    expect(result.text).toBe('<function=Write>\n<parameter=file_path>\nb.py');
  });

  it('ignores garbage that only looks like markup', () => {
    for (const text of [
      'I could use <function= here but will not',
      'the tag <function=> is empty</function>',
      '<function=two words>\n</function>',
      '<function=Read\n<parameter=file_path>\na.py',
      '<tool_call></tool_call>',
      '',
    ]) {
      const result = parseQwen3CoderToolCalls(text, tools);
      expect(result.toolCalls, text).toEqual([]);
      expect(result.text, text).toBe(text);
    }
  });

  it('skips parameters with a broken name but keeps the call', () => {
    const text =
      '<function=Bash>\n<parameter=bad name>\nx\n</parameter>\n<parameter=command>\nls\n</parameter>\n</function>';
    expect(args(parseQwen3CoderToolCalls(text, tools))).toEqual({ command: 'ls' });
  });

  it('keeps non-ASCII text and quotes intact through the JSON arguments', () => {
    const text =
      '<function=Write>\n<parameter=file_path>\nnotes.md\n</parameter>\n<parameter=content>\n«Grüße» "x" \\n 🐸\n</parameter>\n</function>';
    expect(args(parseQwen3CoderToolCalls(text, tools))).toEqual({
      file_path: 'notes.md',
      content: '«Grüße» "x" \\n 🐸',
    });
  });

  it('uses the given id generator', () => {
    let n = 0;
    const result = parseQwen3CoderToolCalls(
      '<function=Glob>\n<parameter=pattern>\n*\n</parameter>\n</function>',
      tools,
      {
        generateId: () => `id-${++n}`,
      },
    );
    expect(result.toolCalls[0]?.id).toBe('id-1');
  });
});

describe('hasQwen3CoderToolCallMarkup', () => {
  it('looks for <function=', () => {
    expect(hasQwen3CoderToolCallMarkup('x <function=Read> y')).toBe(true);
    expect(hasQwen3CoderToolCallMarkup('<tool_call>')).toBe(false);
    expect(hasQwen3CoderToolCallMarkup(null)).toBe(false);
    expect(hasQwen3CoderToolCallMarkup(undefined)).toBe(false);
  });
});

describe('generateToolCallId', () => {
  it('gives distinct call_ ids', () => {
    const ids = new Set(Array.from({ length: 50 }, generateToolCallId));
    expect(ids.size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^call_[0-9a-f]{24}$/);
  });
});

describe('recoverQwen3CoderToolCalls', () => {
  const xml =
    '<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n</tool_call>';

  it('recovers from content and keeps the reasoning', () => {
    const message: AssistantMessage = {
      role: 'assistant',
      content: `Reading.\n${xml}`,
      reasoning_content: 'think',
    };
    const { message: out, recovered } = recoverQwen3CoderToolCalls(message, tools);
    expect(recovered).toBe(true);
    expect(out.content).toBe('Reading.');
    expect(out.reasoning_content).toBe('think');
    expect(out.tool_calls?.map((c) => c.function.name)).toEqual(['Read']);
    expect(message.content).toBe(`Reading.\n${xml}`); // input untouched
  });

  it('recovers from reasoning_content when content has no call, and nulls an emptied field', () => {
    const message: AssistantMessage = {
      role: 'assistant',
      content: null,
      reasoning_content: `I will read it.\n${xml}`,
    };
    const { message: out, recovered } = recoverQwen3CoderToolCalls(message, tools);
    expect(recovered).toBe(true);
    expect(out.content).toBeNull();
    expect(out.reasoning_content).toBe('I will read it.');
    expect(out.tool_calls).toHaveLength(1);

    const onlyXml = recoverQwen3CoderToolCalls({ role: 'assistant', content: xml }, tools).message;
    expect(onlyXml.content).toBeNull();
  });

  it('prefers content over a draft call in the reasoning', () => {
    const draft = xml.replace('a.py', 'draft.py');
    const message: AssistantMessage = {
      role: 'assistant',
      content: xml,
      reasoning_content: `maybe ${draft}`,
    };
    const { message: out } = recoverQwen3CoderToolCalls(message, tools);
    expect(out.tool_calls?.map((c) => JSON.parse(c.function.arguments))).toEqual([{ file_path: 'a.py' }]);
    expect(out.reasoning_content).toBe(`maybe ${draft}`);
  });

  it('leaves a message with tool_calls or without calls unchanged', () => {
    const withCalls: AssistantMessage = {
      role: 'assistant',
      content: xml,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'Glob', arguments: '{}' } }],
    };
    expect(recoverQwen3CoderToolCalls(withCalls, tools)).toEqual({ message: withCalls, recovered: false });
    const plain: AssistantMessage = { role: 'assistant', content: 'All done.' };
    expect(recoverQwen3CoderToolCalls(plain, tools)).toEqual({ message: plain, recovered: false });
  });
});
