#!/usr/bin/env node
// Lint PowerShell scripts for what Windows PowerShell 5.1 does differently
// from the pwsh 7 that the engine tier runs, on the tree-sitter grammar's
// syntax tree (issue 14 item 8, issue 40 item 3). Rules:
//   redirect   a native program's stderr redirected (2>&1, 2>$null, 2>file,
//              *>...) under $ErrorActionPreference = 'Stop': 5.1 turns each
//              stderr line into a terminating NativeCommandError even when
//              the program exits 0 (pwsh 7.4+ does not: PSNativeCommand-
//              ErrorActionPreference / about_Redirection)
//   pwsh7      PowerShell 7-only syntax: && and || (pipeline chains), ?? and
//              ?: (5.1 cannot parse them: any parse error is reported),
//              -Parallel; and cmdlets the 7.6 reference has and 5.1's lacks
//   param51    a parameter the 5.1 cmdlet does not have (ConvertFrom-Json
//              -AsHashtable), or an ambiguous abbreviation of one;
//              Invoke-WebRequest without -UseBasicParsing
//   value51    a literal argument outside the values 5.1's reference accepts
//              for that parameter (-Encoding utf8NoBOM)
//   args51     more positional arguments than 5.1's cmdlet binds (Join-Path
//              with three children: -AdditionalChildPath is 7-only)
//              and automatic/preference variables 7.6 defines and 5.1 does
//              not ($IsWindows reads as $null there)
//   encoding   a file written without an explicit encoding: Out-File, `>`
//              and `>>` write UTF-16LE in 5.1, Set-Content/Add-Content the
//              ANSI code page, Export-Csv ASCII, Tee-Object UTF-16 (and has
//              no -Encoding in 5.1); pwsh 7 writes UTF-8 for all of them
//   unchecked  a native program run (`& $x`, `name.exe`, or a known native
//              command) whose statement is not followed by one that reads
//              $LASTEXITCODE (or `exit $LASTEXITCODE`)
// The cmdlet rules read ps51-reference.json, generated from 5.1's own cmdlet
// reference by gen-ps51-reference.py (its source commit is in the file).
// Cmdlets the reference does not cover (Dism, NetSecurity, ... modules) are
// not checked by param51/value51/args51.
// usage: node lint51.cjs FILE...   prints FILE:ROW:COL: RULE text; exit 1
// when anything is found, 2 on usage or load errors.
// @where the executable model of the Windows side (argv through PowerShell
//   5.1, sc.exe, kube-log-runner; config key tables; the 5.1 script lint) --
//   the 5.1 script lint; its rule data `tests/ps/ps51-reference.json` from
//   `tests/ps/gen-ps51-reference.py`
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

const REF = JSON.parse(fs.readFileSync(path.join(__dirname, 'ps51-reference.json'), 'utf8'));
const ONLY7 = new Set(REF.only_in_7.map((n) => n.toLowerCase()));
const VARS7 = new Set(REF.variables_only_in_7);
// file writers whose 5.1 default encoding is not UTF-8 (each page's
// -Encoding "Default value"): they must name -Encoding
const WRITERS = new Set(['out-file', 'set-content', 'add-content', 'export-csv']);

// the cmdlet a command names, from 5.1's reference, or null
function cmdlet51(cmd) {
	for (let i = 0; i < cmd.childCount; i++) {
		const c = cmd.child(i);
		if (c.type === 'command_name')
			return c.text.replace(/^.*\\/, '').toLowerCase();
	}
	return null;
}

// a redirection as {node, stream, op, merge, target}: a `redirection` node,
// or a generic_token, as the grammar reads `2>$null` after a bare word
const REDIR = /^([1-6*]?)(>>?)(&[12])?(.*)$/s;
function redirection(e) {
	if (e.type === 'redirection') {
		const op = e.child(0);
		const m = REDIR.exec(op.text);
		const tgt = e.children.find((c) => c.type === 'redirected_file_name');
		return m && { node: e, stream: m[1] || '1', op: m[2], merge: !!m[3] ||
			op.type === 'merging_redirection_operator', target: tgt ? tgt.text.trim() : '' };
	}
	if (e.type === 'generic_token' && e.parent && e.parent.type === 'command_elements') {
		const m = REDIR.exec(e.text);
		if (m && (m[3] || m[4] !== ''))
			return { node: e, stream: m[1] || '1', op: m[2], merge: !!m[3], target: m[4] };
	}
	return null;
}

// the command a node is an argument or redirection of, or null
function commandOf(n) {
	for (let p = n.parent; p && p.type !== 'statement_list'; p = p.parent)
		if (p.type === 'command')
			return p;
	return null;
}

// parameter NAME (without the dash) of cmdlet C, as 5.1 binds it: an exact
// name or alias, else the one name it abbreviates; {name} or {error}
function bindParam(c, name) {
	const low = name.toLowerCase();
	const names = Object.keys(c.params).concat(REF.common);
	for (const n of names)
		if (n.toLowerCase() === low)
			return { name: n };
	for (const [n, p] of Object.entries(c.params))
		if (p.aliases.some((a) => a.toLowerCase() === low))
			return { name: n };
	if (REF.common_aliases[low])
		return { name: REF.common_aliases[low] };
	const pre = names.filter((n) => n.toLowerCase().startsWith(low));
	if (pre.length === 1)
		return { name: pre[0] };
	if (pre.length > 1)
		return { error: `-${name} is ambiguous in Windows PowerShell 5.1's ${c.name} (${pre.join(', ')})` };
	return { error: `-${name} is not a parameter of ${c.name} in Windows PowerShell 5.1 (${c.page})` };
}

// the most positional arguments any parameter set of C binds (Infinity when
// one takes the remaining arguments)
function maxPositional(c) {
	const sets = {};
	for (const p of Object.values(c.params))
		for (const [s, v] of Object.entries(p.sets)) {
			if (v.rest)
				return Infinity;
			if (v.pos === null)
				continue;
			(sets[s] = sets[s] || new Set()).add(v.pos);
		}
	const all = sets['(All)'] || new Set();
	let best = all.size;
	for (const [s, v] of Object.entries(sets))
		if (s !== '(All)')
			best = Math.max(best, new Set([...v, ...all]).size);
	return best;
}

function unquote(t) {
	return /^(['"]).*\1$/s.test(t) ? t.slice(1, -1) : t;
}

function checkCmdlet(cmd, c, say) {
	const els = cmd.children.find((x) => x.type === 'command_elements');
	const given = new Set();
	let positional = 0, splat = false;
	const elems = els ? els.children.filter((e) => e.type !== 'command_argument_sep' &&
		!redirection(e)) : [];
	for (let i = 0; i < elems.length; i++) {
		const e = elems[i];
		if (e.type === 'command_parameter') {
			const m = /^-([A-Za-z_][\w]*)(:?)/.exec(e.text);
			if (!m)
				continue;
			const b = bindParam(c, m[1]);
			if (b.error) {
				say(e, 'param51', b.error);
				continue;
			}
			given.add(b.name);
			const p = c.params[b.name];
			if (!p || p.switch)
				continue;
			let val = null;
			if (m[2]) {
				val = e.text.slice(m[0].length);
				if (val === '' && i + 1 < elems.length)
					val = elems[++i].text;
			} else if (i + 1 < elems.length && elems[i + 1].type !== 'command_parameter')
				val = elems[++i].text;
			if (val !== null && p.accepted.length && /^['"]?[\w.-]+['"]?$/.test(val) &&
			    !p.accepted.some((a) => a.toLowerCase() === unquote(val).toLowerCase()))
				say(e, 'value51', `-${b.name} ${val} is not a value Windows PowerShell 5.1's ${c.name} accepts (${p.accepted.join(', ')})`);
		} else if (/^@\w/.test(e.text) || e.text === '--%') {
			splat = true;
		} else {
			positional++;
		}
	}
	const max = maxPositional(c);
	if (!splat && positional > max)
		say(cmd, 'args51', `${c.name} takes at most ${max} positional argument${max === 1 ? '' : 's'} in Windows PowerShell 5.1, given ${positional} (${c.page})`);
	return given;
}

function lint(file, src, tree) {
	const out = [];
	const say = (n, rule, msg) => out.push(`${file}:${n.startPosition.row + 1}:` +
		`${n.startPosition.column + 1}: ${rule} ${msg}`);
	const stop = /\$ErrorActionPreference\s*=\s*['"]Stop['"]/i.test(src);
	walk(tree.rootNode, (n) => {
		if (n.type === 'ERROR' || n.isMissing)
			say(n, 'pwsh7', `does not parse (PowerShell 7-only ?? or ?:, or a syntax error): ${JSON.stringify(n.text.slice(0, 40))}`);
		else if (n.type === 'pipeline_chain_tail')
			say(n, 'pwsh7', `${n.text.trim().slice(0, 2)} is PowerShell 7-only`);
		else if (n.type === 'command_parameter' && /^-parallel$/i.test(n.text))
			say(n, 'pwsh7', '-Parallel is PowerShell 7-only');
		else if (n.type === 'variable' &&
			 VARS7.has(n.text.replace(/^\$\{?(global:|script:|local:)?/i, '').replace(/\}$/, '').toLowerCase()))
			say(n, 'pwsh7', `${n.text} is not defined in Windows PowerShell 5.1 (about_Automatic_Variables, about_Preference_Variables)`);
		else if (redirection(n)) {
			const r = redirection(n), cmd = commandOf(n);
			const err = r.stream === '2' || r.stream === '*';
			if (r.merge && stop && err)
				say(r.node, 'redirect', `${r.node.text.trim()} under $ErrorActionPreference = 'Stop'`);
			else if (cmd && isNative(cmd) && stop && err)
				say(r.node, 'redirect', `${r.node.text.trim()} on a native program under $ErrorActionPreference = 'Stop'`);
			if (!r.merge && !/^\$null$/i.test(r.target))
				say(r.node, 'encoding', `${r.stream === '1' ? '' : r.stream}${r.op} writes UTF-16LE in Windows PowerShell 5.1: use Out-File or Set-Content with -Encoding`);
		} else if (n.type === 'command') {
			const native = isNative(n);
			const name = cmdlet51(n);
			if (name && ONLY7.has(name))
				say(n, 'pwsh7', `${name} is not in Windows PowerShell 5.1 (only in the 7.x reference)`);
			const c = name && REF.cmdlets[name];
			if (c) {
				const given = checkCmdlet(n, c, say);
				if (WRITERS.has(name) && !given.has('Encoding'))
					say(n, 'encoding', `${c.name} without -Encoding writes ${name === 'out-file' ? 'UTF-16LE' : name === 'export-csv' ? 'ASCII' : 'the ANSI code page'} in Windows PowerShell 5.1`);
				// 5.1's page: -UseBasicParsing "is required when Internet
				// Explorer is not installed", as on Server Core
				if (name === 'invoke-webrequest' && !given.has('UseBasicParsing'))
					say(n, 'param51', 'Invoke-WebRequest without -UseBasicParsing fails in Windows PowerShell 5.1 where Internet Explorer is not installed (Server Core)');
				if (name === 'tee-object' && (given.has('FilePath') || given.has('LiteralPath')))
					say(n, 'encoding', 'Tee-Object writes UTF-16LE in Windows PowerShell 5.1 and has no -Encoding there');
			}
			if (native) {
				const st = statementOf(n);
				let next = st && st.nextNamedSibling;
				const checked = next && /\$LASTEXITCODE/i.test(next.text);
				if (!checked)
					say(n, 'unchecked', `exit code of ${JSON.stringify(n.text.slice(0, 60))} is not checked`);
			}
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
