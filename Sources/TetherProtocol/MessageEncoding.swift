import TetherJSON

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
