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

    /// `Tether-Client` + an integer `Idempotency-Key`, or an opaque key alone, or neither.
    static func idempotency(key: String?, client: String?) -> Result<APIExchange.Idempotency?, ProtocolError> {
        guard let key else {
            if client != nil { return .failure(ProtocolError(.badMessage, "Tether-Client numbers actions: send Idempotency-Key with it")) }
            return .success(nil)
        }
        guard !key.isEmpty, key.utf8.count <= HTTPAPI.maxIdempotencyKeyBytes,
              key.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.~:".unicodeScalars.contains($0) })
        else {
            return .failure(ProtocolError(.badMessage, "an Idempotency-Key has 1 to \(HTTPAPI.maxIdempotencyKeyBytes) of A-Z a-z 0-9 - _ . ~ :"))
        }
        guard let client else { return .success(.key(key)) }
        guard !client.isEmpty, client.utf8.count <= 64, !client.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return .failure(ProtocolError(.badMessage, "a Tether-Client has 1 to 64 bytes and no control characters"))
        }
        guard let seq = Int(key), seq > 0 else {
            return .failure(ProtocolError(.badMessage, "with Tether-Client, the Idempotency-Key is the action's number, a positive integer"))
        }
        return .success(.numbered(client: client, seq: seq))
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
