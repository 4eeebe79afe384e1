/**
 * The notebook tools: the handle store's example (durable state for a
 * sessionless MCP server), with the same names and JSON as the Go and Python
 * example servers. A notebook is the JSON `{"notes": [...]}` (UTF-8) behind
 * a handle; the principal is `""` over stdio (no authenticated caller) and
 * the bearer token's principal in HTTP mode ({@link principalOf}), so that
 * alice's notebook is `handle_not_found` for bob.
 *
 * - `notebook_create {}` → `{"handle", "generation", "idle_ttl_seconds", "max_age_seconds"}`
 * - `notebook_add {handle, note, generation?}` → `{"generation"}`
 * - `notebook_read {handle}` → `{"notes", "generation"}`
 * - `notebook_delete {handle, generation?}` → `{}`
 *
 * A store error is an MCP tool error (`isError: true`) whose structured
 * content is `{"error": "<code>", "message", "reason"?, "generation"?}`,
 * the same JSON as its text. The tools declare no output schema: a client
 * validates an error's structured content against it too.
 *
 * @packageDocumentation
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Conflict, HandleExpired, HandleStore, HandleStoreError, type Logger } from "mcp-resume";
import { z } from "zod";

import { principalOf } from "./http.js";

/** Retries of notebook_add after a conflict when the caller gave no generation (another writer got in between). */
export const ADD_RETRIES = 5;

type Result = { content: Array<{ type: "text"; text: string }>; structuredContent: Record<string, unknown>; isError?: boolean };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

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

/** A store error as the tool error of the contract; anything else is rethrown (the SDK answers it as a plain tool error). */
function toolError(e: unknown): Result {
  if (!(e instanceof HandleStoreError)) throw e;
  const o: Record<string, unknown> = { error: e.code, message: e.message };
  if (e instanceof HandleExpired) o["reason"] = e.reason;
  if (e instanceof Conflict) o["generation"] = e.generation;
  return { ...ok(o), isError: true };
}

/** The notes of a notebook's bytes; a value that is not a notebook answers `invalid_value` (another app's data). */
function notesOf(data: Uint8Array): string[] {
  try {
    const v = JSON.parse(decoder.decode(data)) as { notes?: unknown };
    if (Array.isArray(v.notes) && v.notes.every((n) => typeof n === "string")) return v.notes as string[];
  } catch {}
  throw new HandleStoreError("invalid_value", "the handle holds no notebook");
}

const notebook = (notes: string[]): Uint8Array => encoder.encode(JSON.stringify({ notes }));

/**
 * Opens the server's handle store (`app`, options from the environment:
 * `MCP_RESUME_STATE_DIR`, `MCP_RESUME_STATE_IDLE_TTL`,
 * `MCP_RESUME_STATE_MAX_AGE`), independent of resume. Never rejects: a
 * failure is logged and returned, and the tools then answer it.
 */
export async function openNotebooks(app: string, logger: Logger): Promise<HandleStore | HandleStoreError> {
  try {
    return await HandleStore.open(app, { logger });
  } catch (e) {
    const err = e instanceof HandleStoreError ? e : new HandleStoreError("store_unavailable", String((e as Error)?.message ?? e));
    logger.warn("the handle store is unavailable; the notebook tools will answer its error", { event: "handle_store_unavailable", error: err.message });
    return err;
  }
}

/**
 * Registers the four notebook tools on `server`, served by `opened` (the
 * result of {@link openNotebooks}; a failure there makes every tool answer
 * `store_unavailable`, or the open's own code, while the other tools work).
 * notebook_create's description states the store's durability policy.
 */
export function registerNotebookTools(server: McpServer, opened: HandleStore | HandleStoreError): void {
  const store = (): HandleStore => {
    if (opened instanceof HandleStoreError) throw new HandleStoreError("store_unavailable", `the handle store could not be opened: ${opened.message}`);
    return opened;
  };
  const policy =
    opened instanceof HandleStore
      ? `The notebook expires after ${goDuration(opened.settings.idleTtlMs)} idle and ${goDuration(opened.settings.maxAgeMs)} after creation at the latest; an expired handle answers handle_expired.`
      : "The handle store is unavailable on this server: every notebook tool answers store_unavailable.";
  const handle = z.string().describe("the notebook's handle, as notebook_create returned it");
  const generation = z.number().int().optional().describe("the generation you read: the call fails with conflict if the notebook changed since");

  server.registerTool("notebook_create", { description: `Creates a notebook and returns its handle. ${policy}`, inputSchema: {} }, async (_args, extra) => {
    try {
      const c = await store().create(principalOf(extra), notebook([]));
      return ok({ handle: c.handle, generation: c.generation, idle_ttl_seconds: c.idleTtlMs / 1000, max_age_seconds: c.maxAgeMs / 1000 });
    } catch (e) {
      return toolError(e);
    }
  });

  server.registerTool(
    "notebook_add",
    {
      description: `Adds a note to a notebook and returns its new generation. Without a generation, a concurrent change is retried up to ${ADD_RETRIES} times.`,
      inputSchema: { handle, note: z.string().describe("the note to add"), generation },
    },
    async ({ handle: h, note, generation: expect }, extra) => {
      const who = principalOf(extra);
      try {
        const s = store();
        for (let attempt = 0; ; attempt++) {
          const v = await s.get(h, who);
          try {
            return ok({ generation: await s.put(h, who, notebook([...notesOf(v.data), note]), { expect: expect ?? v.generation }) });
          } catch (e) {
            if (!(e instanceof Conflict) || expect !== undefined || attempt >= ADD_RETRIES) throw e;
          }
        }
      } catch (e) {
        return toolError(e);
      }
    },
  );

  server.registerTool("notebook_read", { description: "Returns a notebook's notes and generation.", inputSchema: { handle } }, async ({ handle: h }, extra) => {
    try {
      const v = await store().get(h, principalOf(extra));
      return ok({ notes: notesOf(v.data), generation: v.generation });
    } catch (e) {
      return toolError(e);
    }
  });

  server.registerTool(
    "notebook_delete",
    { description: "Deletes a notebook; with a generation, only if it is still that one. Its handle then answers handle_not_found.", inputSchema: { handle, generation } },
    async ({ handle: h, generation: expect }, extra) => {
      try {
        await store().delete(h, principalOf(extra), expect === undefined ? {} : { expect });
        return ok({});
      } catch (e) {
        return toolError(e);
      }
    },
  );
}
