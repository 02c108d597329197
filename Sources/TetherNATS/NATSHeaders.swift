import CNATS

/// NATS message headers: an ordered list of fields; a name may repeat. Names are matched exactly
/// (case-sensitive), as the C client and nats-server do (`Nats-Msg-Id`, `Nats-Sequence`...).
public struct NATSHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public private(set) var fields: [Field] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    public var isEmpty: Bool { fields.isEmpty }

    /// The first value of `name`; setting replaces every value of `name` (nil removes them).
    public subscript(name: String) -> String? {
        get { fields.first { $0.name == name }?.value }
        set {
            fields.removeAll { $0.name == name }
            if let newValue { fields.append(Field(name: name, value: newValue)) }
        }
    }

    public func values(_ name: String) -> [String] {
        fields.filter { $0.name == name }.map(\.value)
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Reads the headers of a C message (they are copied).
    init(copying message: OpaquePointer) {
        var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
        var keyCount: Int32 = 0
        guard natsMsgHeader_Keys(message, &keys, &keyCount) == NATS_OK, let keys else { return }
        defer { free(keys) }
        for index in 0..<Int(keyCount) {
            guard let key = keys[index] else { continue }
            var values: UnsafeMutablePointer<UnsafePointer<CChar>?>?
            var valueCount: Int32 = 0
            guard natsMsgHeader_Values(message, key, &values, &valueCount) == NATS_OK, let values else { continue }
            let name = String(cString: key)
            for valueIndex in 0..<Int(valueCount) {
                if let value = values[valueIndex] { fields.append(Field(name: name, value: String(cString: value))) }
            }
            free(values)
        }
    }

    /// Parses a raw header block, `NATS/1.0[ status]\r\nName: value\r\n...\r\n\r\n` (how
    /// JetStream's message-get API returns stored headers).
    init(parsing block: [UInt8]) {
        let text = String(decoding: block, as: UTF8.self)
        for line in text.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            fields.append(Field(name: name, value: String(value)))
        }
    }

    /// Sets these headers on a C message.
    func apply(to message: OpaquePointer) throws(NATSError) {
        for field in fields {
            let status = natsMsgHeader_Add(message, field.name, field.value)
            guard status == NATS_OK else { throw .library("natsMsgHeader_Add(\(field.name))", status) }
        }
    }
}
