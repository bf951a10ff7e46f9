// Locates the problems semantic-checks.ts finds (`key.path: message` strings) in the config file's text, so
// they read like the schema's findings: `FILE:LINE:COL key.path: message` (README §CLI, check-config).

import { LineCounter, parseDocument } from 'yaml';
import { yamlLocator, type PathSegment } from './load.js';

// The key path a problem starts with, as formatPath writes it: `a.b[0]["x.y"]`.
const NAME = '[A-Za-z_][A-Za-z0-9_-]*';
const INDEX = '\\[\\d+\\]';
const QUOTED = '\\["(?:[^"\\\\]|\\\\.)*"\\]';
const LEADING_PATH = new RegExp(`^(?:${NAME}|${INDEX}|${QUOTED})(?:\\.${NAME}|${INDEX}|${QUOTED})*(?=[:, (])`);
const SEGMENT = new RegExp(`${NAME}|${INDEX}|${QUOTED}`, 'g');

/** The segments of a path formatPath wrote. */
function segmentsOf(path: string): PathSegment[] {
  return [...path.matchAll(SEGMENT)].map(([seg]) => {
    if (seg.startsWith('["')) return JSON.parse(seg.slice(1, -1)) as string;
    if (seg.startsWith('[')) return Number(seg.slice(1, -1));
    return seg;
  });
}

/**
 * Each problem prefixed with `FILE:LINE:COL ` of the key it names (of the nearest key written in the file,
 * when the key itself is left out, as a missing `auth` is); `FILE: ` when it names no key path.
 */
export function locateProblems(file: string, text: string, problems: readonly string[]): string[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true });
  const locate = yamlLocator(doc, (offset) => {
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, column: pos.col };
  });
  return problems.map((problem) => {
    const path = LEADING_PATH.exec(problem)?.[0];
    if (path === undefined) return `${file}: ${problem}`;
    const { line, column } = locate(segmentsOf(path), false);
    return `${file}:${line}:${column} ${problem}`;
  });
}
