import TetherJSON

/// A JSON object written member by member, in order.
struct JSONLine {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    private mutating func key(_ name: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        JSONWriter.writeString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func add(_ name: String, _ value: String?) {
        key(name)
        if let value { JSONWriter.writeString(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    mutating func add(_ name: String, _ value: Int?) {
        key(name)
        bytes.append(contentsOf: (value.map(String.init) ?? "null").utf8)
    }

    mutating func add(_ name: String, _ value: Double?) {
        key(name)
        guard let value, value.isFinite else { bytes.append(contentsOf: "null".utf8); return }
        bytes.append(contentsOf: String(format: "%.10g", value).utf8)
    }

    mutating func add(_ name: String, _ values: [Int]) {
        key(name)
        bytes.append(contentsOf: ("[" + values.map(String.init).joined(separator: ",") + "]").utf8)
    }

    mutating func add(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    var text: String { String(decoding: bytes + [UInt8(ascii: "}")], as: UTF8.self) }
}
