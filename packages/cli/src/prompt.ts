/**
 * Reads one line from the terminal with echo off, so an unseal key never shows on screen nor
 * lands in shell history or `ps`. Raw mode hands over each key press: Enter ends the line,
 * backspace edits it, Ctrl-C and Ctrl-D give up.
 */
export function promptHidden(prompt: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WritableStream = process.stdout): Promise<string> {
  return new Promise((resolve, reject) => {
    // Echo goes off before the prompt shows, so nothing typed after it can appear on screen.
    input.setRawMode(true);
    output.write(prompt);
    let line = '';
    const done = (err?: Error) => {
      input.setRawMode(false);
      input.off('data', onData);
      input.pause();
      output.write('\n');
      if (err) reject(err);
      else resolve(line);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(Object.assign(new Error('interrupted'), { code: 'INTERRUPTED' }));
        if (ch === '\u0004') return done(line === '' ? Object.assign(new Error('no input'), { code: 'EOF' }) : undefined);
        if (ch === '\u007f' || ch === '\b') line = line.slice(0, -1);
        else line += ch;
      }
    };
    input.resume();
    input.on('data', onData);
  });
}
