/// A JSON value: the state of every ViewModel and the payload of every message.
///
/// Numbers keep integers apart from doubles so counters and versions stay exact, but compare
/// the way JSON does: `.int(1) == .double(1.0)`. Objects are unordered; the writer emits their
/// keys sorted, so one value always encodes to the same bytes.
public enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])
}

extension JSON: Equatable {
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)): return b.isExactInteger(a)
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a == b
        default: return false
        }
    }
}

extension Double {
    /// True when this double is exactly the integer `value` (no rounding on either side).
    fileprivate func isExactInteger(_ value: Int) -> Bool {
        guard let exact = Int(exactly: self) else { return false }
        return exact == value
    }
}

extension JSON: Hashable {
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(1); hasher.combine(b)
        case .int(let i): hasher.combine(2); hasher.combine(i)
        case .double(let d):
            // Integral doubles hash like the equal `.int`, keeping Hashable consistent with ==.
            if let i = Int(exactly: d) { hasher.combine(2); hasher.combine(i) } else { hasher.combine(3); hasher.combine(d) }
        case .string(let s): hasher.combine(4); hasher.combine(s)
        case .array(let a): hasher.combine(5); hasher.combine(a)
        case .object(let o): hasher.combine(6); hasher.combine(o)
        }
    }
}

// MARK: - Literals

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

// MARK: - Accessors

extension JSON {
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }

    /// The value as an integer, when it is one exactly (an integral double counts).
    public var intValue: Int? {
        switch self {
        case .int(let i): return i
        case .double(let d): return Int(exactly: d)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var arrayValue: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectValue: [String: JSON]? { if case .object(let o) = self { return o } else { return nil } }

    /// Member of an object, or nil for a missing key or a non-object.
    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// Element of an array, or nil when out of bounds or not an array.
    public subscript(index: Int) -> JSON? {
        if case .array(let a) = self, a.indices.contains(index) { return a[index] }
        return nil
    }

    /// The JSON type name, for error messages ("expected string, got number").
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

extension JSON {
    /// Moves an object's members out, leaving `.null`, so the caller can edit them without a
    /// copy-on-write copy and put them back. (Binding the payload in a `switch` on `self` keeps a
    /// second reference alive and copies the whole container on every edit.)
    public mutating func takeObject() -> [String: JSON]? {
        guard case .object(let object) = self else { return nil }
        self = .null
        return object
    }

    /// Like `takeObject()`, for an array's elements.
    public mutating func takeArray() -> [JSON]? {
        guard case .array(let array) = self else { return nil }
        self = .null
        return array
    }
}
