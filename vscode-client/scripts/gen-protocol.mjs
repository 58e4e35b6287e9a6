// Generates src/protocol.gen.ts from the server's JSON Schema (`lsp-agent schema`): one source of
// truth for the wire. `--check` fails (exit 1) when the committed file differs from what the
// server's models generate now, so CI catches a model change the client has not picked up.
//
// Usage: node scripts/gen-protocol.mjs [--check] [--schema FILE]
//   The schema comes from `$LSP_AGENT_PYTHON -m lsp_agent schema` (default python3) unless --schema.
//
// Mapping: each pydantic model (a schema `title` or a `$defs` entry) becomes an interface; string
// enums become unions of literals. Which fields are optional follows what the server sends: it
// omits null fields (`exclude_none`), so a nullable field is optional (`?: T | null`) even when the
// schema lists it as required; a field with a non-null default is always sent, so in what the server
// writes (results, notifications) it is required; a `const` (an event's `type`) always is.

import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'src', 'protocol.gen.ts');
const args = process.argv.slice(2);
const check = args.includes('--check');
const schemaFile = args.includes('--schema') ? args[args.indexOf('--schema') + 1] : undefined;

function loadSchema() {
  if (schemaFile) {
    return JSON.parse(readFileSync(schemaFile, 'utf8'));
  }
  const python = process.env.LSP_AGENT_PYTHON || 'python3';
  return JSON.parse(execFileSync(python, ['-m', 'lsp_agent', 'schema'], { encoding: 'utf8' }));
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function key(name) {
  return IDENT.test(name) ? name : `'${name}'`;
}

function literal(value) {
  return typeof value === 'string' ? `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(value);
}

function refName(ref) {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

function unique(types) {
  return [...new Set(types)];
}

function isNullable(schema) {
  const options = schema.anyOf ?? schema.oneOf ?? [];
  return options.some((o) => o.type === 'null') || schema.type === 'null'
    || (Array.isArray(schema.type) && schema.type.includes('null'));
}

function tsType(schema, indent) {
  if (schema === true || schema === undefined || Object.keys(schema).length === 0) {
    return 'unknown';
  }
  if (schema.$ref) {
    return refName(schema.$ref);
  }
  if ('const' in schema) {
    return literal(schema.const);
  }
  if (schema.enum) {
    return schema.enum.map(literal).join(' | ');
  }
  const options = schema.anyOf ?? schema.oneOf;
  if (options) {
    return unique(options.map((o) => tsType(o, indent))).join(' | ');
  }
  if (Array.isArray(schema.type)) {
    return unique(schema.type.map((t) => tsType({ ...schema, type: t }, indent))).join(' | ');
  }
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      const item = tsType(schema.items, indent);
      return /[ |&]/.test(item) ? `(${item})[]` : `${item}[]`;
    }
    case 'object':
      if (schema.properties) {
        return objectBody(schema, indent);
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        return `Record<string, ${tsType(schema.additionalProperties, indent)}>`;
      }
      return 'Record<string, unknown>';
    default:
      return 'unknown';
  }
}

function doc(text, indent) {
  if (!text) {
    return '';
  }
  const flat = text.replace(/\s+/g, ' ').trim().replace(/\*\//g, '*\\/');
  return `${indent}/** ${flat} */\n`;
}

function isRequired(schema, name, prop, written) {
  if (isNullable(prop)) {
    return false;
  }
  if ('const' in prop || (schema.required ?? []).includes(name)) {
    return true;
  }
  return written && prop.default !== undefined && prop.default !== null;
}

function objectBody(schema, indent, written = false) {
  const inner = `${indent}  `;
  const lines = Object.entries(schema.properties).map(([name, prop]) => {
    const optional = isRequired(schema, name, prop, written) ? '' : '?';
    const readonly = prop.readOnly ? 'readonly ' : '';
    return `${doc(prop.description, inner)}${inner}${readonly}${key(name)}${optional}: ${tsType(prop, inner)};`;
  });
  return `{\n${lines.join('\n')}\n${indent}}`;
}

function declaration(name, schema, written) {
  const head = doc(schema.description, '');
  if (schema.type === 'object' && schema.properties) {
    return `${head}export interface ${name} ${objectBody(schema, '', written)}\n`;
  }
  return `${head}export type ${name} = ${tsType(schema, '')};\n`;
}

function generate(schema) {
  const defs = new Map();
  // Models only the server writes (never read from the client) always carry their defaults.
  const read = new Set();
  const add = (name, def, reads) => {
    if (reads) {
      read.add(name);
    }
    const { $defs, ...own } = def;
    const text = JSON.stringify(own);
    const known = defs.get(name);
    if (known !== undefined && JSON.stringify(known) !== text) {
      throw new Error(`two different models are both called ${name}: rename one on the server`);
    }
    defs.set(name, own);
    for (const [inner, innerDef] of Object.entries($defs ?? {})) {
      add(inner, innerDef, reads);
    }
  };
  const methods = [];
  for (const [method, entry] of Object.entries(schema.methods)) {
    const fromClient = entry.direction.startsWith('client');
    add(entry.params.title, entry.params, fromClient);
    if (entry.result) {
      add(entry.result.title, entry.result, !fromClient);
    }
    methods.push([method, entry]);
  }
  add(schema.errorData.title, schema.errorData, false);

  const out = [
    '// GENERATED by scripts/gen-protocol.mjs from `lsp-agent schema` (lsp_agent/protocol/): do not edit.',
    '// `npm run gen:protocol` rewrites it; CI (`npm run gen:protocol -- --check`) fails when it is stale.',
    '/* eslint-disable */',
    '',
    `export const PROTOCOL_VERSION = ${schema.version};`,
    '',
  ];
  for (const name of [...defs.keys()].sort()) {
    out.push(declaration(name, defs.get(name), !read.has(name)));
  }
  out.push('/** Every custom method, notification and command, with its params and result types. */');
  out.push('export interface MethodTypes {');
  for (const [method, entry] of methods) {
    const result = entry.result ? entry.result.title : 'void';
    out.push(`  ${literal(method)}: { kind: ${literal(entry.kind)}; params: ${entry.params.title}; result: ${result} };`);
  }
  out.push('}', '');
  out.push('export type MethodName = keyof MethodTypes;', '');
  out.push('/** The documented JSON-RPC error codes (docs/protocol.md, "Errors"). */');
  out.push('export const ERROR_CODES = [');
  for (const error of schema.errors) {
    out.push(`  { code: ${error.code}, name: ${literal(error.name)}, status: ${error.status}, kinds: [${error.kinds.map(literal).join(', ')}] },`);
  }
  out.push('] as const;', '');
  return out.join('\n');
}

const text = generate(loadSchema());
if (check) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    // missing: stale
  }
  if (current !== text) {
    console.error('src/protocol.gen.ts is stale: the server\'s protocol models changed. Run `npm run gen:protocol` and commit it.');
    process.exit(1);
  }
  console.log('src/protocol.gen.ts is up to date');
} else {
  writeFileSync(target, text);
  console.log(`wrote ${target}`);
}
