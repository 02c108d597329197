import TetherProtocol

/// The server's `unauthorized` refusals speak to any WebSocket or HTTP client ("join with a
/// token", "send it as Authorization: Bearer"); a terminal user needs the flags that give one.
enum AuthAdvice {
    static let howToGive = "--token-file FILE or $TETHER_TOKEN (tetherd token makes one)"

    /// `error`'s message for a terminal user: unchanged unless it is `unauthorized`.
    static func message(for error: ProtocolError) -> String {
        guard error.code == .unauthorized else { return error.message }
        let room = error.room ?? "this room"
        // Only a client without a token hears these two (tether send joins first when it has one).
        if error.message.hasPrefix("this server needs a token") || error.message.contains("with a token before acting") {
            return "\(room) needs an access token: give one with \(howToGive)"
        }
        return "\(error.message); give another with \(howToGive)"
    }

    /// A refused `tether rooms` (HTTP 401): what to give, with or without a token already.
    static func roomAdministration(status: Int, serverReason: String, hadToken: Bool) -> String {
        guard status == 401 else { return serverReason }
        let admin = "--token-file FILE or $TETHER_TOKEN (tetherd token --admin makes one)"
        return hadToken ? "\(serverReason); it needs a valid token with the admin claim: give one with \(admin)"
            : "this server needs a token with the admin claim: give one with \(admin)"
    }
}
