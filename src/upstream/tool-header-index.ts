// Which tools of one upstream mirror which arguments into `Mcp-Param-*` headers, learnt from its
// tools/list. Fetched when a tool is first called and again when a check fails (the tool may have
// changed), so the per-call cost is one map lookup.

import type { Logger } from '../log/logger.js';
import { readAnnotations, type Annotations } from '../protocol/param-headers.js';

/** Pages of tools/list followed at most; a server paginating forever is cut off. */
const MAX_PAGES = 50;
/** Unknown tools and failed checks refetch the list at most this often, so a bad caller cannot amplify. */
const MIN_REFETCH_MS = 2_000;

export type FetchToolsPage = (cursor: string | undefined) => Promise<{ tools: unknown[]; nextCursor?: string }>;

export class ToolHeaderIndex {
  private tools = new Map<string, Annotations>();
  private schemas = new Map<string, unknown>();
  private refreshing?: Promise<void>;
  private lastAttempt = -Infinity;

  constructor(private readonly fetchPage: FetchToolsPage, private readonly log: Logger) {}

  /** The tool's annotations as last listed (undefined when unknown); never fetches. */
  known(name: string): Annotations | undefined {
    return this.tools.get(name);
  }

  /** The tool's inputSchema as last listed (undefined when unknown); never fetches. */
  inputSchema(name: string): unknown {
    return this.schemas.get(name);
  }

  /** The tool's annotations; fetches the list when the tool is unknown, or when `refresh` asks for it. */
  async lookup(name: string, refresh = false): Promise<Annotations | undefined> {
    const known = this.tools.get(name);
    if (known && !refresh) return known;
    if (this.refreshing === undefined && Date.now() - this.lastAttempt < MIN_REFETCH_MS) return known;
    await this.refresh();
    return this.tools.get(name);
  }

  private refresh(): Promise<void> {
    if (this.refreshing === undefined) {
      this.lastAttempt = Date.now();
      this.refreshing = this.load().finally(() => (this.refreshing = undefined));
    }
    return this.refreshing;
  }

  private async load(): Promise<void> {
    const next = new Map<string, Annotations>();
    const schemas = new Map<string, unknown>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const { tools, nextCursor } = await this.fetchPage(cursor);
      for (const t of tools) {
        const tool = t as { name?: unknown; inputSchema?: unknown };
        if (typeof tool.name !== 'string') continue;
        const annotations = readAnnotations(tool.inputSchema);
        if (!annotations.ok) this.log.warn('tool has an invalid x-mcp-header annotation', { tool: tool.name, reason: annotations.reason });
        next.set(tool.name, annotations);
        schemas.set(tool.name, tool.inputSchema);
      }
      if (nextCursor === undefined) break;
      cursor = nextCursor;
    }
    this.tools = next;
    this.schemas = schemas;
  }
}
