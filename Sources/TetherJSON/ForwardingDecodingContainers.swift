/// Containers that send every value they decode through one generic method, whatever its type:
/// the probes that record what a `Decodable` type reads (`JSONShape`, the contracts' schema
/// recorder) write each primitive overload once, here.
public protocol ForwardingSingleValueDecodingContainer: SingleValueDecodingContainer {
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T
}

extension ForwardingSingleValueDecodingContainer {
    public func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }
    public func decode(_ type: Bool.Type) throws -> Bool { try decodeValue(type) }
    public func decode(_ type: String.Type) throws -> String { try decodeValue(type) }
    public func decode(_ type: Double.Type) throws -> Double { try decodeValue(type) }
    public func decode(_ type: Float.Type) throws -> Float { try decodeValue(type) }
    public func decode(_ type: Int.Type) throws -> Int { try decodeValue(type) }
    public func decode(_ type: Int8.Type) throws -> Int8 { try decodeValue(type) }
    public func decode(_ type: Int16.Type) throws -> Int16 { try decodeValue(type) }
    public func decode(_ type: Int32.Type) throws -> Int32 { try decodeValue(type) }
    public func decode(_ type: Int64.Type) throws -> Int64 { try decodeValue(type) }
    public func decode(_ type: UInt.Type) throws -> UInt { try decodeValue(type) }
    public func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeValue(type) }
    public func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeValue(type) }
    public func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeValue(type) }
    public func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeValue(type) }
}

/// The same for an unkeyed container: every element through `decodeElement`.
public protocol ForwardingUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    mutating func decodeElement<T: Decodable>(_ type: T.Type) throws -> T
}

extension ForwardingUnkeyedDecodingContainer {
    public mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeElement(type) }
    public mutating func decode(_ type: Bool.Type) throws -> Bool { try decodeElement(type) }
    public mutating func decode(_ type: String.Type) throws -> String { try decodeElement(type) }
    public mutating func decode(_ type: Double.Type) throws -> Double { try decodeElement(type) }
    public mutating func decode(_ type: Float.Type) throws -> Float { try decodeElement(type) }
    public mutating func decode(_ type: Int.Type) throws -> Int { try decodeElement(type) }
    public mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodeElement(type) }
    public mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodeElement(type) }
    public mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodeElement(type) }
    public mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeElement(type) }
    public mutating func decode(_ type: UInt.Type) throws -> UInt { try decodeElement(type) }
    public mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeElement(type) }
    public mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeElement(type) }
    public mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeElement(type) }
    public mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeElement(type) }
}
