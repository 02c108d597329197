import TetherContract
import TetherJSON
import TetherProtocol

/// What an API request carries besides its path, read and checked: the action's arguments, its
/// idempotency headers, a resume point, query values. Pure.
enum APIArguments {
    /// The body as the action's `args`: empty is none; otherwise a JSON object.
    static func parse(_ body: [UInt8]) -> Result<JSON?, ProtocolError> {
        guard body.contains(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }) else { return .success(nil) }
        let json: JSON
        do {
            json = try JSONParser().parse(body)
        } catch {
            return .failure(ProtocolError(.badMessage, "the body is not JSON: \(error)"))
        }
        guard case .object = json else {
            return .failure(ProtocolError(.invalidArgs, "the body is the action's arguments: a JSON object"))
        }
        return .success(json)
    }

    /// The characters of an `Idempotency-Key` and a `Tether-Client`, as the OpenAPI document says.
    static let headerPattern = "^[A-Za-z0-9._~:-]{1,64}$"

    /// `Tether-Client` with an integer `Idempotency-Key`: numbered; any other key: opaque (under
    /// the client's name when one is given); no key: none (the client name alone changes nothing).
    static func idempotency(key: String?, client: String?) -> Result<APIExchange.Idempotency?, ProtocolError> {
        for (name, value) in [("Idempotency-Key", key), ("Tether-Client", client)] {
            if let value, !isHeaderToken(value) {
                return .failure(ProtocolError(.badMessage, "a \(name) has 1 to 64 of A-Z a-z 0-9 . _ ~ : -"))
            }
        }
        guard let key else { return .success(nil) }
        guard let client else { return .success(.key(key)) }
        if let seq = Int(key), seq > 0 { return .success(.numbered(client: client, seq: seq)) }
        return .success(.key(client + " " + key))
    }

    static func isHeaderToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= HTTPAPI.maxIdempotencyKeyBytes
            && text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._~:-".unicodeScalars.contains($0)) }
    }

    /// `EPOCH.VERSION`, as the stream's event ids are.
    static func resumePoint(_ text: String) -> ResumePoint? {
        guard let dot = text.lastIndex(of: "."), let version = Int(text[text.index(after: dot)...]), version >= 0 else { return nil }
        let epoch = String(text[..<dot])
        return epoch.isEmpty ? nil : ResumePoint(epoch: epoch, version: version)
    }

    /// The value of `name` in a query string (`a=1&b=2`), as sent.
    static func queryValue(_ name: String, in query: String?) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first.map(String.init) == name { return parts.count > 1 ? String(parts[1]) : "" }
        }
        return nil
    }
}
