// Tool arguments checked against the tool's inputSchema before anything is forwarded (2026-07-28/server/
// tools.mdx §Tool: JSON Schema 2020-12 by default, draft-07 when `$schema` says so; 2019-09 too, which
// basic/index.mdx §Schema Dialect lets implementations add). Validators are compiled
// once per distinct schema. A violation becomes a tool result with isError, so a model can correct itself
// (tools.mdx §Error Handling: input validation failures are tool results, not protocol errors).

import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ToolRefusal } from '../errors.js';
import type { Logger } from '../log/logger.js';

// ajv ships CommonJS classes; createRequire keeps their constructors typed and avoids default-export games.
const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js').default;
const AjvDraft07 = require('ajv') as typeof import('ajv').default;
const Ajv2019 = require('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js').default;

const DRAFT_07 = /draft-07/;
const DRAFT_2019_09 = /draft\/2019-09\//;
/** Distinct schemas kept compiled; a server that churns schemas cannot grow this without bound. */
const MAX_COMPILED = 2_000;

export interface ArgumentProblem {
  path: string;
  message: string;
}

export class ArgumentSchemas {
  private readonly modern = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  private readonly draft07 = new AjvDraft07({ strict: false, allErrors: true, validateFormats: false });
  /** Made on first use: few tools declare 2019-09. */
  private draft2019?: InstanceType<typeof Ajv2019>;
  private readonly compiled = new Map<string, ValidateFunction | null>();
  /** Per schema object: the hot path finds its validator without serializing the schema again. */
  private readonly bySchemaObject = new WeakMap<object, ValidateFunction | null>();

  constructor(private readonly log: Logger) {}

  /** The problems with `args` under `schema`, or undefined when they conform (or the schema is unusable). */
  check(tool: string, schema: unknown, args: unknown): ArgumentProblem[] | undefined {
    return this.problems(tool, schema, args ?? {});
  }

  /**
   * The problems with a result's `structuredContent` under the tool's outputSchema (tools.mdx §Output Schema:
   * the server MUST conform, clients SHOULD validate); a missing structuredContent is a problem too.
   */
  checkOutput(tool: string, schema: unknown, structuredContent: unknown): ArgumentProblem[] | undefined {
    if (schema === null || typeof schema !== 'object') return undefined;
    if (structuredContent === undefined) return [{ path: '(structuredContent)', message: 'is missing although the tool declares an outputSchema' }];
    return this.problems(tool, schema, structuredContent);
  }

  private problems(tool: string, schema: unknown, value: unknown): ArgumentProblem[] | undefined {
    if (schema === null || typeof schema !== 'object') return undefined;
    const validate = this.validatorFor(tool, schema as Record<string, unknown>);
    if (!validate || validate(value)) return undefined;
    return (validate.errors ?? []).map(toProblem);
  }

  /** The validator for a schema's dialect: 2020-12 unless `$schema` names draft-07 or 2019-09. */
  private engineFor(dialect: unknown): InstanceType<typeof Ajv2020> | InstanceType<typeof AjvDraft07> | InstanceType<typeof Ajv2019> {
    if (typeof dialect !== 'string') return this.modern;
    if (DRAFT_07.test(dialect)) return this.draft07;
    if (DRAFT_2019_09.test(dialect)) return (this.draft2019 ??= new Ajv2019({ strict: false, allErrors: true, validateFormats: false }));
    return this.modern;
  }

  private validatorFor(tool: string, schema: Record<string, unknown>): ValidateFunction | null {
    const seen = this.bySchemaObject.get(schema);
    if (seen !== undefined) return seen;
    // A new list brings new objects for unchanged schemas; the serialized form finds their validator.
    const key = JSON.stringify(schema);
    const known = this.compiled.get(key);
    if (known !== undefined) {
      this.bySchemaObject.set(schema, known);
      return known;
    }
    let validate: ValidateFunction | null;
    try {
      validate = this.engineFor(schema.$schema).compile(schema);
    } catch (err) {
      // An external $ref or a broken schema: never fetched (basic/index.mdx §$ref Resolution); the upstream
      // validates for itself.
      this.log.warn('tool inputSchema cannot be compiled; its arguments are not checked here', { tool, err });
      validate = null;
    }
    if (this.compiled.size >= MAX_COMPILED) this.compiled.delete(this.compiled.keys().next().value!);
    this.compiled.set(key, validate);
    this.bySchemaObject.set(schema, validate);
    return validate;
  }
}

function toProblem(e: ErrorObject): ArgumentProblem {
  const path = e.instancePath === '' ? '(arguments)' : e.instancePath;
  const extra = e.keyword === 'additionalProperties' ? ` "${(e.params as { additionalProperty: string }).additionalProperty}"` : '';
  return { path, message: `${e.message ?? e.keyword}${extra}` };
}

/** The refusal that replaces output that broke its schema, under `tools.outputValidation: enforce`. */
export function invalidOutput(tool: string, problems: ArgumentProblem[]): ToolRefusal {
  const message = `Tool "${tool}" returned output that does not match its outputSchema: ${describeProblems(problems)}`;
  return { kind: 'tool', code: 'invalid_output', message, details: { errors: problems } };
}

/** The refusal a model sees when its arguments do not conform (DESIGN.md §2: refusals the model can act on). */
export function invalidArguments(tool: string, problems: ArgumentProblem[]): ToolRefusal {
  const message = `Invalid arguments for tool "${tool}": ${describeProblems(problems)}`;
  return { kind: 'tool', code: 'invalid_arguments', message, details: { errors: problems } };
}

function describeProblems(problems: ArgumentProblem[]): string {
  return problems.map((p) => `${p.path} ${p.message}`).join('; ');
}
