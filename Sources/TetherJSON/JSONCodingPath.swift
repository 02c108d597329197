// Coding keys and lazily built coding paths, shared by the value encoder and decoder.

struct _JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }

    static let `super` = _JSONKey(stringValue: "super")
}

/// A coding path built only when someone asks for it: the path of the container plus one more
/// step. Successful decoding of flat values never allocates a path.
struct _LazyPath {
    enum Tail {
        case none
        case key(any CodingKey)
        case index(Int)
    }

    let base: [any CodingKey]
    let tail: Tail

    var array: [any CodingKey] {
        switch tail {
        case .none: return base
        case .key(let key): return base + [key]
        case .index(let index): return base + [_JSONKey(index: index)]
        }
    }

    func appending(_ key: any CodingKey) -> _LazyPath {
        if case .none = tail { return _LazyPath(base: base, tail: .key(key)) }
        return _LazyPath(base: array, tail: .key(key))
    }

    func appending(index: Int) -> _LazyPath {
        if case .none = tail { return _LazyPath(base: base, tail: .index(index)) }
        return _LazyPath(base: array, tail: .index(index))
    }
}

/// "args.items[2].title"; empty for the root.
func _renderCodingPath(_ path: [any CodingKey]) -> String {
    var out = ""
    for key in path {
        if let index = key.intValue {
            out += "[\(index)]"
        } else {
            if !out.isEmpty { out += "." }
            out += key.stringValue
        }
    }
    return out
}

func _at(_ path: [any CodingKey]) -> String {
    let rendered = _renderCodingPath(path)
    return rendered.isEmpty ? "" : " at \(rendered)"
}

func _typeMismatch(_ type: Any.Type, expected: String, got value: JSON, path: [any CodingKey]) -> DecodingError {
    if value.isNull {
        return DecodingError.valueNotFound(
            type, .init(codingPath: path, debugDescription: "expected \(expected)\(_at(path)), got null"))
    }
    return DecodingError.typeMismatch(
        type, .init(codingPath: path, debugDescription: "expected \(expected)\(_at(path)), got \(value.typeName)"))
}
