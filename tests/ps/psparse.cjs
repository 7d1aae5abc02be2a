#!/usr/bin/env node
// Parse PowerShell files with the tree-sitter grammar (prebuilt .wasm from
// the npm package tree-sitter-powershell, run by web-tree-sitter).
// usage: node psparse.cjs FILE...
// Prints "FILE:ROW:COL: ERROR|MISSING <type>" for every bad node and exits 1
// when any file has one; 2 on usage or load errors; 0 when all parse cleanly.
'use strict';
const fs = require('fs');
const path = require('path');
// V8 compiles the PowerShell grammar's 1 MB of WebAssembly with its
// optimizing tier in the background: 35-60 s of CPU per process on the
// 2-core CI machine (measured 2026-12-07, node 20.20.2), against 0.5 s
// with the baseline compiler alone, which parses these small scripts fast
// enough. Set before the module is compiled.
require('v8').setFlagsFromString('--liftoff-only');
const { Parser, Language } = require('web-tree-sitter');

function bad(node, out) {
	// isMissing/isError are properties in web-tree-sitter 0.25+
	if (node.isMissing || node.type === 'ERROR' || node.isError) {
		out.push(node);
		return;
	}
	if (!node.hasError)
		return;
	for (let i = 0; i < node.childCount; i++)
		bad(node.child(i), out);
}

async function main() {
	const files = process.argv.slice(2);
	if (!files.length) {
		console.error('usage: psparse.cjs FILE...');
		process.exit(2);
	}
	await Parser.init();
	const wasm = path.join(__dirname, 'node_modules', 'tree-sitter-powershell',
			       'tree-sitter-powershell.wasm');
	const lang = await Language.load(wasm);
	const parser = new Parser();
	parser.setLanguage(lang);
	let failed = 0;
	for (const f of files) {
		const src = fs.readFileSync(f, 'utf8');
		const tree = parser.parse(src);
		const out = [];
		bad(tree.rootNode, out);
		for (const n of out) {
			const p = n.startPosition;
			console.log(`${f}:${p.row + 1}:${p.column + 1}: ` +
				    `${n.isMissing ? 'MISSING' : 'ERROR'} ${n.type}`);
		}
		if (out.length)
			failed++;
		tree.delete();
	}
	process.exit(failed ? 1 : 0);
}

main().catch((e) => {
	console.error(`psparse: ${e && e.stack ? e.stack : e}`);
	process.exit(2);
});
