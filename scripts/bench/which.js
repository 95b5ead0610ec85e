'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** The executable `name` on PATH, or undefined: the bench's optional tools are found this way. */
function findOnPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch { /* not here */ }
  }
  return undefined;
}

module.exports = { findOnPath };
