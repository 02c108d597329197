/// What an HTTP API request asks for, read from its method and path alone. Pure, so a table
/// tests it; the OpenAPI document lists the same routes (`APIRoute.documented`).
enum APIRoute: Equatable {
    /// `POST /rooms/{room}/actions/{action}`
    case act(room: String, action: String)
    /// `GET /rooms/{room}`
    case read(room: String)
    /// `GET /rooms/{room}/members`
    case members(room: String)
    /// `GET /rooms/{room}/events`: Server-Sent Events.
    case events(room: String)
    /// `GET /rooms/{room}/history`: who made each kept version (admins).
    case history(room: String)
    /// `GET /rooms/{room}/state?at=V`: the state at an earlier version (admins).
    case stateAt(room: String)
    /// `GET /rooms/{room}/export?from=V&to=W`: the steps between two versions, to replay (admins).
    case export(room: String)
    /// `POST /rooms/{room}/fork`: a new room from the state at a version (admins).
    case fork(room: String)
    /// `GET /kinds`, `GET /kinds/{kind}`
    case kinds(kind: String?)
    /// `GET /openapi.json`
    case openAPI
    /// A path of the API with a method it does not take: 405 with the methods it does.
    case methodNotAllowed(allow: String)

    /// The route of `method` and `path` (percent-decoded by the transport), or nil for a path the
    /// API does not serve (`GET /rooms` and `DELETE /rooms/{room}` are room administration's).
    init?(method: String, path: String) {
        if path == "/openapi.json" {
            self = method == "GET" ? .openAPI : .methodNotAllowed(allow: "GET, HEAD")
            return
        }
        if path == "/kinds" || path.hasPrefix("/kinds/") {
            let kind = path == "/kinds" ? nil : String(path.dropFirst("/kinds/".count))
            guard kind != "" else { return nil }
            self = method == "GET" ? .kinds(kind: kind) : .methodNotAllowed(allow: "GET, HEAD")
            return
        }
        guard path.hasPrefix("/rooms/"), path.count > "/rooms/".count else { return nil }
        let rest = String(path.dropFirst("/rooms/".count))
        // A room name may hold slashes; the API's own segments are matched at the end.
        if let range = rest.range(of: "/actions/", options: .backwards), range.lowerBound != rest.startIndex,
           range.upperBound != rest.endIndex, !rest[range.upperBound...].contains("/") {
            let room = String(rest[..<range.lowerBound]), action = String(rest[range.upperBound...])
            self = method == "POST" ? .act(room: room, action: action) : .methodNotAllowed(allow: "POST")
            return
        }
        if rest.hasSuffix("/fork"), rest.count > "/fork".count {
            self = method == "POST" ? .fork(room: String(rest.dropLast("/fork".count))) : .methodNotAllowed(allow: "POST")
            return
        }
        for (suffix, route) in [("/members", APIRoute.members), ("/events", APIRoute.events), ("/history", APIRoute.history), ("/state", APIRoute.stateAt),
                                ("/export", APIRoute.export)] where rest.hasSuffix(suffix) && rest.count > suffix.count {
            self = method == "GET" ? route(String(rest.dropLast(suffix.count))) : .methodNotAllowed(allow: "GET, HEAD")
            return
        }
        switch method {
        case "GET": self = .read(room: rest)
        case "DELETE": return nil
        default: self = .methodNotAllowed(allow: "GET, HEAD, DELETE")
        }
    }
}
