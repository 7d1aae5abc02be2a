#!/usr/bin/env node
// Lint PowerShell scripts for Windows PowerShell 5.1 pitfalls, on the
// tree-sitter grammar's syntax tree (issue 14, item 8):
//   redirect   `2>&1` (or *>&1 ...) under $ErrorActionPreference = 'Stop':
//              5.1 turns a redirected stderr line of a native program into
//              a terminating NativeCommandError even when it exits 0
//   pwsh7      PowerShell 7-only syntax: && and || (pipeline chains),
//              ?? and ?: (5.1 cannot parse them: any parse error is
//              reported), -Parallel
//   unchecked  a native program run (`& $x`, `name.exe`, or a known native
//              command) whose statement is not followed by one that reads
//              $LASTEXITCODE (or `exit $LASTEXITCODE`)
// usage: node lint51.cjs FILE...   prints FILE:ROW:COL: RULE text; exit 1
// when anything is found, 2 on usage or load errors.
'use strict';
const fs = require('fs');
const path = require('path');
const { Parser, Language } = require('web-tree-sitter');

const NATIVE = new Set(['sc', 'netsh', 'dism', 'msiexec', 'nssm', 'reg', 'bcdedit',
	'icacls', 'cmd', 'sysprep', 'containerd', 'kubelet', 'ctr', 'takeown', 'wevtutil']);

function walk(n, f) {
	f(n);
	for (let i = 0; i < n.childCount; i++)
		walk(n.child(i), f);
}

function isNative(cmd) {
	let name = null, invoked = false;
	for (let i = 0; i < cmd.childCount; i++) {
		const c = cmd.child(i);
		if (c.type === 'command_invokation_operator' && c.text === '&')
			invoked = true;
		if (c.type === 'command_name' || c.type === 'command_name_expr')
			name = c;
	}
	if (!name)
		return false;
	if (invoked)   // & $var / & 'path': a program (scripts here never & a block)
		return !name.text.startsWith('{');
	const base = name.text.toLowerCase().replace(/^.*\\/, '');
	return base.endsWith('.exe') || NATIVE.has(base);
}

// the statement (child of a statement_list) that holds node N
function statementOf(n) {
	while (n.parent && n.parent.type !== 'statement_list')
		n = n.parent;
	return n.parent ? n : null;
}

function lint(file, src, tree) {
	const out = [];
	const say = (n, rule, msg) => out.push(`${file}:${n.startPosition.row + 1}:` +
		`${n.startPosition.column + 1}: ${rule} ${msg}`);
	const stop = /\$ErrorActionPreference\s*=\s*['"]Stop['"]/i.test(src);
	walk(tree.rootNode, (n) => {
		if (n.type === 'ERROR' || n.isMissing)
			say(n, 'pwsh7', `does not parse (PowerShell 7-only ?? or ?:, or a syntax error): ${JSON.stringify(n.text.slice(0, 40))}`);
		else if (n.type === 'merging_redirection_operator' && stop)
			say(n, 'redirect', `${n.text} under $ErrorActionPreference = 'Stop'`);
		else if (n.type === 'pipeline_chain_tail')
			say(n, 'pwsh7', `${n.text.trim().slice(0, 2)} is PowerShell 7-only`);
		else if (n.type === 'command_parameter' && /^-parallel$/i.test(n.text))
			say(n, 'pwsh7', '-Parallel is PowerShell 7-only');
		else if (n.type === 'command' && isNative(n)) {
			const st = statementOf(n);
			let next = st && st.nextNamedSibling;
			const checked = next && /\$LASTEXITCODE/i.test(next.text);
			if (!checked)
				say(n, 'unchecked', `exit code of ${JSON.stringify(n.text.slice(0, 60))} is not checked`);
		}
	});
	return out;
}

async function main() {
	const files = process.argv.slice(2);
	if (!files.length) {
		console.error('usage: lint51.cjs FILE...');
		process.exit(2);
	}
	await Parser.init();
	const lang = await Language.load(path.join(__dirname, 'node_modules',
		'tree-sitter-powershell', 'tree-sitter-powershell.wasm'));
	const parser = new Parser();
	parser.setLanguage(lang);
	let found = 0;
	for (const f of files) {
		const src = fs.readFileSync(f, 'utf8');
		const tree = parser.parse(src);
		for (const line of lint(f, src, tree)) {
			console.log(line);
			found++;
		}
		tree.delete();
	}
	process.exit(found ? 1 : 0);
}

main().catch((e) => {
	console.error(`lint51: ${e && e.stack ? e.stack : e}`);
	process.exit(2);
});
