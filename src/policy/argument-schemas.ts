// Tool arguments checked against the tool's inputSchema before anything is forwarded (2026-07-28/server/
// tools.mdx §Tool: JSON Schema 2020-12 by default, draft-07 when `$schema` says so; 2019-09 and draft-06 too,
// which basic/index.mdx §Schema Dialect lets implementations add). Validators are compiled
// once per distinct schema; one that cannot be (another dialect, an external $ref) says why. A violation becomes a tool result with isError, so a model can correct itself
// (tools.mdx §Error Handling: input validation failures are tool results, not protocol errors).

import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ToolRefusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { describeValue } from '../protocol/describe.js';
import { schemaPattern } from './schema-patterns.js';

// ajv ships CommonJS classes; createRequire keeps their constructors typed and avoids default-export games.
const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js').default;
const AjvDraft07 = require('ajv') as typeof import('ajv').default;
const Ajv2019 = require('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js').default;

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;
const DRAFT_06 = /^https?:\/\/json-schema\.org\/draft-06\/schema#?$/;
const DRAFT_2019_09 = /^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/;
const DRAFT_2020_12 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;
/** The dialects Gatehouse checks (basic/index.mdx §Schema Dialect: SHOULD document them). */
export const SUPPORTED_DIALECTS = '2020-12 (the default), 2019-09, draft-07, draft-06';
const AJV_OPTIONS = { strict: false, allErrors: true, validateFormats: false, ownProperties: true, code: { regExp: schemaPattern } };
/** Distinct schemas kept compiled; a server that churns schemas cannot grow this without bound. */
const MAX_COMPILED = 2_000;

export interface ArgumentProblem {
  path: string;
  message: string;
}

/**
 * A schema Gatehouse cannot check against: a dialect it does not support, a `$ref` outside the schema
 * (never fetched: basic/index.mdx §$ref Resolution), or no valid schema at all. `reason` completes
 * "its schema cannot be checked: …".
 */
export interface Uncheckable {
  uncheckable: string;
}

export function isUncheckable(v: ArgumentProblem[] | Uncheckable | undefined): v is Uncheckable {
  return v !== undefined && !Array.isArray(v);
}

export class ArgumentSchemas {
  // ownProperties: an argument is what the client sent, never what every object inherits (a left-out
  // `toString` must be missing, not found on the prototype).
  // code.regExp: a schema's patterns are an upstream's, run on a client's text (policy/schema-patterns.ts).
  private readonly modern = new Ajv2020(AJV_OPTIONS);
  private readonly draft07 = new AjvDraft07(AJV_OPTIONS);
  /** Made on first use: few tools declare 2019-09. */
  private draft2019?: InstanceType<typeof Ajv2019>;
  private draft06Added = false;
  private readonly compiled = new Map<string, ValidateFunction | Uncheckable>();
  /** Per schema object: the hot path finds its validator without serializing the schema again. */
  private readonly bySchemaObject = new WeakMap<object, ValidateFunction | Uncheckable>();

  constructor(private readonly log: Logger) {}

  /** The problems with `args` under `schema`; undefined when they conform; why, when it cannot be checked. */
  check(tool: string, schema: unknown, args: unknown): ArgumentProblem[] | Uncheckable | undefined {
    return this.problems(tool, schema, args ?? {});
  }

  /**
   * The problems with a result's `structuredContent` under the tool's outputSchema (tools.mdx §Output Schema:
   * the server MUST conform, clients SHOULD validate); a missing structuredContent is a problem too.
   */
  checkOutput(tool: string, schema: unknown, structuredContent: unknown): ArgumentProblem[] | undefined {
    if (schema === null || typeof schema !== 'object') return undefined;
    if (structuredContent === undefined) return [{ path: '(structuredContent)', message: 'is missing although the tool declares an outputSchema' }];
    const problems = this.problems(tool, schema, structuredContent);
    // An output schema that cannot be checked leaves the output unchecked (logged when first compiled).
    return isUncheckable(problems) ? undefined : problems;
  }

  private problems(tool: string, schema: unknown, value: unknown): ArgumentProblem[] | Uncheckable | undefined {
    if (schema === null || typeof schema !== 'object') return undefined;
    const validate = this.validatorFor(tool, schema as Record<string, unknown>);
    if (typeof validate !== 'function') return validate;
    let valid: boolean;
    try {
      valid = validate(value) as boolean;
    } catch (err) {
      // A recursive schema walks a value as deep as it goes: an upstream's answer nested thousands of levels
      // deep overflows the stack (a client's arguments are bounded by listen.maxJsonDepth first). Such a
      // value is not one the schema can vouch for.
      return [{ path: '(value)', message: `could not be checked against its schema (${err instanceof RangeError ? 'nested too deeply' : (err as Error).message})` }];
    }
    if (valid) return undefined;
    return (validate.errors ?? []).map(toProblem);
  }

  /** The validator for a schema's dialect: 2020-12 unless `$schema` names 2019-09, draft-07 or draft-06; another one is not supported. */
  private engineFor(dialect: unknown): InstanceType<typeof Ajv2020> | InstanceType<typeof AjvDraft07> | InstanceType<typeof Ajv2019> | Uncheckable {
    if (dialect === undefined || (typeof dialect === 'string' && DRAFT_2020_12.test(dialect))) return this.modern;
    if (typeof dialect === 'string' && DRAFT_07.test(dialect)) return this.draft07;
    if (typeof dialect === 'string' && DRAFT_06.test(dialect)) return this.draft06();
    if (typeof dialect === 'string' && DRAFT_2019_09.test(dialect)) return (this.draft2019 ??= new Ajv2019(AJV_OPTIONS));
    // basic/index.mdx §Schema Dialect: an unsupported dialect is an error saying so, never a guess.
    return { uncheckable: `its dialect ${describeValue(dialect)} is not one Gatehouse supports (${SUPPORTED_DIALECTS})` };
  }

  /** draft-06 is draft-07's engine with its meta-schema added, on first use. */
  private draft06(): InstanceType<typeof AjvDraft07> {
    if (!this.draft06Added) {
      this.draft07.addMetaSchema(require('ajv/dist/refs/json-schema-draft-06.json') as object);
      this.draft06Added = true;
    }
    return this.draft07;
  }

  private validatorFor(tool: string, schema: Record<string, unknown>): ValidateFunction | Uncheckable {
    const seen = this.bySchemaObject.get(schema);
    if (seen !== undefined) return seen;
    // A new list brings new objects for unchanged schemas; the serialized form finds their validator.
    const key = JSON.stringify(schema);
    const known = this.compiled.get(key);
    if (known !== undefined) {
      this.bySchemaObject.set(schema, known);
      return known;
    }
    let validate: ValidateFunction | Uncheckable;
    const engine = this.engineFor(schema.$schema);
    if ('uncheckable' in engine) validate = engine;
    else {
      try {
        validate = engine.compile(schema);
      } catch (err) {
        // An external $ref is never fetched (basic/index.mdx §$ref Resolution), and a schema that fails for
        // want of it SHOULD be rejected, not treated as permissive; so is one that is no schema at all.
        const missing = (err as { missingRef?: unknown }).missingRef;
        validate = { uncheckable: typeof missing === 'string' ? `it refers to a schema outside itself (${describeValue(missing)}), which Gatehouse does not fetch` : `it is not a valid schema (${(err as Error).message})` };
      }
    }
    if (typeof validate !== 'function') this.log.warn('a tool schema cannot be checked', { tool, reason: validate.uncheckable });
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

/** The refusal of a call whose tool's inputSchema cannot be checked (tools.uncheckableSchemas: refuse). */
export function schemaUnsupported(tool: string, why: Uncheckable): ToolRefusal {
  const message = `Tool "${tool}" is not called: its inputSchema cannot be checked, because ${why.uncheckable}. Nothing was sent to the server.`;
  return { kind: 'tool', code: 'schema_unsupported', message, details: { reason: why.uncheckable } };
}

/** The refusal a model sees when its arguments do not conform (DESIGN.md §2: refusals the model can act on). */
export function invalidArguments(tool: string, problems: ArgumentProblem[]): ToolRefusal {
  const message = `Invalid arguments for tool "${tool}": ${describeProblems(problems)}`;
  return { kind: 'tool', code: 'invalid_arguments', message, details: { errors: problems } };
}

function describeProblems(problems: ArgumentProblem[]): string {
  return problems.map((p) => `${p.path} ${p.message}`).join('; ');
}
