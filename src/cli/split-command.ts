// Splits a command line the way a POSIX shell splits words (quotes and backslashes), without running a
// shell: `--stdio "npx -y pkg 'a b'"` becomes ["npx", "-y", "pkg", "a b"].

export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
      continue;
    }
    if (c === '\\' && i + 1 < line.length && (quote === undefined || '"\\$`'.includes(line[i + 1]!))) {
      word += line[++i];
      inWord = true;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote !== undefined) throw new Error(`unterminated ${quote} quote in command`);
  if (inWord) words.push(word);
  return words;
}
