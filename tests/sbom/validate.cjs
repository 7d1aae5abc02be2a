#!/usr/bin/env node
// Validate CycloneDX 1.5 JSON files against the schema shipped in the npm
// package @cyclonedx/cyclonedx-library (pinned in package-lock.json), with
// ajv (draft-07) + ajv-formats. The bom schema refers to
// "spdx.SNAPSHOT.schema.json" and "jsf-0.82.SNAPSHOT.schema.json" relative
// to its $id; both are loaded under those names.
// usage: node validate.cjs FILE...   exit 0 valid, 1 invalid, 2 usage
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');
const addFormats = require('ajv-formats');

const dir = path.join(path.dirname(require.resolve('@cyclonedx/cyclonedx-library/package.json')),
  'res', 'schema');
const load = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
const base = 'http://cyclonedx.org/schema/';

const ajv = new Ajv({ strict: false, allErrors: true, logger: false });
addFormats(ajv);
// Formats the schema uses that ajv-formats lacks: checked loosely (no
// blanks or control characters; one @ in an e-mail address).
ajv.addFormat('iri-reference', /^[^\s\u0000-\u001f]*$/u);
ajv.addFormat('idn-email', /^[^\s@]+@[^\s@]+$/u);
for (const f of ['spdx.SNAPSHOT.schema.json', 'jsf-0.82.SNAPSHOT.schema.json']) {
  const s = load(f);
  s.$id = base + f;
  ajv.addSchema(s);
}
const validate = ajv.compile(load('bom-1.5.SNAPSHOT.schema.json'));

if (process.argv.length < 3) {
  console.error('usage: validate.cjs FILE...');
  process.exit(2);
}
let bad = 0;
for (const f of process.argv.slice(2)) {
  const doc = JSON.parse(fs.readFileSync(f, 'utf8'));
  if (validate(doc)) {
    console.log(`${f}: valid CycloneDX 1.5`);
  } else {
    bad++;
    for (const e of validate.errors) console.log(`${f}: ${e.instancePath} ${e.message}`);
  }
}
process.exit(bad ? 1 : 0);
