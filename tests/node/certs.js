'use strict';
// A key and a self-signed certificate for localhost and 127.0.0.1, shared by the TLS tests
// (tls.test.js) and the https benchmark (node-addon/bench-https.js): a fresh pair from openssl
// when it is installed, else the committed test pair in fixtures/ (valid until 2126; it
// protects nothing). Written into `dir`; returns { key, cert, certPath }.
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

function certificate(dir) {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  const r = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key,
      '-out', cert, '-days', '3650', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    { encoding: 'utf8' },
  );
  if (r.error || r.status !== 0) {
    fs.copyFileSync(path.join(__dirname, 'fixtures', 'localhost-key.pem'), key);
    fs.copyFileSync(path.join(__dirname, 'fixtures', 'localhost-cert.pem'), cert);
  }
  return { key: fs.readFileSync(key), cert: fs.readFileSync(cert), certPath: cert };
}

module.exports = { certificate };
