#!/usr/bin/env node
// Independent oracle: verify a Sigstore bundle offline with the npm packages
// @sigstore/bundle and @sigstore/verify (not our code), given a trusted root.
//   node oracle.cjs ARTIFACT BUNDLE TRUSTED_ROOT (--identity ID --issuer ISS | --key KEY.pem)
//                   [--tlog-threshold N]
// Exit 0: verified; 1: rejected (the reason on stderr); 2: usage.
// What the oracle does not check (its Verifier.verify): that a DSSE in-toto
// statement's subject digest is the artifact's. Callers must not ask it to.
'use strict';
const fs = require('fs');
const crypto = require('crypto');
const { bundleFromJSON } = require('@sigstore/bundle');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { TrustedRoot } = require('@sigstore/protobuf-specs');

const argv = process.argv.slice(2);
if (argv.length < 5) {
  process.stderr.write('usage: oracle.cjs ARTIFACT BUNDLE ROOT (--identity ID --issuer ISS | --key KEY)\n');
  process.exit(2);
}
const [artifactPath, bundlePath, rootPath] = argv;
const opts = {};
for (let i = 3; i + 1 < argv.length; i += 2) opts[argv[i].replace(/^--/, '')] = argv[i + 1];

try {
  const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath, 'utf8')));
  const root = TrustedRoot.fromJSON(JSON.parse(fs.readFileSync(rootPath, 'utf8')));
  let keys;
  if (opts.key) {
    const pub = crypto.createPublicKey(fs.readFileSync(opts.key));
    keys = () => ({ publicKey: pub, validFor: () => true });
  }
  const trust = toTrustMaterial(root, keys);
  const verifier = new Verifier(trust, { tlogThreshold: Number(opts['tlog-threshold'] || 1),
                                         ctlogThreshold: opts.key ? 0 : 1 });
  const entity = toSignedEntity(bundle, fs.readFileSync(artifactPath));
  const policy = opts.key ? undefined :
    { subjectAlternativeName: opts.identity, extensions: { issuer: opts.issuer } };
  const signer = verifier.verify(entity, policy);
  if (!opts.key && signer.identity === undefined) throw new Error('no identity');
  process.stdout.write('oracle: verified\n');
  process.exit(0);
} catch (err) {
  process.stderr.write(`oracle: rejected: ${err.code || ''} ${err.message}\n`);
  process.exit(1);
}
