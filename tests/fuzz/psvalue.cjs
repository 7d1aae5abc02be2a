#!/usr/bin/env node
// PowerShell side of tests/fuzz/render_fuzz.py: parse each script with the
// tree-sitter PowerShell grammar (tests/ps) and report what it holds.
// stdin: one JSON string (a script) per line; stdout: one JSON object per
// line: {errors, statements, comments: [text], strings: [{type, text}]}.
// "strings" are the verbatim (single-quoted) string and here-string tokens
// in source order; the driver decodes them and compares with the value.
'use strict';
const path = require('path');
const fs = require('fs');
const req = require('module').createRequire(path.join(__dirname, '..', 'ps', 'package.json'));
// the baseline WebAssembly compiler only: see tests/ps/lint51.cjs
require('v8').setFlagsFromString('--liftoff-only');
const { Parser, Language } = req('web-tree-sitter');

function collect(tree) {
	const root = tree.rootNode;
	const acc = { errors: 0, comments: [], strings: [], expandable: 0, statements: 0 };
	// one query per kind (crossing into wasm per node is slow)
	if (root.hasError)
		acc.errors = Math.max(1, root.descendantsOfType(['ERROR']).length);
	for (const n of root.descendantsOfType(['comment']))
		acc.comments.push(n.text);
	for (const n of root.descendantsOfType(['verbatim_string_characters',
					       'verbatim_here_string_characters']))
		acc.strings.push({ type: n.type, text: n.text });
	acc.expandable = root.descendantsOfType(['expandable_string_literal',
						 'expandable_here_string_literal']).length;
	for (let i = 0; i < root.childCount; i++) {
		const c = root.child(i);
		if (c.type === 'statement_list')
			acc.statements += c.namedChildCount;
	}
	return acc;
}

async function main() {
	await Parser.init();
	const lang = await Language.load(path.join(path.dirname(req.resolve('tree-sitter-powershell/package.json')),
						   'tree-sitter-powershell.wasm'));
	const parser = new Parser();
	parser.setLanguage(lang);
	const out = [];
	for (const line of fs.readFileSync(0, 'utf8').split('\n')) {
		if (!line)
			continue;
		const src = JSON.parse(line);
		const tree = parser.parse(src);
		const acc = collect(tree);
		out.push(JSON.stringify(acc) + '\n');
		tree.delete();
	}
	fs.writeFileSync(1, out.join(''));
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(2); });
