// Unboxing the leaf types, shared by all containers. Paths are autoclosures: built only for errors.
extension _JSONValueDecoder {
    static func unboxBool(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let b) = value else { throw _typeMismatch(Bool.self, expected: "boolean", got: value, path: path()) }
        return b
    }

    static func unboxString(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let s) = value else { throw _typeMismatch(String.self, expected: "string", got: value, path: path()) }
        return s
    }

    static func unboxDouble(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: throw _typeMismatch(Double.self, expected: "number", got: value, path: path())
        }
    }

    static func unboxFloat(_ value: JSON, path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let d = try unboxDouble(value, path: path())
        let f = Float(d)
        if d.isFinite && !f.isFinite {
            let path = path()
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "number \(d)\(_at(path)) does not fit in Float"))
        }
        return f
    }

    static func unboxInteger<T: FixedWidthInteger>(
        _ type: T.Type, _ value: JSON, path: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        switch value {
        case .int(let i):
            if let exact = T(exactly: i) { return exact }
            let path = path()
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "number \(i)\(_at(path)) does not fit in \(T.self)"))
        case .double(let d):
            // An integer literal beyond Int arrives as a double, rounded: -2^63-1 reads as
            // -2^63. Only a double strictly inside Int's range is taken, so none is changed.
            if d > -0x1p63, d < 0x1p63, let exact = T(exactly: d) { return exact }
            let path = path()
            if d.isFinite && d == d.rounded(.towardZero) {
                // Not the digits as sent: a number beyond 64 bits arrives as a double (1e+20).
                let (low, high) = (Int(clamping: T.min), Int(clamping: T.max))
                let bound = d > 0 ? "too large for an integer (at most \(high))" : "too small for an integer (at least \(low))"
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "the number\(_at(path)) is \(bound)"))
            }
            throw DecodingError.typeMismatch(
                T.self, .init(codingPath: path, debugDescription: "expected integer\(_at(path)), got \(d)"))
        default:
            throw _typeMismatch(T.self, expected: "integer", got: value, path: path())
        }
    }
}
