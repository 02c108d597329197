// Type declarations for tether.js (written by hand; docs/CLIENTS.md, "TypeScript types").
//
// A room is generic over its kind's types: state, actions (action name → its args object),
// presence data and refusal reasons. `tether codegen typescript` writes a file that registers a
// server's kinds in `TetherKinds`, so `client.room("counter")` is a `RemoteRoom<CounterState, ...>`
// and `room.send("increment", { by: "x" })` does not compile. A room of an unregistered kind
// has an `unknown` state and takes any action.

export const PROTOCOL_VERSION: 1;
export const SUBPROTOCOL: "tether.v1";

/** A JSON value, as the server sends it. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [member: string]: JSONValue };

/** What a kind is, for the types: filled in per kind by `tether codegen typescript`. */
export interface KindTypes {
  state: unknown;
  actions: Record<string, object>;
  presence: object;
  reason: string;
}

/**
 * The kinds whose types are known: kind name → `KindTypes`. Empty here; the generated file adds
 * its kinds by module augmentation (`declare module "./tether.js" { interface TetherKinds ... }`).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface TetherKinds {}

/** The kind of a room name: "todo" of "todo:team-a". */
export type KindOf<Name extends string> = Name extends `${infer Kind}:${string}` ? Kind : Name;

/** The room `client.room(name)` returns: typed when `name`'s kind is registered. */
export type RoomOf<Name extends string> = KindOf<Name> extends keyof TetherKinds
  ? TetherKinds[KindOf<Name>] extends KindTypes
    ? RemoteRoom<TetherKinds[KindOf<Name>]["state"], TetherKinds[KindOf<Name>]["actions"], TetherKinds[KindOf<Name>]["presence"], TetherKinds[KindOf<Name>]["reason"]>
    : RemoteRoom
  : RemoteRoom;

/** The value at JSON Pointer `Pointer` in a `T` (undefined while absent); `unknown` when the
 * pointer is not a literal or escapes a character (~0, ~1). */
export type ValueAt<T, Pointer extends string> = string extends Pointer
  ? unknown
  : Pointer extends ""
    ? T
    : Pointer extends `/${infer Head}/${infer Rest}`
      ? ValueAt<MemberOf<T, Head>, `/${Rest}`>
      : Pointer extends `/${infer Head}`
        ? MemberOf<T, Head> | undefined
        : unknown;

type MemberOf<T, Token extends string> = Token extends `${string}~${string}`
  ? unknown
  : T extends readonly (infer Element)[]
    ? Element | undefined
    : T extends object
      ? Token extends keyof T
        ? T[Token]
        : string extends keyof T
          ? T[string & keyof T] | undefined
          : unknown
      : unknown;

/** An error in a JSON Patch or JSON Pointer; `index` is the failing operation's position. */
export class PatchError extends Error {
  constructor(message: string, index?: number);
  index: number | undefined;
}

export function parsePointer(text: string): string[];
export function formatPointer(tokens: readonly string[]): string;
export function valueAt(document: unknown, pointer: string | readonly string[]): unknown;
export function jsonEqual(a: unknown, b: unknown): boolean;

/** One JSON Patch (RFC 6902) operation. */
export type PatchOperation =
  | { op: "add" | "replace" | "test"; path: string; value: JSONValue }
  | { op: "remove"; path: string }
  | { op: "move" | "copy"; from: string; path: string };

export function applyPatch<T>(document: T, operations: readonly PatchOperation[]): T;
export function backoffDelay(
  attempt: number,
  options?: { initialDelay?: number; maxDelay?: number; multiplier?: number },
  random?: () => number,
): number;

/** A member of a room's presence. */
export interface PresenceMember<P = object> {
  user: string;
  data: P;
}

/** `member.data.name` when it is a string, else `member.user`. */
export function displayName(member: PresenceMember<unknown> | null | undefined): string | undefined;

/** The client's codes beside the server's (docs/PROTOCOL.md, "Errors"). */
export type ErrorCode =
  | "bad_message" | "unknown_room" | "unknown_action" | "invalid_args" | "unauthorized" | "rate_limited"
  | "too_large" | "unavailable" | "internal" | "room_deleted" | "stale_action"
  | "not_sent" | "queue_full" | "closed" | "not_connected" | "timeout" | "left";

/** An error from the server or the client; `reason` is a typed contract's refusal ("overflow"). */
export class TetherError<Reason extends string = string> extends Error {
  constructor(code: string, message: string, details?: { id?: number; room?: string; applied?: false | "unknown"; reason?: Reason });
  code: ErrorCode | (string & {});
  id?: number;
  room?: string;
  /** false: nothing changed (safe to send again); "unknown": it may have been applied. */
  applied?: false | "unknown";
  reason?: Reason;
}

/** An `on(event, fn)` emitter; `on` returns a function that removes `fn`. */
declare class Emitter<Events extends Record<string, unknown[]>> {
  on<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): () => void;
  off<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): void;
  emit<E extends keyof Events & string>(event: E, ...args: Events[E]): boolean;
}

export interface Ack {
  type: "ack";
  id: number;
  room: string;
  version?: number;
}

export interface SendOptions<S> {
  /** Shows the action's effect at once: changes the copy it gets, or returns a replacement. */
  predict?: (state: S) => S | void;
  /** How long it may wait to be sent (ms; default the client's `actionTimeout`). */
  timeout?: number;
}

export interface RoomOptions<P = object> {
  /** Be listed in the room's presence with this data. */
  presence?: P;
  /** See who is here without being listed. */
  watchPresence?: boolean;
}

export type RoomEvents<S, P> = {
  snapshot: [{ epoch: string; version: number; state: S; resynced: boolean }];
  patch: [{ epoch: string; from: number; version: number; ops: PatchOperation[]; paths: string[] }];
  members: [{ members: Record<string, PresenceMember<P>> | null; version: number | null; joined: string[]; left: string[]; changed: string[] }];
  joined: [Ack];
  error: [TetherError];
};

/** The mirror of one room (docs/CLIENTS.md, "Browsers and Node: tether.js"). */
export class RemoteRoom<
  S = unknown,
  A extends Record<string, object> = Record<string, any>,
  P extends object = object,
  Reason extends string = string,
> extends Emitter<RoomEvents<S, P>> {
  private constructor();
  readonly name: string;
  epoch: string | null;
  version: number | null;
  lastChangedPaths: string[];
  lastError: TetherError | null;
  watchPresence: boolean;
  members: Record<string, PresenceMember<P>> | null;
  presenceVersion: number | null;
  /** What the room shows; undefined before the first snapshot (`await room.ready()`). */
  readonly state: S | undefined;
  /** The room's state as the server's snapshot and patches made it. */
  readonly serverState: S | undefined;
  readonly presence: P | undefined;
  readonly synced: boolean;
  observe<Pointer extends string>(path: Pointer, listener: (value: ValueAt<S, Pointer>) => void): () => void;
  /** `args` may be left out when the action has no required member. */
  send<K extends keyof A & string>(action: K, ...rest: ArgsAndOptions<A[K], S>): Promise<Ack>;
  setPresence(data: P, options?: { timeout?: number }): Promise<Ack | null>;
  /** Resolves once synced: from then on `state` and `serverState` are never undefined. */
  ready(): Promise<this & { readonly state: S; readonly serverState: S }>;
  leave(): Promise<Ack | null>;
}

export interface ClientOptions {
  token?: string;
  WebSocket?: unknown;
  actionTimeout?: number;
  maxQueuedActions?: number;
  reconnect?: { enabled?: boolean; initialDelay?: number; maxDelay?: number; multiplier?: number };
  clientId?: string;
  user?: string | null;
}

export type ClientState = "connecting" | "live" | "reconnecting" | "closed";

export interface PendingAction {
  room: string;
  name: string;
  args: unknown;
  seq: number;
  sent: boolean;
}

/** One kind as `describe` lists it (docs/PROTOCOL.md, "Discovering rooms: describe"). */
export interface KindDescription {
  name: string;
  scope: string;
  actions: { name: string; args: Record<string, { type: string; optional?: boolean; [member: string]: unknown }> }[];
  schema?: Record<string, unknown>;
  fingerprint?: string;
}

export type ClientEvents = {
  state: [ClientState, Record<string, unknown>];
  hello: [{ type: "hello"; protocol: number; server: string; session: string }];
  message: [Record<string, unknown>];
  pending: [PendingAction[]];
  resync: [RemoteRoom];
  error: [TetherError];
  warning: [string];
};

/** A connection to a Tether server that mirrors rooms. */
export class TetherClient extends Emitter<ClientEvents> {
  constructor(urls: string | readonly string[], options?: ClientOptions);
  readonly urls: string[];
  token: string | undefined;
  clientId: string;
  user: string | null;
  actionTimeout: number;
  maxQueuedActions: number;
  reconnect: { enabled: boolean; initialDelay: number; maxDelay: number; multiplier: number };
  state: ClientState;
  stateInfo: Record<string, unknown>;
  session: string | null;
  url: string | null;
  lastActionLatency: number | null;
  /** The mirror of `name` (KIND or KIND:INSTANCE): typed when its kind is in `TetherKinds`. */
  room<Name extends string>(name: Name, options?: RoomOptions<RoomOf<Name> extends RemoteRoom<any, any, infer P> ? P : object>): RoomOf<Name>;
  readonly rooms: RemoteRoom[];
  readonly pendingActions: PendingAction[];
  connected(): Promise<this>;
  send<Name extends string, K extends keyof ActionsOf<Name> & string>(
    room: Name | RemoteRoom, action: K, ...rest: ArgsAndOptions<ActionsOf<Name>[K], unknown>): Promise<Ack>;
  describe(kind?: string, options?: { timeout?: number }): Promise<KindDescription[]>;
  setToken(token: string | undefined): void;
  close(): void;
}

type ActionsOf<Name extends string> = RoomOf<Name> extends RemoteRoom<any, infer A> ? A : Record<string, any>;

/** An action's `args` (optional when it has no required member), then `send`'s options. */
export type ArgsAndOptions<Args, S> = {} extends Args
  ? [args?: Args, options?: SendOptions<S>]
  : [args: Args, options?: SendOptions<S>];
