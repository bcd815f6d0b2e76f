import type { ParamSpec, RuleSpec } from '../core/spec-model.ts';
import { conditionCode, type Fail } from './compile.ts';

function describeCondition(when: Record<string, unknown>): string {
  return Object.entries(when)
    .map(([k, c]) => {
      if (c === null || typeof c !== 'object') return `${k} is ${JSON.stringify(c)}`;
      const o = c as Record<string, unknown>;
      if ('equals' in o) return `${k} is ${JSON.stringify(o.equals)}`;
      if ('in' in o) return `${k} is one of ${(o.in as unknown[]).join(', ')}`;
      if ('gt' in o) return `${k} is above ${String(o.gt)}`;
      return o.present ? `${k} is given` : `${k} is not given`;
    })
    .join(' and ');
}

/**
 * Compiles the cross-field rules and the parameter-level checks that JSON Schema cannot express well
 * (comma-separated value counts, JSON-in-a-string, text that goes into an HTTP header) into the body of
 * `checkRules(input)`. The code is defensive about types: it also runs when schema validation already failed.
 */
export function compileRules(
  params: Record<string, ParamSpec>,
  rules: RuleSpec[],
  fail: Fail,
  headerParams: ReadonlySet<string> = new Set(),
): { code: string; used: Set<string> } {
  const used = new Set<string>();
  const out: string[] = [];
  const need = (name: string, path: Array<string | number>) => {
    if (!params[name]) fail(path, `"${name}" is not an input parameter of this tool`);
    used.add(name);
  };
  const ref = (name: string) => `input[${JSON.stringify(name)}]`;

  for (const [name, p] of Object.entries(params)) {
    if (p.csv) {
      // Without this, " , ," would pass and be sent as an empty parameter.
      const checks: string[] = [
        `if (values.length === 0) errors.push({ field: ${JSON.stringify(name)}, message: ${ref(name)}.trim() ? "must list at least one value (it holds only commas and spaces)" : "must list at least one comma-separated value" });`,
      ];
      if (p.csv.max_items !== undefined) {
        checks.push(
          `if (values.length > ${p.csv.max_items}) errors.push({ field: ${JSON.stringify(name)}, message: \`has \${values.length} comma-separated values; at most ${p.csv.max_items} are allowed\` });`,
        );
      }
      if (p.csv.item_pattern !== undefined) {
        checks.push(
          `for (const v of values) if (!new RegExp(${JSON.stringify(p.csv.item_pattern)}).test(v)) { errors.push({ field: ${JSON.stringify(name)}, message: \`value "\${v}" does not match ${p.csv.item_pattern.replace(/[`\\$]/g, '\\$&')}\` }); break; }`,
        );
      }
      out.push(`if (typeof ${ref(name)} === "string") { const values = T.csv(${ref(name)}); ${checks.join(' ')} }`);
    }
    if (p.json) {
      const types = JSON.stringify(p.json.types);
      out.push(
        `if (typeof ${ref(name)} === "string") { let parsed: unknown; let ok = true; try { parsed = JSON.parse(${ref(name)}); } catch (e) { ok = false; errors.push({ field: ${JSON.stringify(name)}, message: \`must be valid JSON: \${(e as Error).message}\` }); } ` +
          `if (ok) { const kind = Array.isArray(parsed) ? "array" : parsed === null ? "null" : typeof parsed; if (!${types}.includes(kind)) errors.push({ field: ${JSON.stringify(name)}, message: \`must be a JSON ${p.json.types.join(' or ')}, got \${kind}\` }); } }`,
      );
    }
  }

  // A header value with a line break, a control character or a non-ASCII character cannot be sent (Node refuses it,
  // and the call would fail as an upstream error): refused up front, naming the parameter.
  for (const name of headerParams) {
    out.push(
      `if (typeof ${ref(name)} === "string" && !/^[\\t\\x20-\\x7e]*$/.test(${ref(name)})) errors.push({ field: ${JSON.stringify(name)}, message: "must be printable ASCII text without line breaks (it is sent in an HTTP header)" });`,
    );
  }

  rules.forEach((rule, i) => {
    const path = ['rules', i];
    if ('requires' in rule) {
      rule.requires.forEach((f, j) => need(f, [...path, 'requires', j]));
      const cond = conditionCode(rule.when, params, fail, [...path, 'when'], used);
      const message = rule.message ?? `is required when ${describeCondition(rule.when)}`;
      out.push(
        `if (${cond}) { for (const f of ${JSON.stringify(rule.requires)}) if (!H.present(input[f as keyof typeof input])) errors.push({ field: f, message: ${JSON.stringify(message)} }); }`,
      );
    } else if ('unsupported' in rule) {
      rule.unsupported.forEach((f, j) => need(f, [...path, 'unsupported', j]));
      const message = rule.message ?? "cannot be sent: the provider's API has no field for it";
      out.push(
        `for (const f of ${JSON.stringify(rule.unsupported)}) if (H.present(input[f as keyof typeof input])) errors.push({ field: f, message: ${JSON.stringify(message)} });`,
      );
    } else if ('at_least_one_of' in rule) {
      rule.at_least_one_of.forEach((f, j) => need(f, [...path, 'at_least_one_of', j]));
      const fields = rule.at_least_one_of;
      const message = rule.message ?? `one of ${fields.join(', ')} is required`;
      out.push(
        `if (!${JSON.stringify(fields)}.some((f) => H.present(input[f as keyof typeof input]))) errors.push({ field: ${JSON.stringify(fields[0])}, message: ${JSON.stringify(message)} });`,
      );
    } else {
      const m = rule.max_page;
      need(m.page, [...path, 'max_page', 'page']);
      need(m.per_page, [...path, 'max_page', 'per_page']);
      out.push(
        `{ const pp = typeof ${ref(m.per_page)} === "number" && ${ref(m.per_page)} > 0 ? ${ref(m.per_page)} : ${m.per_page_default}; const max = Math.floor(${m.total} / pp); ` +
          `if (typeof ${ref(m.page)} === "number" && ${ref(m.page)} > max) errors.push({ field: ${JSON.stringify(m.page)}, message: ${
            rule.message
              ? JSON.stringify(rule.message)
              : `\`must be at most \${max} when ${m.per_page} is \${pp}: results stop at ${m.total} in total, so the largest page is floor(${m.total} / ${m.per_page})\``
          } }); }`,
      );
    }
  });
  return { code: out.join('\n'), used };
}
