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
