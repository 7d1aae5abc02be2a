#!/usr/bin/env node
// The provisioning plan of an emitted Packer template, for the engine tier
// (tests/win/packer.ps1): which provisioners run, in which order, with which
// attributes, for each builder, and how each source gets its payload.
//
// usage: hclplan.cjs PACKER_DIR  -> JSON on stdout
//
// Two parsers nobody here wrote: hashicorp/hcl v2 (npm @cdktf/hcl2json,
// the Go library built to WebAssembly) gives every block's attributes;
// `packer inspect` (Packer's own reading of the template) gives the order
// of the provisioners, which hcl2json's JSON groups by type. The k-th
// provisioner of a type in Packer's order is the k-th block of that type.
// Anything this tier does not model (an attribute, a provisioner type, a
// second build block) is an error, never silently skipped.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { parse } = require('@cdktf/hcl2json');

const die = (msg) => { process.stderr.write(`hclplan: ${msg}\n`); process.exit(2); };

// attributes of each provisioner type this tier understands
const KNOWN = {
	powershell: ['scripts', 'script', 'execution_policy', 'environment_vars', 'valid_exit_codes',
		'only', 'except', 'execute_command', 'elevated_user', 'elevated_password', 'pause_before',
		'max_retries', 'timeout'],
	'windows-restart': ['restart_timeout', 'restart_command', 'restart_check_command', 'only', 'except', 'pause_before'],
	file: ['source', 'sources', 'destination', 'direction', 'only', 'except', 'pause_before'],
};

async function main() {
	const dir = process.argv[2];
	if (!dir) die('usage: hclplan.cjs PACKER_DIR');
	const files = fs.readdirSync(dir).filter((f) => f.endsWith('.pkr.hcl')).sort();
	if (files.length === 0) die(`no *.pkr.hcl in ${dir}`);
	const merged = { build: [], source: {} };
	for (const f of files) {
		const j = await parse(f, fs.readFileSync(path.join(dir, f), 'utf8'));
		for (const b of j.build || []) merged.build.push(b);
		for (const [type, byName] of Object.entries(j.source || {})) {
			for (const [name, blocks] of Object.entries(byName)) {
				merged.source[`${type}.${name}`] = blocks[0];
			}
		}
	}
	if (merged.build.length !== 1) die(`expected one build block, found ${merged.build.length}`);
	const build = merged.build[0];

	// Packer's order of the provisioners
	const inspect = execFileSync('packer', ['inspect', '.'], {
		cwd: dir, encoding: 'utf8',
		env: { ...process.env, CHECKPOINT_DISABLE: '1' },
	});
	const m = inspect.match(/\n\s*provisioners:\n([\s\S]*?)\n\s*post-processors:/);
	if (!m) die(`packer inspect printed no provisioner list:\n${inspect}`);
	const order = m[1].split('\n').map((l) => l.trim()).filter((l) => l !== '');

	// hcl2json gives "provisioner": { "<type>": [ {...}, ... ] } (or a list of such maps)
	const ofType = (type) => (Array.isArray(build.provisioner)
		? build.provisioner.flatMap((p) => p[type] || []) : ((build.provisioner || {})[type] || []));
	const seen = {};
	const provisioners = order.map((type, i) => {
		if (!KNOWN[type]) die(`provisioner ${i + 1} is of type '${type}', which the engine tier does not model`);
		const k = seen[type] || 0;
		seen[type] = k + 1;
		const b = ofType(type)[k];
		if (!b) die(`packer inspect lists more '${type}' provisioners than the template holds`);
		for (const key of Object.keys(b)) {
			if (!KNOWN[type].includes(key)) die(`provisioner ${i + 1} (${type}) has attribute '${key}', which the engine tier does not model`);
		}
		return { index: i + 1, type, ...b };
	});
	const types = Array.isArray(build.provisioner)
		? [...new Set(build.provisioner.flatMap((p) => Object.keys(p)))] : Object.keys(build.provisioner || {});
	for (const type of types) {
		if ((seen[type] || 0) !== ofType(type).length) die(`the template holds ${ofType(type).length} '${type}' provisioners, packer inspect lists ${seen[type] || 0}`);
	}
	const sources = {};
	for (const s of build.sources || []) {
		const key = s.replace(/^source\./, '');
		const src = merged.source[key];
		if (!src) die(`build names ${s}, which no source block defines`);
		sources[key] = {
			type: key.split('.')[0],
			cd_files: src.cd_files || null,
			cd_label: src.cd_label || null,
			shutdown_command: src.shutdown_command || null,
			communicator: src.communicator || null,
		};
	}
	process.stdout.write(JSON.stringify({ packer_dir: path.resolve(dir), sources, provisioners }, null, 1) + '\n');
}

main().catch((e) => die(e.stack || String(e)));
