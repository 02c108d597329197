import TetherJSON
import TetherProtocol
import TetherTransport

/// The API's one error shape, the protocol's `error` message without `type` and `id`, so a
/// client has one error model for both doors; and each code's HTTP status.
enum APIError {
    static func status(of error: ProtocolError) -> Int {
        switch error.code {
        case .badMessage: 400
        case .unknownRoom, .unknownAction: 404
        case .invalidArgs: 422
        // A missing or bad token is answered 401 before a session starts (`HTTPAPI.admit`).
        case .unauthorized: 403
        case .rateLimited: 429
        case .tooLarge: 413
        case .unavailable: 503
        case .internal: 500
        // A read whose room was deleted meanwhile: there is no such room now.
        case .roomDeleted: 404
        case .staleAction: 409
        }
    }

    static func body(_ error: ProtocolError) -> JSON {
        var fields: [String: JSON] = ["code": .string(error.code.rawValue), "message": .string(error.message),
                                      "applied": error.applied.json]
        if let room = error.room { fields["room"] = .string(room) }
        if let reason = error.reason { fields["reason"] = .string(reason) }
        return .object(fields)
    }

    static func response(_ error: ProtocolError, status: Int? = nil) -> HTTPResponse {
        let status = status ?? self.status(of: error)
        var headers: [String: String] = [:]
        switch status {
        case 401: headers["WWW-Authenticate"] = "Bearer realm=\"tetherd\""
        case 429: headers["Retry-After"] = "1"
        case 503: headers["Retry-After"] = "1"
        default: break
        }
        return json(status, body(error), headers: headers)
    }

    static func json(_ status: Int, _ body: JSON, headers: [String: String] = [:]) -> HTTPResponse {
        var headers = headers
        headers["Cache-Control"] = "no-store"
        headers["X-Content-Type-Options"] = "nosniff"
        return HTTPResponse(status: status, contentType: "application/json", body: body.encoded(), headers: headers)
    }
}
