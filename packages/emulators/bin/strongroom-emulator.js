#!/usr/bin/env node
'use strict';
// Runs the compiled CLI; `npm run build` (tsc -b) produces ../dist.
require('../dist/cli.js').main(process.argv.slice(2));
