/**
 * The notebook tools: the handle store's example (durable state for a
 * sessionless MCP server), with the same names and JSON as the Go and Python
 * example servers. A notebook is the JSON `{"notes": [...]}` (UTF-8) behind
 * a handle, kept through mcp-resume's adapter for the MCP SDK
 * (`mcp-resume/mcp`): the principal is `""` over stdio (no authenticated
 * caller) and the bearer token's client in HTTP mode (`extra.authInfo`), so
 * that alice's notebook is `handle_not_found` for bob.
 *
 * - `notebook_create {}` → `{"handle", "generation", "idle_ttl_seconds", "max_age_seconds"}`
 * - `notebook_add {handle, note, generation?}` → `{"generation"}`
 * - `notebook_read {handle}` → `{"notes", "generation"}`
 * - `notebook_delete {handle, generation?}` → `{}`
 *
 * A store error is an MCP tool error (`isError: true`) whose structured
 * content is `{"error": "<code>", "message", "reason"?, "generation"?}`,
 * the same JSON as its text (the adapter's `resume.tool`). The tools declare no output schema: a client
 * validates an error's structured content against it too.
 *
 * @packageDocumentation
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InvalidValueError, type HandleStore } from "mcp-resume";
import type { Resume } from "mcp-resume/mcp";
import { z } from "zod";

/** Retries of notebook_add after a conflict when the caller gave no generation (another writer got in between). */
export const ADD_RETRIES = 5;

type Result = { content: Array<{ type: "text"; text: string }>; structuredContent: Record<string, unknown> };

/** A duration in milliseconds as Go's `time.Duration.String` writes it (`24h0m0s`, `1m30s`, `2s`, `500ms`), as the Go and Python servers say it. */
export function goDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = String((ms % 60_000) / 1000);
  return h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
}

const ok = (o: Record<string, unknown>): Result => ({ content: [{ type: "text", text: JSON.stringify(o) }], structuredContent: o });

/** A notebook's JSON value. */
type Notebook = { notes: string[] };

/** The notes of a notebook's JSON value; a value that is not a notebook answers `invalid_value` (another app's data). */
function notesOf(v: unknown): string[] {
  const notes = (v as { notes?: unknown } | null)?.notes;
  if (Array.isArray(notes) && notes.every((n) => typeof n === "string")) return notes as string[];
  throw new InvalidValueError("invalid_value", "the handle holds no notebook");
}

/**
 * The handle store's policy for notebook_create's description, from the open store, or the sentence
 * saying it is unavailable when `store` is undefined (its open failed: every notebook tool then answers
 * `store_unavailable` while the other tools work).
 */
export function policyOf(store: HandleStore | undefined): string {
  return store
    ? `The notebook expires after ${goDuration(store.settings.idleTtlMs)} idle and ${goDuration(store.settings.maxAgeMs)} after creation at the latest; an expired handle answers handle_expired.`
    : "The handle store is unavailable on this server: every notebook tool answers store_unavailable.";
}

/**
 * Registers the four notebook tools on `server`, kept in `resume`'s handle
 * store; `policy` ({@link policyOf}) ends notebook_create's description.
 */
export function registerNotebookTools(server: McpServer, resume: Resume, policy: string): void {
  const handle = z.string().describe("the notebook's handle, as notebook_create returned it");
  const generation = z.number().int().optional().describe("the generation you read: the call fails with conflict if the notebook changed since");

  server.registerTool(
    "notebook_create",
    { description: `Creates a notebook and returns its handle. ${policy}`, inputSchema: {} },
    resume.tool(async (_args, extra) => {
      const c = await resume.createJson(extra, { notes: [] } satisfies Notebook);
      return ok({ handle: c.handle, generation: c.generation, idle_ttl_seconds: c.idleTtlMs / 1000, max_age_seconds: c.maxAgeMs / 1000 });
    }),
  );

  server.registerTool(
    "notebook_add",
    {
      description: `Adds a note to a notebook and returns its new generation. Without a generation, a concurrent change is retried up to ${ADD_RETRIES} times.`,
      inputSchema: { handle, note: z.string().describe("the note to add"), generation },
    },
    resume.tool(async ({ handle: h, note, generation: expect }, extra) => {
      if (expect === undefined) {
        const r = await resume.update(extra, h, (v: unknown): Notebook => ({ notes: [...notesOf(v), note] }), { retries: ADD_RETRIES });
        return ok({ generation: r.generation });
      }
      const v = await resume.getJson(extra, h);
      return ok({ generation: await resume.putJson(extra, h, { notes: [...notesOf(v.value), note] } satisfies Notebook, { expect }) });
    }),
  );

  server.registerTool(
    "notebook_read",
    { description: "Returns a notebook's notes and generation.", inputSchema: { handle } },
    resume.tool(async ({ handle: h }, extra) => {
      const v = await resume.getJson(extra, h);
      return ok({ notes: notesOf(v.value), generation: v.generation });
    }),
  );

  server.registerTool(
    "notebook_delete",
    { description: "Deletes a notebook; with a generation, only if it is still that one. Its handle then answers handle_not_found.", inputSchema: { handle, generation } },
    resume.tool(async ({ handle: h, generation: expect }, extra) => {
      await (await resume.handles()).delete(h, resume.principal(extra), expect === undefined ? {} : { expect });
      return ok({});
    }),
  );
}
