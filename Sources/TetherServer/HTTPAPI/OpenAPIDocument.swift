import TetherContract
import TetherJSON
import TetherProtocol
import TetherState

/// The OpenAPI 3.1 document of the HTTP API (`GET /openapi.json`): the generic routes, and for
/// each kind with a contract a concrete path per action of its default room, whose body is the
/// action's argument schema, so a generated client gets typed calls.
enum OpenAPIDocument {
    static func document(kinds: [ViewModelKind]) -> JSON {
        var paths: [String: JSON] = [
            "/openapi.json": ["get": operation("This document.", security: false, responses: ["200": json("The OpenAPI document.", ["type": "object"])])],
            "/kinds": ["get": describe("Every room kind: its actions, their arguments and the contract's schema.")],
            "/kinds/{kind}": ["parameters": .array([parameter("kind", "A kind's name.")]), "get": describe("One room kind.", notFound: true)],
            "/rooms": ["get": operation("Every room, live or stored (an admin token).", responses: [
                "200": json("The rooms.", ref("RoomList")), "401": error("No token, or one that does not verify."),
                "403": error("The token has no admin claim."), "429": error("Too many requests."),
            ])],
            "/rooms/{room}": [
                "parameters": .array([roomParameter]),
                "get": operation("The room's state as the caller's viewer sees it, with its epoch and version.", extra: [
                    "parameters": .array([["name": "If-None-Match", "in": "header", "required": false, "schema": ["type": "string"],
                                           "description": "An ETag from an earlier answer: 304 while the room is at that version."]]),
                ], responses: reading(["200": json("The room's state.", ref("RoomState"), headers: ["ETag": "\"EPOCH.VERSION\" of the state"]),
                                       "304": ["description": "Not changed since the ETag sent."]])),
                "delete": operation("Deletes the room (an admin token).", responses: [
                    "200": json("Deleted.", ["type": "object"]), "401": error("No token, or one that does not verify."),
                    "403": error("The token has no admin claim."), "404": error("No such room."), "409": error("The room may not be deleted."),
                    "429": error("Too many requests."), "501": error("Not on a cluster."),
                ]),
            ],
            "/rooms/{room}/members": [
                "parameters": .array([roomParameter]),
                "get": operation("Who is in the room (kinds with presence).", responses: reading(["200": json("The members.", ref("Members"))])),
            ],
            "/rooms/{room}/events": [
                "parameters": .array([roomParameter]),
                "get": operation("The room's stream as Server-Sent Events: a snapshot, then each patch. Event ids are EPOCH.VERSION; reconnect with Last-Event-ID to resume.", extra: [
                    "parameters": .array([
                        ["name": "Last-Event-ID", "in": "header", "required": false, "schema": ["type": "string"]],
                        ["name": "presence", "in": "query", "required": false, "schema": ["type": "string", "enum": ["watch"]]],
                    ]),
                ], responses: reading(["200": ["description": "The stream.", "content": ["text/event-stream": ["schema": ["type": "string"]]]]])),
            ],
            "/rooms/{room}/history": [
                "parameters": .array([roomParameter]),
                "get": operation("A stored room's kept versions, newest first: what made each (an action, a timer, presence), who and when, and the paths it changed (an admin token).", extra: [
                    "parameters": .array([
                        ["name": "limit", "in": "query", "required": false, "schema": ["type": "integer", "minimum": 1, "maximum": .int(RoomHistoryAnswer.maxLimit)]],
                        ["name": "before", "in": "query", "required": false, "schema": ["type": "integer", "minimum": 1, "maximum": .int(Int.max)],
                         "description": "Only versions before this one (the next page)."],
                        ["name": "viewer", "in": "query", "required": false, "schema": ["type": "string"]],
                        ["name": "action", "in": "query", "required": false, "schema": ["type": "string"]],
                        ["name": "patch", "in": "query", "required": false, "schema": ["type": "boolean"],
                         "description": "Each step's whole patch (`patch`) too."],
                    ]),
                ], responses: [
                    "200": json("The steps.", ref("History")), "400": error("A malformed query."), "401": error("No token, or one that does not verify."),
                    "403": error("The token has no admin claim."), "404": error("No stored room of that name, or a server that stores none."),
                    "429": error("Too many requests."), "503": error("The store or the cluster's log could not be read."),
                ]),
            ],
            "/rooms/{room}/state": [
                "parameters": .array([roomParameter]),
                "get": operation("A stored room's published state at an earlier version, rebuilt from a snapshot and the patches after it, or from a cluster's log (an admin token).", extra: [
                    "parameters": .array([["name": "at", "in": "query", "required": true, "schema": ["type": "integer", "minimum": 0, "maximum": .int(Int.max)]]]),
                ], responses: [
                    "200": json("The state then.", ref("RoomState")), "400": error("No version, or not a number."),
                    "401": error("No token, or one that does not verify."), "403": error("The token has no admin claim."),
                    "404": error("No stored room of that name, or a server that stores none."), "410": error("A version the store no longer rebuilds."),
                    "429": error("Too many requests."), "503": error("The store or the cluster's log could not be read."),
                ]),
            ],
            "/rooms/{room}/export": [
                "parameters": .array([roomParameter]),
                "get": operation("A stored room's steps between two versions with what a replay needs: the published and stored state at `from`, then each step's provenance, patch and stored operations (an admin token; kinds that keep their arguments).", extra: [
                    "parameters": .array([
                        ["name": "from", "in": "query", "required": true, "schema": ["type": "integer", "minimum": 0, "maximum": .int(Int.max)]],
                        ["name": "to", "in": "query", "required": false, "schema": ["type": "integer", "minimum": 0, "maximum": .int(Int.max)],
                         "description": "The last version (default: the room's)."],
                    ]),
                ], responses: [
                    "200": json("The export.", ref("Export")), "400": error("No from, or a version that is not a number."),
                    "422": error("A to before from, or more than \(RoomExportAnswer.maxSteps) steps."),
                    "401": error("No token, or one that does not verify."), "403": error("The token has no admin claim."),
                    "404": error("No stored room of that name, or a server that stores none."),
                    "409": error("A step that cannot be replayed: its kind keeps its arguments as a digest, or it predates history."),
                    "410": error("Versions the store or the cluster's log no longer rebuilds."), "429": error("Too many requests."),
                    "503": error("The store could not be read."),
                ]),
            ],
            "/rooms/{room}/fork": [
                "parameters": .array([roomParameter]),
                "post": operation("Makes a new room of the same kind whose state is this room's at a version, published and stored (an admin token).", extra: [
                    "parameters": .array([
                        ["name": "at", "in": "query", "required": true, "schema": ["type": "integer", "minimum": 0, "maximum": .int(Int.max)]],
                        ["name": "to", "in": "query", "required": true, "schema": ["type": "string", "minLength": 1], "description": "The new room's name."],
                    ]),
                ], responses: [
                    "201": json("Forked.", ["type": "object", "required": ["room", "from", "at", "epoch"], "properties": [
                        "room": ["type": "string"], "from": ["type": "string"], "at": ["type": "integer"], "epoch": ["type": "string"],
                    ]]),
                    "400": error("No version or new name."), "422": error("A new room of another kind, or not a room name."), "401": error("No token, or one that does not verify."),
                    "403": error("The token has no admin claim."), "404": error("No stored room of that name, or a server that stores none."),
                    "409": error("A room of the new name exists."), "410": error("A version the store or the cluster's log no longer rebuilds."),
                    "429": error("Too many requests."),
                    "503": error("The store could not be read."),
                ]),
            ],
            "/rooms/{room}/actions/{action}": [
                "parameters": .array([roomParameter, parameter("action", "The action's name.")]),
                "post": act("Runs an action of the room's ViewModel.", arguments: ["type": "object"]),
            ],
        ]
        var schemas = components
        for kind in kinds where kind.scope == .shared && !kind.actionNames.isEmpty {
            guard let contract = kind.contractSchema?.document, case .object(let actions)? = contract["actions"] else { continue }
            let prefix = kind.name.filter { $0.isLetter || $0.isNumber } + "_"
            if case .object(let definitions)? = contract["$defs"] {
                for (name, schema) in definitions { schemas[prefix + name] = relocate(schema, prefix: prefix) }
            }
            for (action, arguments) in actions.sorted(by: { $0.key < $1.key }) {
                paths["/rooms/\(kind.name)/actions/\(action)"] = [
                    "post": act("\(kind.name).\(action) in the room \(kind.name).", arguments: relocate(arguments, prefix: prefix)),
                ]
            }
        }
        return [
            "openapi": "3.1.0",
            "info": ["title": "tetherd HTTP API", "version": .string(TetherServer.version),
                     "description": "Act on rooms, read them and follow them with HTTP alone. Errors have one shape, the WebSocket protocol's."],
            "servers": [["url": "/"]],
            "paths": .object(paths),
            "components": ["schemas": .object(schemas),
                           "securitySchemes": ["bearer": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"]]],
        ]
    }

    // MARK: Operations

    private static func operation(_ summary: String, security: Bool = true, extra: [String: JSON] = [:], responses: [String: JSON]) -> JSON {
        var fields = extra
        fields["summary"] = .string(summary)
        fields["responses"] = .object(responses)
        fields["security"] = security ? [["bearer": []]] : []
        return .object(fields)
    }

    private static func describe(_ summary: String, notFound: Bool = false) -> JSON {
        var responses: [String: JSON] = ["200": json("The kinds.", ref("Description")), "429": error("Too many requests.")]
        if notFound { responses["404"] = error("No such kind.") }
        return operation(summary, security: false, responses: responses)
    }

    /// Statuses every read can answer besides its own.
    private static func reading(_ own: [String: JSON]) -> [String: JSON] {
        own.merging([
            "400": error("A malformed header or query."), "401": error("No token, or one that does not verify."),
            "403": error("The token does not cover the room."), "404": error("No such room, or a kind without presence."),
            "429": error("Too many requests."), "503": error("The room cannot answer now."), "504": error("No answer in time."),
        ]) { own, _ in own }
    }

    private static func act(_ summary: String, arguments: JSON) -> JSON {
        operation(summary, extra: [
            "parameters": .array([
                ["name": "Idempotency-Key", "in": "header", "required": false, "schema": ["type": "string", "pattern": .string(APIArguments.headerPattern)],
                 "description": "Runs the action once: a repeat gets the first outcome. With Tether-Client, a positive integer numbers the client's actions."],
                ["name": "Tether-Client", "in": "header", "required": false, "schema": ["type": "string", "pattern": .string(APIArguments.headerPattern)],
                 "description": "The caller's name: with an integer Idempotency-Key, the room keeps its last 64 outcomes."],
            ]),
            "requestBody": ["required": false, "content": ["application/json": ["schema": arguments]]],
        ], responses: [
            "200": json("Applied: its effects are in the state at `version` or earlier.", ref("ActionResult")),
            "400": error("Not JSON, or bad idempotency headers."), "401": error("No token, or one that does not verify."),
            "403": error("The token does not allow acting on the room."), "404": error("No such room or action."),
            "405": error("The path names no action: a room name holding a control character (%0D) is cut there by the transport."),
            "409": error("A numbered action older than those the room remembers."), "413": error("The body is too large."),
            "422": error("The arguments are wrong, or the ViewModel refused them."), "429": error("Too many requests."),
            "500": error("The ViewModel failed."), "503": error("The room cannot take actions now."),
            "504": error("No outcome in time: send it again with the same Idempotency-Key."),
        ])
    }

    // MARK: Pieces

    private static let roomParameter = parameter("room", "The room's name, percent-encoded (todo%3Ateam-a).")

    private static func parameter(_ name: String, _ description: String) -> JSON {
        ["name": .string(name), "in": "path", "required": true, "description": .string(description), "schema": ["type": "string", "minLength": 1]]
    }

    private static func ref(_ name: String) -> JSON { ["$ref": .string("#/components/schemas/\(name)")] }

    private static func json(_ description: String, _ schema: JSON, headers: [String: String] = [:]) -> JSON {
        var fields: [String: JSON] = ["description": .string(description), "content": ["application/json": ["schema": schema]]]
        if !headers.isEmpty {
            fields["headers"] = .object(headers.mapValues { ["description": .string($0), "schema": ["type": "string"]] })
        }
        return .object(fields)
    }

    private static func error(_ description: String) -> JSON { json(description, ref("Error")) }

    /// A contract's `$ref`s point into its own `$defs`; here they live among the components.
    private static func relocate(_ schema: JSON, prefix: String) -> JSON {
        switch schema {
        case .object(let fields):
            var moved: [String: JSON] = [:]
            for (key, value) in fields {
                if key == "$ref", let target = value.stringValue, target.hasPrefix("#/$defs/") {
                    moved[key] = .string("#/components/schemas/" + prefix + target.dropFirst("#/$defs/".count))
                } else {
                    moved[key] = relocate(value, prefix: prefix)
                }
            }
            return .object(moved)
        case .array(let items): return .array(items.map { relocate($0, prefix: prefix) })
        default: return schema
        }
    }

    private static let components: [String: JSON] = [
        "Error": ["type": "object", "required": ["code", "message", "applied"], "properties": [
            "code": ["type": "string", "enum": .array(ErrorCode.allCases.map { .string($0.rawValue) })],
            "message": ["type": "string"], "room": ["type": "string"], "reason": ["type": "string"],
            "applied": ["description": "false: nothing changed; \"unknown\": it may have been applied.", "enum": [false, "unknown"]],
        ]],
        "ActionResult": ["type": "object", "required": ["room", "action", "version"], "properties": [
            "room": ["type": "string"], "action": ["type": "string"], "version": ["type": ["integer", "null"]],
        ]],
        "RoomState": ["type": "object", "required": ["room", "kind", "epoch", "version", "state"], "properties": [
            "room": ["type": "string"], "kind": ["type": "string"], "epoch": ["type": "string"], "version": ["type": "integer"],
            "state": ["type": "object"],
        ]],
        "Members": ["type": "object", "required": ["room", "version", "members"], "properties": [
            "room": ["type": "string"], "version": ["type": "integer"],
            "members": ["type": "array", "items": ["type": "object", "required": ["id", "user", "data"], "properties": [
                "id": ["type": "string"], "user": ["type": "string"], "data": ["type": "object"],
            ]]],
        ]],
        "History": ["type": "object", "required": ["room", "epoch", "version", "oldest", "steps"], "properties": [
            "room": ["type": "string"], "epoch": ["type": "string"], "version": ["type": "integer"],
            "oldest": ["type": "integer", "description": "The oldest version the store still holds."],
            "steps": ["type": "array", "items": ["type": "object", "required": ["version", "cause", "ops", "paths"], "properties": [
                "version": ["type": "integer"],
                "cause": ["type": "string", "enum": ["action", "refused", "timer", "presence", "viewers", "unknown"]],
                "action": ["type": "string"], "timer": ["type": "integer"], "viewer": ["type": "string"],
                "client": ["type": "string"], "seq": ["type": "integer"], "args": [:], "argsDigest": ["type": "string"],
                "at": ["type": "integer", "description": "Seconds since 1970."], "node": ["type": "string"],
                "ops": ["type": "integer"], "paths": ["type": "array", "items": ["type": "string"]],
                "patch": ["type": "array", "items": ["type": "object"], "description": "The step's JSON Patch operations (with patch=true)."],
            ]]],
        ]],
        "Export": ["type": "object", "required": ["format", "room", "kind", "epoch", "from", "to", "state", "stored", "steps"], "properties": [
            "format": ["type": "string", "const": .string(RoomExportAnswer.format)], "room": ["type": "string"], "kind": ["type": "string"],
            "epoch": ["type": "string"], "from": ["type": "integer"], "to": ["type": "integer"], "state": ["type": "object"], "stored": [:],
            "steps": ["type": "array", "items": ["type": "object", "required": ["version", "cause", "patch"]]],
        ]],
        "Description": ["type": "object", "required": ["kinds"], "properties": ["kinds": ["type": "array", "items": ["type": "object"]]]],
        "RoomList": ["type": "object", "required": ["rooms"], "properties": [
            "rooms": ["type": "array", "items": ["type": "object"]], "node": ["type": "string"],
        ]],
    ]
}
