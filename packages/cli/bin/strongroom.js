#!/usr/bin/env node
'use strict';
require('../dist/main.js').main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => { process.stderr.write(`Error: ${err && err.message ? err.message : String(err)}\n`); process.exitCode = 2; },
);
