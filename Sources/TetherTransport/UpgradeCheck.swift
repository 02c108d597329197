/// What a server checks in a WebSocket upgrade request before accepting it, apart from lws's own
/// checks: where the page comes from, and whether the client speaks our subprotocol. Refusals
/// are plain HTTP answers that say what went wrong.
struct UpgradeCheck {
    let subprotocol: String
    let origins: OriginPolicy

    /// lws 4.1 drops, with no answer at all, a request whose subprotocol list it cannot copy
    /// into its 128-byte buffer.
    static let maxOfferedSubprotocolBytes = 127

    /// nil to accept; else the response to send. Arguments are the request's headers (nil when
    /// absent): `Origin`, `Host`, `Sec-WebSocket-Protocol`.
    func refusal(origin: String?, host: String?, offeredSubprotocols: String?) -> HTTPResponse? {
        guard origins.allows(origin: origin, host: host) else {
            return HTTPResponse(status: 403, text: """
                This server does not accept WebSocket connections from pages of \(origin ?? "that origin"): \
                a page may connect only when served by this server itself, or from an origin listed in \
                tetherd's --allowed-origins.

                """, headers: ["X-Content-Type-Options": "nosniff"])
        }
        if let offered = offeredSubprotocols {
            let names = offered.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
            if offered.utf8.count > Self.maxOfferedSubprotocolBytes {
                return badRequest("The Sec-WebSocket-Protocol header is too long (\(offered.utf8.count) bytes, at most \(Self.maxOfferedSubprotocolBytes)); offer \(subprotocol).")
            }
            if !names.isEmpty, !names.contains(subprotocol) {
                return badRequest("This server speaks the WebSocket subprotocol \(subprotocol); the client offered \(names.joined(separator: ", ")). Offer \(subprotocol), or no subprotocol.")
            }
        }
        return nil
    }

    private func badRequest(_ text: String) -> HTTPResponse {
        HTTPResponse(status: 400, text: text + "\n", headers: ["X-Content-Type-Options": "nosniff"])
    }
}
