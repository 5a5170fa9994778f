/**
 * `ReinsClient`: the reins HTTP API over plain `fetch`, typed by the server's own schemas. Every call
 * takes an `AbortSignal`; every refusal is a `ReinsApiError` with the server's `code`. Turns stream as
 * async iterables of `TurnEvent` that resume a dropped connection by themselves (`turn-event-stream.ts`).
 */
import { apiErrorOf } from "./api-error.js";
import { turnEventStream } from "./turn-event-stream.js";
import type {
  ActiveTurns,
  Agent,
  ApprovalBody,
  ApprovalDecided,
  CallOptions,
  CreatedSession,
  CreateSessionBody,
  DeletedSession,
  Session,
  SessionHistory,
  SessionList,
  StartTurnBody,
  ToolCancelled,
  TurnAborted,
  TurnEvent,
} from "./types.js";

export type ReinsClientOptions = {
  /** The server's origin, e.g. `http://localhost:3000` (the API lives under `/api`). */
  baseUrl: string;
  /** A bearer token from AUTH_TOKENS, when the server has auth on. */
  token?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Wait before resuming a dropped stream (default: the server's `retry:`, 2000 ms). */
  reconnectDelayMs?: number;
  /** Failed resumptions in a row before a stream gives up (default 5). */
  maxReconnects?: number;
};

export type FollowOptions = CallOptions & {
  /** The seq of the last event already held: the stream starts after it. */
  lastEventId?: number;
};
export type PageOptions = CallOptions & { limit?: number; cursor?: string };
export type HistoryOptions = CallOptions & { limit?: number; before?: string };

const DEFAULT_MAX_RECONNECTS = 5;

export class ReinsClient {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: ReinsClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Starts a turn (`startTurn`) and yields its events up to the terminal one, resuming a dropped stream. */
  startTurn(body: StartTurnBody, options: CallOptions = {}): AsyncGenerator<TurnEvent> {
    return turnEventStream({
      ...this.streamSettings(options.signal),
      open: (signal) =>
        this.send("POST", "/api/sessions/stream", { body, signal, accept: "text/event-stream" }),
    });
  }

  /** Follows a turn (`followTurnEvents`): the events after `lastEventId`, then live up to the terminal one. */
  followTurn(turnId: string, options: FollowOptions = {}): AsyncGenerator<TurnEvent> {
    return turnEventStream({
      ...this.streamSettings(options.signal),
      turnId,
      lastSeq: options.lastEventId ?? 0,
      open: (signal) => this.openEvents(turnId, options.lastEventId ?? 0, signal),
    });
  }

  /** Aborts a running turn (`abortTurn`). */
  abortTurn(turnId: string, options: CallOptions = {}): Promise<TurnAborted> {
    return this.json("POST", `/api/turns/${segment(turnId)}/abort`, options);
  }

  /** Cancels one running tool call (`cancelTool`); the turn goes on. */
  cancelTool(turnId: string, toolId: string, options: CallOptions = {}): Promise<ToolCancelled> {
    return this.json("POST", `/api/turns/${segment(turnId)}/tools/${segment(toolId)}/abort`, options);
  }

  /** Approves (optionally with an edited input) or rejects a call waiting for approval (`decideApproval`). */
  decideApproval(
    turnId: string,
    toolId: string,
    decision: ApprovalBody,
    options: CallOptions = {},
  ): Promise<ApprovalDecided> {
    return this.json("POST", `/api/turns/${segment(turnId)}/tools/${segment(toolId)}/approval`, {
      ...options,
      body: decision,
    });
  }

  /** Running turns with their tools, pauses and pending approvals, and zombies (`listActiveTurns`). */
  activeTurns(options: CallOptions = {}): Promise<ActiveTurns> {
    return this.json("GET", "/api/turns/active", options);
  }

  /** One page of the caller's sessions, newest activity first (`listSessions`); pass `nextCursor` on. */
  listSessions(options: PageOptions = {}): Promise<SessionList> {
    return this.json(
      "GET",
      `/api/sessions${query({ limit: options.limit, cursor: options.cursor })}`,
      options,
    );
  }

  /** Every session of the caller, fetching page after page as the iteration goes. */
  async *allSessions(options: PageOptions = {}): AsyncGenerator<Session> {
    let cursor = options.cursor;
    do {
      const page = await this.listSessions({ ...options, cursor });
      yield* page.sessions;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Creates an empty session (`createSession`). */
  createSession(body: CreateSessionBody = {}, options: CallOptions = {}): Promise<CreatedSession> {
    return this.json("POST", "/api/sessions", { ...options, body });
  }

  getSession(sessionId: string, options: CallOptions = {}): Promise<Session> {
    return this.json("GET", `/api/sessions/${segment(sessionId)}`, options);
  }

  renameSession(sessionId: string, title: string, options: CallOptions = {}): Promise<Session> {
    return this.json("PATCH", `/api/sessions/${segment(sessionId)}`, { ...options, body: { title } });
  }

  /** Deletes a session with its turns, history, events and trace; 409 `session_busy` while a turn runs. */
  deleteSession(sessionId: string, options: CallOptions = {}): Promise<DeletedSession> {
    return this.json("DELETE", `/api/sessions/${segment(sessionId)}`, options);
  }

  /** The canonical history (`getSessionHistory`): all of it, or a page with `limit` / `before`. */
  getHistory(sessionId: string, options: HistoryOptions = {}): Promise<SessionHistory> {
    const search = query({ limit: options.limit, before: options.before });
    return this.json("GET", `/api/sessions/${segment(sessionId)}/history${search}`, options);
  }

  /** The agents turns can run as (`listAgents`). */
  async listAgents(options: CallOptions = {}): Promise<Agent[]> {
    const { agents } = await this.json<{ agents: Agent[] }>("GET", "/api/agents", options);
    return agents;
  }

  private streamSettings(signal: AbortSignal | undefined) {
    return {
      signal,
      reconnectDelayMs: this.options.reconnectDelayMs,
      maxReconnects: this.options.maxReconnects ?? DEFAULT_MAX_RECONNECTS,
      resume: (turnId: string, lastSeq: number, resumeSignal: AbortSignal | undefined) =>
        this.openEvents(turnId, lastSeq, resumeSignal),
    };
  }

  private openEvents(turnId: string, lastSeq: number, signal: AbortSignal | undefined): Promise<Response> {
    return this.send("GET", `/api/turns/${segment(turnId)}/events`, {
      signal,
      accept: "text/event-stream",
      headers: lastSeq > 0 ? { "Last-Event-ID": String(lastSeq) } : {},
    });
  }

  private async json<T>(method: string, path: string, options: CallOptions & { body?: unknown }): Promise<T> {
    const response = await this.send(method, path, { ...options, accept: "application/json" });
    if (!response.ok) throw await apiErrorOf(response);
    return (await response.json()) as T;
  }

  private send(
    method: string,
    path: string,
    request: { body?: unknown; signal?: AbortSignal; accept: string; headers?: Record<string, string> },
  ): Promise<Response> {
    const headers: Record<string, string> = { Accept: request.accept, ...request.headers };
    if (this.options.token !== undefined) headers.Authorization = `Bearer ${this.options.token}`;
    if (request.body !== undefined) headers["Content-Type"] = "application/json";
    return this.fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal: request.signal,
    });
  }
}

/** One path segment, escaped. */
function segment(value: string): string {
  return encodeURIComponent(value);
}

/** `?name=value&…` of the defined parameters; empty when there are none. */
function query(parameters: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== undefined) search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}
