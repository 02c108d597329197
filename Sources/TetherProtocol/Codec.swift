import TetherJSON

// MARK: - Decoding

/// The members of a received message object, read with clear errors for wrong types.
/// Unknown members are ignored.
struct MessageFields {
    let object: [String: JSON]
    /// Echoed in errors about this message when it could be read.
    let id: Int?
    let room: String?

    init(_ object: [String: JSON]) {
        self.object = object
        self.id = object["id"]?.intValue
        self.room = object["room"]?.stringValue
    }

    func fail(_ code: ErrorCode, _ message: String) -> ProtocolError {
        ProtocolError(code, message, id: id, room: room)
    }

    private func wrongType(_ key: String, _ expected: String, _ value: JSON) -> ProtocolError {
        fail(.badMessage, "field \"\(key)\" must be \(expected), got \(value.typeName)")
    }

    func string(_ key: String) throws(ProtocolError) -> String {
        guard let value = object[key] else { throw fail(.badMessage, "missing field \"\(key)\"") }
        guard case .string(let string) = value else { throw wrongType(key, "a string", value) }
        return string
    }

    func optionalString(_ key: String) throws(ProtocolError) -> String? {
        guard let value = object[key], !value.isNull else { return nil }
        guard case .string(let string) = value else { throw wrongType(key, "a string", value) }
        return string
    }

    func int(_ key: String) throws(ProtocolError) -> Int {
        guard let value = object[key] else { throw fail(.badMessage, "missing field \"\(key)\"") }
        guard let int = value.intValue else { throw wrongType(key, "an integer", value) }
        return int
    }

    func optionalInt(_ key: String) throws(ProtocolError) -> Int? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let int = value.intValue else { throw wrongType(key, "an integer", value) }
        return int
    }

    /// A flag: absent (or null) is false; anything but a boolean is `bad_message`.
    func flag(_ key: String) throws(ProtocolError) -> Bool {
        guard let value = object[key], !value.isNull else { return false }
        guard case .bool(let flag) = value else { throw wrongType(key, "a boolean", value) }
        return flag
    }

    /// Presence data: absent (or null), or an object; anything else is `invalid_args`.
    func optionalPresenceData(_ key: String) throws(ProtocolError) -> JSON? {
        guard let value = object[key], !value.isNull else { return nil }
        guard case .object = value else { throw fail(.invalidArgs, "field \"\(key)\" must be an object, got \(value.typeName)") }
        return value
    }

    func json(_ key: String) throws(ProtocolError) -> JSON {
        guard let value = object[key] else { throw fail(.badMessage, "missing field \"\(key)\"") }
        return value
    }
}

extension MessageFields {
    /// Parses a frame into its members and `type`; anything else is `bad_message`.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> (type: String, fields: MessageFields) {
        let json: JSON
        do {
            json = try JSONParser().parse(bytes)
        } catch {
            throw ProtocolError(.badMessage, "not valid JSON: \(error)")
        }
        return try parse(json)
    }

    static func parse(_ json: JSON) throws(ProtocolError) -> (type: String, fields: MessageFields) {
        guard case .object(let object) = json else {
            throw ProtocolError(.badMessage, "a message is a JSON object, got \(json.typeName)")
        }
        let fields = MessageFields(object)
        guard let type = object["type"] else { throw fields.fail(.badMessage, "missing field \"type\"") }
        guard case .string(let name) = type else { throw fields.fail(.badMessage, "field \"type\" must be a string, got \(type.typeName)") }
        return (name, fields)
    }
}

extension ClientMessage {
    /// Decodes a received frame. Never traps; every failure is a `ProtocolError` carrying the
    /// code to send back and, when readable, the message's `id` and `room`.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> ClientMessage {
        let (type, fields) = try MessageFields.parse(bytes)
        return try decode(type: type, fields)
    }

    public static func decode(_ bytes: [UInt8]) throws(ProtocolError) -> ClientMessage {
        do {
            return try bytes.withUnsafeBytes { raw throws(ProtocolError) in try decode(raw) }
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.internal, "\(error)")
        }
    }

    public init(json: JSON) throws(ProtocolError) {
        let (type, fields) = try MessageFields.parse(json)
        self = try Self.decode(type: type, fields)
    }

    private static func decode(type: String, _ fields: MessageFields) throws(ProtocolError) -> ClientMessage {
        switch type {
        case "hello":
            let client = try fields.string("client")
            let user = try fields.optionalString("user")
            for (name, value) in [("client", client), ("user", user)] {
                guard let value else { continue }
                guard ClientMessage.isIdentity(value) else {
                    throw fields.fail(.badMessage, "field \"\(name)\" must be 16 to 64 characters of A-Z, a-z, 0-9, - and _")
                }
            }
            return .hello(client: client, user: user)
        case "join":
            var since: ResumePoint?
            if let value = fields.object["since"], !value.isNull {
                guard case .object(let object) = value else {
                    throw fields.fail(.badMessage, "field \"since\" must be an object {epoch, version}, got \(value.typeName)")
                }
                let inner = MessageFields(object)
                do {
                    since = ResumePoint(epoch: try inner.string("epoch"), version: try inner.int("version"))
                } catch {
                    throw fields.fail(.badMessage, "in \"since\": \(error.message)")
                }
            }
            return .join(room: try fields.string("room"), id: try fields.optionalInt("id"), since: since, token: try fields.optionalString("token"),
                         presence: try fields.optionalPresenceData("presence"), watchPresence: try fields.flag("watchPresence"))
        case "leave":
            return .leave(room: try fields.string("room"), id: try fields.optionalInt("id"))
        case "presence":
            let room = try fields.string("room")
            guard let data = try fields.optionalPresenceData("data") else { throw fields.fail(.invalidArgs, "missing field \"data\" (an object)") }
            return .presence(room: room, data: data, id: try fields.optionalInt("id"))
        case "describe":
            return .describe(kind: try fields.optionalString("kind"), id: try fields.optionalInt("id"))
        case "action":
            let id = try fields.int("id")
            let room = try fields.string("room")
            let name = try fields.string("name")
            var args: JSON?
            if let value = fields.object["args"], !value.isNull {
                guard case .object = value else {
                    throw fields.fail(.invalidArgs, "field \"args\" must be an object, got \(value.typeName)")
                }
                args = value
            }
            let seq = try fields.optionalInt("seq")
            if let seq, seq < 1 { throw fields.fail(.badMessage, "field \"seq\" (the action's number) must be at least 1, got \(seq)") }
            return .action(room: room, name: name, args: args, id: id, seq: seq)
        default:
            throw fields.fail(.badMessage, "unknown message type \"\(type)\"")
        }
    }
}

extension ServerMessage {
    /// Decodes a frame from the server (clients use this). Never traps.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> ServerMessage {
        let (type, fields) = try MessageFields.parse(bytes)
        return try decode(type: type, fields)
    }

    public static func decode(_ bytes: [UInt8]) throws(ProtocolError) -> ServerMessage {
        do {
            return try bytes.withUnsafeBytes { raw throws(ProtocolError) in try decode(raw) }
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.internal, "\(error)")
        }
    }

    public init(json: JSON) throws(ProtocolError) {
        let (type, fields) = try MessageFields.parse(json)
        self = try Self.decode(type: type, fields)
    }

    private static func decode(type: String, _ fields: MessageFields) throws(ProtocolError) -> ServerMessage {
        switch type {
        case "hello":
            return .hello(protocolVersion: try fields.int("protocol"), server: try fields.string("server"), session: try fields.string("session"))
        case "snapshot":
            return .snapshot(room: try fields.string("room"), epoch: try fields.string("epoch"), version: try fields.int("version"), state: try fields.json("state"))
        case "patch":
            let ops = try fields.json("ops")
            let operations: [PatchOperation]
            do {
                operations = try JSONPatch.decode(ops)
            } catch {
                throw fields.fail(.badMessage, "field \"ops\": \(error)")
            }
            return .patch(room: try fields.string("room"), epoch: try fields.string("epoch"), from: try fields.int("from"), version: try fields.int("version"), operations: operations)
        case "presence":
            return .presence(room: try fields.string("room"), version: try fields.int("version"), members: try fields.json("members"))
        case "presence_patch":
            let ops = try fields.json("ops")
            let operations: [PatchOperation]
            do {
                operations = try JSONPatch.decode(ops)
            } catch {
                throw fields.fail(.badMessage, "field \"ops\": \(error)")
            }
            return .presencePatch(room: try fields.string("room"), from: try fields.int("from"), version: try fields.int("version"), operations: operations)
        case "ack":
            return .ack(id: try fields.int("id"), room: try fields.string("room"), version: try fields.optionalInt("version"))
        case "description":
            let kinds = try fields.json("kinds")
            guard case .array(let items) = kinds else { throw fields.fail(.badMessage, "field \"kinds\" must be an array") }
            var decoded: [KindDescription] = []
            for item in items { decoded.append(try KindDescription(json: item, fields)) }
            return .description(id: try fields.optionalInt("id"), kinds: decoded)
        case "error":
            let codeName = try fields.string("code")
            guard let code = ErrorCode(rawValue: codeName) else { throw fields.fail(.badMessage, "unknown error code \"\(codeName)\"") }
            return .error(ProtocolError(code, try fields.string("message"), id: try fields.optionalInt("id"), room: try fields.optionalString("room"),
                                        applied: ProtocolError.Applied(json: fields.object["applied"]), reason: try fields.optionalString("reason")))
        default:
            throw fields.fail(.badMessage, "unknown message type \"\(type)\"")
        }
    }
}

// MARK: - Encoding

/// Writes one message object with a fixed member order (`type` first) straight into bytes.
/// Member names are ASCII constants and need no escaping.
struct MessageWriter {
    var bytes: [UInt8]
    private var first = true

    init(type: String, capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
        begin(type)
    }

    /// Starts a message in `buffer`'s storage: the caller swaps its buffer into `bytes` and back,
    /// so a long-lived scratch buffer is reused without a copy or a reallocation.
    init(reusing buffer: inout [UInt8], type: String) {
        bytes = []
        swap(&bytes, &buffer)
        bytes.removeAll(keepingCapacity: true)
        begin(type)
    }

    private mutating func begin(_ type: String) {
        bytes.append(contentsOf: #"{"type":""#.utf8)
        bytes.append(contentsOf: type.utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func key(_ name: StaticString) {
        bytes.append(contentsOf: #",""#.utf8)
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: #"":"#.utf8)
    }

    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        JSONWriter.writeString(value, to: &bytes)
    }

    mutating func field(_ name: StaticString, _ value: Int) {
        key(name)
        JSONWriter.writeInt(value, to: &bytes)
    }

    mutating func field(_ name: StaticString, _ value: JSON) {
        key(name)
        value.write(to: &bytes)
    }

    mutating func optionalField(_ name: StaticString, _ value: Int?) {
        if let value { field(name, value) }
    }

    mutating func optionalField(_ name: StaticString, _ value: String?) {
        if let value { field(name, value) }
    }

    /// Opens a member whose value the caller writes itself (e.g. pre-encoded operations).
    mutating func rawField(_ name: StaticString) {
        key(name)
    }

    mutating func close() {
        bytes.append(UInt8(ascii: "}"))
    }

    consuming func finish() -> [UInt8] {
        close()
        return bytes
    }
}

extension ClientMessage {
    public func encoded() -> [UInt8] {
        switch self {
        case .join(let room, let id, let since, let token, let presence, let watchPresence):
            var writer = MessageWriter(type: "join")
            writer.field("room", room)
            writer.optionalField("id", id)
            if let since { writer.field("since", ["epoch": .string(since.epoch), "version": .int(since.version)]) }
            writer.optionalField("token", token)
            if let presence { writer.field("presence", presence) }
            if watchPresence { writer.field("watchPresence", .bool(true)) }
            return writer.finish()
        case .presence(let room, let data, let id):
            var writer = MessageWriter(type: "presence")
            writer.field("room", room)
            writer.field("data", data)
            writer.optionalField("id", id)
            return writer.finish()
        case .leave(let room, let id):
            var writer = MessageWriter(type: "leave")
            writer.field("room", room)
            writer.optionalField("id", id)
            return writer.finish()
        case .action(let room, let name, let args, let id, let seq):
            var writer = MessageWriter(type: "action")
            writer.field("room", room)
            writer.field("name", name)
            if let args { writer.field("args", args) }
            writer.field("id", id)
            writer.optionalField("seq", seq)
            return writer.finish()
        case .describe(let kind, let id):
            var writer = MessageWriter(type: "describe")
            writer.optionalField("kind", kind)
            writer.optionalField("id", id)
            return writer.finish()
        case .hello(let client, let user):
            var writer = MessageWriter(type: "hello")
            writer.field("client", client)
            writer.optionalField("user", user)
            return writer.finish()
        }
    }

    /// A `client` or `user` of a `hello`: 16 to 64 characters of the base64url alphabet.
    public static func isIdentity(_ value: String) -> Bool {
        (16...64).contains(value.utf8.count)
            && value.utf8.allSatisfy { $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// A fresh `client` id: 128 random bits, base64url (22 characters).
    public static func makeClientID() -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        // 22 characters of 6 bits hold 132 bits: at least 128 of them random.
        return String(decoding: (0..<22).map { _ in alphabet[Int(generator.next(upperBound: UInt8(64)))] }, as: UTF8.self)
    }
}

extension ServerMessage {
    public func encoded() -> [UInt8] {
        switch self {
        case .hello(let version, let server, let session):
            var writer = MessageWriter(type: "hello")
            writer.field("protocol", version)
            writer.field("server", server)
            writer.field("session", session)
            return writer.finish()
        case .snapshot(let room, let epoch, let version, let state):
            var writer = MessageWriter(type: "snapshot")
            writer.field("room", room)
            writer.field("epoch", epoch)
            writer.field("version", version)
            writer.field("state", state)
            return writer.finish()
        case .patch(let room, let epoch, let from, let version, let operations):
            var encoded: [UInt8] = []
            JSONPatch.writeOperations(operations, to: &encoded)
            return Self.encodePatch(room: room, epoch: epoch, from: from, version: version, encodedOperations: encoded)
        case .presence(let room, let version, let members):
            var writer = MessageWriter(type: "presence")
            writer.field("room", room)
            writer.field("version", version)
            writer.field("members", members)
            return writer.finish()
        case .presencePatch(let room, let from, let version, let operations):
            var writer = MessageWriter(type: "presence_patch")
            writer.field("room", room)
            writer.field("from", from)
            writer.field("version", version)
            writer.rawField("ops")
            writer.bytes.append(UInt8(ascii: "["))
            JSONPatch.writeOperations(operations, to: &writer.bytes)
            writer.bytes.append(UInt8(ascii: "]"))
            return writer.finish()
        case .ack(let id, let room, let version):
            var writer = MessageWriter(type: "ack")
            writer.field("id", id)
            writer.field("room", room)
            writer.optionalField("version", version)
            return writer.finish()
        case .description(let id, let kinds):
            var writer = MessageWriter(type: "description")
            writer.optionalField("id", id)
            writer.field("kinds", .array(kinds.map(\.json)))
            return writer.finish()
        case .error(let error):
            var writer = MessageWriter(type: "error")
            writer.field("code", error.code.rawValue)
            writer.field("message", error.message)
            writer.optionalField("id", error.id)
            writer.optionalField("room", error.room)
            writer.field("applied", error.applied.json)
            writer.optionalField("reason", error.reason)
            return writer.finish()
        }
    }

    /// A `patch` frame around operations that were encoded already (comma-separated, no
    /// brackets, as `JSONPatch.writeOperations` writes them). The server encodes each version's
    /// operations once and builds merged patches by concatenating such runs.
    public static func encodePatch<Operations: Collection<UInt8>>(
        room: String, epoch: String, from: Int, version: Int, encodedOperations: Operations
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96 + room.utf8.count + epoch.utf8.count + encodedOperations.count)
        writePatch(room: room, epoch: epoch, from: from, version: version, to: &bytes) { $0.append(contentsOf: encodedOperations) }
        return bytes
    }

    /// Writes a `patch` frame into `buffer` (replacing its contents, reusing its storage);
    /// `writeOperations` appends the comma-separated encoded operations.
    public static func writePatch(
        room: String, epoch: String, from: Int, version: Int, to buffer: inout [UInt8],
        writeOperations: (inout [UInt8]) -> Void
    ) {
        var writer = MessageWriter(reusing: &buffer, type: "patch")
        writer.field("room", room)
        writer.field("epoch", epoch)
        writer.field("from", from)
        writer.field("version", version)
        writer.rawField("ops")
        writer.bytes.append(UInt8(ascii: "["))
        writeOperations(&writer.bytes)
        writer.bytes.append(UInt8(ascii: "]"))
        writer.close()
        swap(&writer.bytes, &buffer)
    }
}

// MARK: - Kind descriptions

extension KindDescription {
    /// `{"name": "counter", "scope": "shared", "actions": [{"name": "increment", "args": {...}}]}`
    /// `schema` and `fingerprint` are written only when set, so a kind without a contract is
    /// described exactly as before they existed.
    public var json: JSON {
        var members: [String: JSON] = [
            "name": .string(name), "scope": .string(scope),
            "actions": .array(actions.map { ["name": .string($0.name), "args": JSONShape.fieldsJSON($0.arguments)] }),
        ]
        if let schema { members["schema"] = schema }
        if let fingerprint { members["fingerprint"] = .string(fingerprint) }
        return .object(members)
    }

    init(json: JSON, _ message: MessageFields) throws(ProtocolError) {
        guard case .object(let object) = json else { throw message.fail(.badMessage, "a kind description is an object") }
        let fields = MessageFields(object)
        name = try fields.string("name")
        scope = try fields.string("scope")
        guard case .array(let actionItems)? = object["actions"] else { throw message.fail(.badMessage, "kind \(name) has no \"actions\" array") }
        actions = []
        for item in actionItems {
            guard case .object(let action) = item, case .string(let actionName)? = action["name"] else {
                throw message.fail(.badMessage, "an action of \(name) has no name")
            }
            guard case .object(let args)? = action["args"] ?? .object([:]) else {
                throw message.fail(.badMessage, "\"args\" of \(name).\(actionName) is not an object")
            }
            let arguments = args.keys.sorted().map { key in
                JSONShape.Field(name: key, shape: JSONShape(described: args[key]!), isOptional: args[key]?["optional"]?.boolValue ?? false)
            }
            actions.append(Action(name: actionName, arguments: arguments))
        }
        switch object["schema"] {
        case nil: schema = nil
        case .object?: schema = object["schema"]
        default: throw message.fail(.badMessage, "\"schema\" of \(name) is not an object")
        }
        switch object["fingerprint"] {
        case nil: fingerprint = nil
        case .string(let text)?: fingerprint = text
        default: throw message.fail(.badMessage, "\"fingerprint\" of \(name) is not a string")
        }
    }
}
